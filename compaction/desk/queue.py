"""Reads for the failed ranges queue (``/queue/``, SPEC §1; issue 5): every
failed, exhausted and stale range and every summary whose source changed,
narrowed to the user's scopes, a keyset page at a time; the rows a bulk
re-run acted on, kept on the page until they settle; the jobs an action
may touch."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Count, Exists, OuterRef, Q
from django.utils import timezone

from conversations.selectors import in_scopes_of

from ..keyset import ID, TIME, Keyset, Page
from ..models import CompactionJob, JobState
from .selectors import JOB_ROW_FIELDS, OUTDATED_SUMMARY, drift_findings_for, where_given

QUEUE_STATES = (JobState.FAILED, JobState.EXHAUSTED, JobState.STALE)
QUEUE = Keyset("desk-queue", ("-updated_at", "-id"), (TIME, ID))

AGE_CHOICES = {
    "1h": timedelta(hours=1),
    "1d": timedelta(days=1),
    "7d": timedelta(days=7),
}


def queue_list(*, user, state: str = "", failure_code: str = "", scope: str = "", prompt_version: str = "",
               older_than: str = "", drift: str = "", cursor: str | None = None, page_size: int = 50) -> Page:
    source_changed = Q(state=JobState.SUCCEEDED, source_changed_at__isnull=False)
    if state == OUTDATED_SUMMARY:
        wanted = source_changed
    elif drift and not state:
        # Drift is the queue's third kind of trouble: a note written, and
        # usable, whose checks found something (SPEC §8 "the queue can
        # filter jobs with findings"), whatever the job's state.
        wanted = Q()
    else:
        wanted = Q(state=state) if state else Q(state__in=QUEUE_STATES) | source_changed
    if drift:
        wanted &= Q(Exists(drift_findings_for(drift).filter(generation__job_id=OuterRef("pk"))))
    # Only each range's job that counts: once another covers the range
    # (planned after an edit, re-run under a newer prompt, revived by an
    # undone edit), this one needs no repair of its own and stays reachable
    # from the range's page.
    qs = (
        CompactionJob.objects.filter(wanted).not_superseded()
        .select_related("conversation", "prompt_version")
        .only(*JOB_ROW_FIELDS, "conversation__external_id")
    )
    qs = where_given(in_scopes_of(qs, user=user), last_failure_code=failure_code, scope=scope,
                     prompt_version__name=prompt_version)
    if older_than in AGE_CHOICES:
        qs = qs.filter(updated_at__lte=timezone.now() - AGE_CHOICES[older_than])
    page = QUEUE.page(qs, cursor=cursor, size=page_size)
    _drift_counts(page.rows)
    return page


def _drift_counts(jobs: list[CompactionJob]) -> None:
    """Each job's generation's drift findings by kind (``drift_counts``), one
    grouped query for the page."""
    from ..models import DriftFinding, DriftKind

    counts: dict[int, dict[str, int]] = {}
    handoff = [j.pk for j in jobs]  # only hand-off notes have findings
    if handoff:
        for job_id, generation_number, kind, n in (
                DriftFinding.objects.filter(generation__job_id__in=handoff)
                .values_list("generation__job_id", "generation__number", "kind").annotate(n=Count("id")).order_by()):
            counts.setdefault(job_id, {})[kind] = n
            counts[job_id]["#"] = generation_number
    kinds = list(DriftKind.values)  # wrong, extra, lost, length: SPEC §8's order
    for job in jobs:
        found = counts.get(job.pk, {})
        job.drift_generation = found.pop("#", None)
        job.drift_counts = {k: found[k] for k in kinds if k in found}


def queue_kept(*, user, job_ids: list[int]) -> list[CompactionJob]:
    """The jobs a bulk re-run just acted on (``?kept=``), in the user's
    scopes, whatever their state now: the queue keeps them on the page with
    their live state until they settle. One query."""
    if not job_ids:
        return []
    qs = (CompactionJob.objects.filter(pk__in=job_ids).select_related("conversation", "prompt_version")
          .only(*JOB_ROW_FIELDS, "conversation__external_id"))
    return list(in_scopes_of(qs, user=user).order_by("id"))


def jobs_for_action(*, user, job_ids: list[int]) -> list[CompactionJob]:
    """The selected jobs the user may see (others are silently dropped: they
    do not exist for this user)."""
    qs = CompactionJob.objects.filter(pk__in=job_ids).select_related("conversation", "prompt_version")
    qs = in_scopes_of(qs, user=user)
    return list(qs.order_by("pk"))
