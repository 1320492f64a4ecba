"""``manage.py verify_sources``: recompute every binding from the stored
messages (SPEC §5 source digest) and print the jobs whose source no longer
matches. Also reports planned segments whose stored current digest disagrees
with the recomputation (it never should). A rolling hand-off job (SPEC §7)
is bound to its own pair range: it is stale when that range's digest moved,
or when its chain broke above it (an ancestor's material changed); its
stored current digest (``HandoffPlan``) is checked like a segment's."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from compaction.bindings.handoff import HANDOFF_KIND
from compaction.digest import range_digest
from compaction.models import CompactionJob, HandoffPlan
from compaction.planning import SEGMENT_SIZE
from conversations.models import Conversation, Pair, Segment


def _range_digest(pairs, start: int, end: int) -> tuple[str, list[str]] | None:
    digest, ids = range_digest(pairs, start, end)
    return (digest, ids) if digest else None


def _recomputed_digests(pairs) -> dict[tuple[int, int], tuple[str, list[str]]]:
    """Every whole segment-sized range's digest, by (from_pair, to_pair)."""
    last = SEGMENT_SIZE - 1
    return {(start, start + last): _range_digest(pairs, start, start + last)
            for start in range(0, len(pairs) - last, SEGMENT_SIZE)}


class Command(BaseCommand):
    help = "Recompute every source binding and print the stale ones."

    def handle(self, *args, **options):
        checked = stale = drift = handoff_checked = handoff_drift = 0
        for conversation in Conversation.objects.order_by("pk").iterator():
            jobs = list(CompactionJob.objects.filter(conversation=conversation).order_by("from_pair", "pk"))
            segments = list(Segment.objects.filter(conversation=conversation))
            if not jobs and not segments:
                continue
            pairs = {index: (uid, utext, aid, atext) for index, uid, utext, aid, atext in Pair.objects.filter(
                conversation=conversation).values_list("index", "user_message__external_id", "user_message__content",
                                                       "assistant_message__external_id", "assistant_message__content")}
            now = _recomputed_digests(pairs)
            plans = dict(HandoffPlan.objects.filter(job__conversation=conversation).values_list("job_id",
                                                                                              "current_digest"))
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
                if job.kind == HANDOFF_KIND:
                    current = _range_digest(pairs, job.from_pair, job.to_pair)
                    handoff_checked += 1
                    if plans.get(job.pk) != (current[0] if current else ""):
                        handoff_drift += 1
                        self.stdout.write(f"HANDOFF-DRIFT job {job.pk} {conversation.scope}/{conversation.external_id} "
                                          f"[{job.from_pair}-{job.to_pair}] stored={(plans.get(job.pk) or '')[:12]} "
                                          f"recomputed={current[0][:12] if current else None}")
                    if current is not None and current[0] == job.source_digest and current[1] == job.message_ids:
                        if job.source_changed_at is None:
                            continue
                        stale += 1
                        self.stdout.write(
                            f"STALE job {job.pk} {conversation.scope}/{conversation.external_id} "
                            f"[{job.from_pair}-{job.to_pair}] state={job.state} (its chain broke above it)")
                        continue
                    stale += 1
                    self.stdout.write(
                        f"STALE job {job.pk} {conversation.scope}/{conversation.external_id} [{job.from_pair}-"
                        f"{job.to_pair}] state={job.state} bound={job.source_digest[:12]} "
                        f"now={current[0][:12] if current else None} "
                        f"({'digest differs' if current else 'pairs no longer stored'})")
                    continue
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
        if handoff_checked:
            self.stdout.write(f"{handoff_checked} of them rolling hand-off job(s), {handoff_drift} stored material "
                              "digest(s) out of date")
