"""The default binding: fixed 10-pair segments (SPEC §5, seed 000 §3–§6).

Segment ``k`` covers pairs ``[10k, 10k+9]`` and is planned once there are
``10k + 30`` pairs (``compaction.planning``). A segment job is bound to its
range, the 20 message ids and the source digest (``compaction.digest``) of
the range as it was, a model and a prompt version; the ``Segment`` row of
the range (``conversations``) keeps the range's *current* digest, written in
the same transaction as the ingest that moved it. The binding is current
while that row exists with the job's digest.

Here too: the plan ingest stores (``segment_plan``), how ingest's digest
changes reach the jobs (``segments_changed``), and planning jobs for
planned ranges. A scope whose policy is rolling (SPEC §7) gets no segment
jobs: ingest still stores its ``Segment`` rows (the plan does not depend on
the scope), but nothing is summarised from them.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Subquery
from django.utils import timezone

from conversations import hooks
from conversations.models import Segment

from ..digest import digest_input, source_digest
from ..engine.attempts import attempts_left, state_when_revived
from ..engine.dispatch import jobs_enqueue_after_commit
from ..models import SEGMENT_KIND, CompactionJob, JobState, PromptVersion
from ..planning import SEGMENT_SIZE, is_valid_range, plan_segments
from ..policies import is_rolling, rolling_scopes
from .base import PairRangeBinding

PROMPT_FAMILY = "conversation-compaction"

# A job in one of these states has not produced anything yet, so a changed
# source simply makes it stale: it will never run against the old binding.
_STALEABLE = (JobState.PENDING, JobState.FAILED, JobState.EXHAUSTED)


class SegmentBinding(PairRangeBinding):
    kind = SEGMENT_KIND
    prompt_family = PROMPT_FAMILY

    def range_problem(self, from_pair, to_pair):
        if is_valid_range(from_pair, to_pair):
            return ""
        return f"range {from_pair}-{to_pair} is not {SEGMENT_SIZE} pairs starting on a multiple of {SEGMENT_SIZE}"

    def range_sql(self, *, job):
        return (f"{job}.from_pair %% {SEGMENT_SIZE} = 0 AND "
                f"{job}.to_pair = {job}.from_pair + {SEGMENT_SIZE - 1}")

    def current_sql(self, *, job):
        segment = connection.ops.quote_name(Segment._meta.db_table)
        return (f"EXISTS (SELECT 1 FROM {segment} s WHERE s.conversation_id = {job}.conversation_id "
                f"AND s.from_pair = {job}.from_pair AND s.to_pair = {job}.to_pair "
                f"AND s.digest = {job}.source_digest)"), []

    def plan(self, *, conversation):
        if is_rolling(conversation.scope):
            return []
        return conversation_plan(conversation=conversation)

    def conversations_unplanned(self, *, limit):
        try:
            pv, model_id = self.prompt_version(), self.model_id()
        except (PromptVersion.DoesNotExist, ValueError):
            return []
        segments = Segment.objects.all()
        rolling = rolling_scopes()
        if rolling:
            segments = segments.exclude(conversation__scope__in=rolling)
        has_job = CompactionJob.objects.filter(
            kind=self.kind, conversation_id=OuterRef("conversation_id"), from_pair=OuterRef("from_pair"),
            source_digest=OuterRef("digest"), prompt_version=pv, model_id=model_id,
        )
        # order_by() replaces Segment's default ordering (conversation,
        # from_pair), which SELECT DISTINCT would otherwise include and so
        # return a conversation once per unplanned range (issue 12).
        return list(
            segments.filter(~Exists(has_job)).order_by("conversation_id")
            .values_list("conversation_id", flat=True).distinct()[:limit]
        )


SEGMENTS = SegmentBinding()


def segment_jobs():
    return CompactionJob.objects.filter(kind=SEGMENT_KIND)


# --- the range's current digest ------------------------------------------------

def current_digest_subquery() -> Subquery:
    """The digest of the planned segment with the job's range now (NULL when
    the range is no longer planned), for an annotation on segment jobs."""
    return Subquery(
        Segment.objects.filter(
            conversation_id=OuterRef("conversation_id"), from_pair=OuterRef("from_pair"), to_pair=OuterRef("to_pair")
        ).values("digest")[:1]
    )


def current_digest(job: CompactionJob) -> str | None:
    return (
        Segment.objects.filter(conversation_id=job.conversation_id, from_pair=job.from_pair, to_pair=job.to_pair)
        .values_list("digest", flat=True)
        .first()
    )


# --- what ingest stores, and how its changes reach the jobs -----------------------

def segment_plan(pairs: Sequence) -> list[hooks.PlannedRange]:
    """The planned segments of a conversation's pairs, each with its current
    source digest (the plan ``conversations`` asks for through its hook)."""
    return [
        hooks.PlannedRange(rng.number, rng.from_pair, rng.to_pair, source_digest(
            digest_input(p.index, p.user.external_id, p.user.content, p.assistant.external_id, p.assistant.content)
            for p in pairs[rng.from_pair: rng.to_pair + 1]))
        for rng in plan_segments(len(pairs))
    ]


def segments_changed(*, conversation, changes: list[hooks.SegmentChange]) -> int:
    """React to ranges whose digest moved. Called inside the ingest
    transaction (SPEC §5). Every segment job of such a range records whether
    its binding still matches (``source_changed_at``; cleared again if an
    edit is undone, which also revives a job that edit made stale), whatever
    its state, and an unfinished job bound to the old digest becomes stale.
    Returns how many jobs were made stale."""
    marked = 0
    revived: list[int] = []
    # A range planned anew (no old digest) has jobs only if it was planned
    # before and then dropped (a run stopped counting, the pairs came back):
    # those jobs were marked when it was dropped, and one bound to the
    # source the range has again is as it was before — an undo too.
    again = {change.from_pair for change in changes if change.old_digest is None and change.new_digest is not None}
    if again:
        again &= set(segment_jobs().filter(conversation=conversation, from_pair__in=again,
                                           source_changed_at__isnull=False)
                     .values_list("from_pair", flat=True).distinct())
    changes = [change for change in changes if change.old_digest is not None or change.from_pair in again]
    if not changes:
        return 0  # only new ranges that never had a job
    now = timezone.now()
    with transaction.atomic():
        for change in changes:
            jobs = segment_jobs().filter(conversation=conversation, from_pair=change.from_pair)
            bound_elsewhere = jobs if change.new_digest is None else jobs.exclude(source_digest=change.new_digest)
            bound_elsewhere.filter(source_changed_at__isnull=True).update(source_changed_at=now, updated_at=now)
            if change.new_digest is not None:
                back = jobs.filter(source_digest=change.new_digest, source_changed_at__isnull=False)
                # An edit undone: a job made stale by it is as it was before.
                # Its binding is unique, so no new job could take its place.
                revived += list(back.filter(attempts_left(), state=JobState.STALE).values_list("pk", flat=True))
                back.filter(state=JobState.STALE).update(state=state_when_revived())
                back.update(source_changed_at=None, updated_at=now)
            marked += bound_elsewhere.filter(state__in=_STALEABLE).update(state=JobState.STALE, updated_at=now)
        jobs_enqueue_after_commit(revived)
    return marked


# --- planning ------------------------------------------------------------------

def conversation_plan(*, conversation, prompt_version: PromptVersion | None = None,
                      model_id: str | None = None) -> list[CompactionJob]:
    """Create a pending job for every planned segment that has no job for its
    current binding (range, digest, model, prompt version). Idempotent: the
    unique binding constraint makes concurrent planners create each job once.
    Returns the jobs created by this call."""
    prompt_version = prompt_version or SEGMENTS.prompt_version()
    model_id = model_id or SEGMENTS.model_id()
    created: list[CompactionJob] = []
    existing = set(
        segment_jobs().filter(conversation=conversation, prompt_version=prompt_version, model_id=model_id)
        .values_list("from_pair", "source_digest")
    )
    for segment in Segment.objects.filter(conversation=conversation).order_by("from_pair"):
        if (segment.from_pair, segment.digest) in existing:
            continue
        job, was_created = segment_job_bind(segment=segment, scope=conversation.scope,
                                            prompt_version=prompt_version, model_id=model_id)
        if was_created:
            created.append(job)
    return created


def segment_job_bind(*, segment, scope: str, prompt_version: PromptVersion,
                     model_id: str) -> tuple[CompactionJob, bool]:
    """The job bound to ``segment``'s current source under this prompt
    version and model, created pending if there is none (the binding is
    unique, so concurrent callers get the same job). Returns (job, created)."""
    with transaction.atomic():
        return CompactionJob.objects.get_or_create(
            kind=SEGMENT_KIND,
            conversation_id=segment.conversation_id,
            from_pair=segment.from_pair,
            to_pair=segment.to_pair,
            prompt_version=prompt_version,
            model_id=model_id,
            source_digest=segment.digest,
            parent_generation=None,
            defaults={"scope": scope, "message_ids": segment.message_ids},
        )
