"""``manage.py check_drift [--conversation ID]``: recompute the drift
report of every rolling hand-off generation (SPEC §8, §11) — or those of
one conversation (its id or external id) — and replace each stored report
with the recomputed one. Idempotent: a second run changes nothing (a
finding that still stands keeps its row, and the verdicts citing it).
Generations written before drift reports existed get theirs this way. A
generation whose chain broke at or above it (a message of its material or
an ancestor's changed) keeps the report computed when it was written: what
it was written from is no longer what is stored."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from compaction.bindings.handoff import handoff_generations
from compaction.drift.services import drift_report_refresh
from conversations.models import Conversation


class Command(BaseCommand):
    help = "Recompute and store the drift findings of rolling hand-off generations."

    def add_arguments(self, parser):
        parser.add_argument("--conversation", help="a conversation id (or its external id)")

    def handle(self, *args, conversation=None, **options):
        generations = handoff_generations().order_by("conversation_id", "number")
        if conversation is not None:
            generations = generations.filter(conversation=self._conversation(conversation))
        checked = changed = findings = skipped = 0
        for generation in generations.only("id", "conversation_id", "number", "from_pair", "to_pair", "parent_id",
                                           "text", "job_id", "source_digest").iterator(chunk_size=50):
            outcome = drift_report_refresh(generation=generation)
            if outcome is None:
                skipped += 1
                self.stdout.write(f"STALE conversation {generation.conversation_id} generation "
                                  f"{generation.number}: its source changed since it was written; "
                                  f"report left as it was")
                continue
            kept, moved = outcome
            checked += 1
            changed += moved
            count = generation.drift_findings.count()
            findings += count
            if moved:
                self.stdout.write(f"CHANGED conversation {generation.conversation_id} generation "
                                  f"{generation.number}: {count} finding(s), {moved} added or removed")
        self.stdout.write(f"checked {checked} generation(s): {findings} finding(s), {changed} changed, "
                          f"{skipped} stale left as they were")

    @staticmethod
    def _conversation(ident):
        found = Conversation.objects.filter(pk=int(ident)) if str(ident).isdigit() else Conversation.objects.none()
        if not found.exists():
            found = Conversation.objects.filter(external_id=ident)
        if found.count() != 1:
            raise CommandError(f"no single conversation with id or external id {ident!r}")
        return found.get()
