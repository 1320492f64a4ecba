"""``manage.py verify_sources``: recompute every binding from the stored
messages (SPEC §5 source digest) and print the jobs whose source no longer
matches. Also reports planned segments whose stored current digest disagrees
with the recomputation (it never should)."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from compaction.digest import digest_input, source_digest
from compaction.models import CompactionJob
from conversations.models import Conversation, Pair, Segment


def _recomputed_digests(conversation) -> dict[tuple[int, int], tuple[str, list[str]]]:
    pairs = list(
        Pair.objects.filter(conversation=conversation).order_by("index").select_related("user_message", "assistant_message")
    )
    out = {}
    for start in range(0, len(pairs) - 9, 10):
        members = pairs[start:start + 10]
        digest = source_digest(
            digest_input(p.index, p.user_message.external_id, p.user_message.content,
                         p.assistant_message.external_id, p.assistant_message.content)
            for p in members
        )
        ids = [x for p in members for x in (p.user_message.external_id, p.assistant_message.external_id)]
        out[(start, start + 9)] = (digest, ids)
    return out


class Command(BaseCommand):
    help = "Recompute every source binding and print the stale ones."

    def handle(self, *args, **options):
        checked = stale = drift = 0
        for conversation in Conversation.objects.order_by("pk").iterator():
            jobs = list(CompactionJob.objects.filter(conversation=conversation).order_by("from_pair", "pk"))
            segments = list(Segment.objects.filter(conversation=conversation))
            if not jobs and not segments:
                continue
            now = _recomputed_digests(conversation)
            planned = {(s.from_pair, s.to_pair) for s in segments}
            for segment in segments:
                recomputed = now.get((segment.from_pair, segment.to_pair))
                if recomputed is None or recomputed[0] != segment.digest:
                    drift += 1
                    self.stdout.write(f"SEGMENT-DRIFT {conversation.scope}/{conversation.external_id} "
                                      f"[{segment.from_pair}-{segment.to_pair}] stored={segment.digest[:12]} "
                                      f"recomputed={recomputed[0][:12] if recomputed else None}")
            for job in jobs:
                checked += 1
                rng = (job.from_pair, job.to_pair)
                current = now.get(rng) if rng in planned else None
                if current is not None and current[0] == job.source_digest and current[1] == job.message_ids:
                    continue
                stale += 1
                why = "range no longer planned" if current is None else "digest differs"
                self.stdout.write(
                    f"STALE job {job.pk} {conversation.scope}/{conversation.external_id} [{job.from_pair}-{job.to_pair}] "
                    f"state={job.state} bound={job.source_digest[:12]} now={current[0][:12] if current else None} ({why})"
                )
        self.stdout.write(f"{checked} binding(s) checked, {stale} stale, {drift} segment digest(s) out of date")
