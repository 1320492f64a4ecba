"""The review queue's reads (issue 16 item 2; SPEC §11): summaries and
hand-off notes awaiting a verdict, oldest first through the database-kept
index ``ReviewAwaiting``; how many are left and where an item stands; the
candidates a reviewer may be given next (claiming them is
``compaction.reviewclaims``')."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from conversations.selectors import in_scopes_of

from ..keyset import ID, TIME, Keyset, Page, rows_after
from ..models import CompactionJob, JobState, ReviewAwaiting, ReviewClaim, SummaryGeneration
from .queue import AGE_CHOICES
from .selectors import drift_findings_for

REVIEW_QUEUE = Keyset("desk-review", ("created_at", "generation_id"), (TIME, ID))
# What "x of N left" counts up to; past it the page says "500+" (a reviewer
# needs to know there is much left, not how much; counting costs per row).
REVIEW_COUNT_CAP = 500


def _review_filter_scope(qs, value):
    return qs.filter(scope=value)


def _review_filter_conversation(qs, value):
    return qs.filter(generation__conversation__external_id=value)


def _review_filter_prompt_version(qs, value):
    return qs.filter(generation__prompt_version__name=value)


def _review_filter_model(qs, value):
    return qs.filter(generation__model_id=value)


def _review_filter_older_than(qs, value):
    return qs.filter(created_at__lte=timezone.now() - AGE_CHOICES[value]) if value in AGE_CHOICES else qs


def _review_filter_drift(qs, value):
    """Hand-off notes whose drift checks found anything (``found``) or one code."""
    return qs.filter(Exists(drift_findings_for(value).filter(generation_id=OuterRef("generation_id"))))


# The queue's filters, by query-string name (``forms.ReviewQueueFilterForm``
# has a field for each): one function here and one form field each.
REVIEW_QUEUE_FILTERS = {
    "scope": _review_filter_scope,
    "conversation": _review_filter_conversation,
    "prompt_version": _review_filter_prompt_version,
    "model": _review_filter_model,
    "older_than": _review_filter_older_than,
    "drift": _review_filter_drift,
}


def review_awaiting(*, user, **filters) -> QuerySet[ReviewAwaiting]:
    """Summaries awaiting a verdict in ``user``'s scopes, as ``ReviewAwaiting``
    rows (their ``pk`` is the generation's): every generation — segment
    summaries and rolling hand-off notes alike — that no review has judged
    yet and that counts for its range now (its job not superseded, its
    source unchanged: a summary whose source changed needs re-planning, not
    a verdict). With the source unchanged, no verdict stands on a summary
    exactly when it was never reviewed (``models.reviews``). Read oldest
    first through ``review_awaiting_order``: the summaries already reviewed
    are not in the table, so they cost nothing however many there are."""
    # With its own source current, a job is superseded exactly when a newer
    # job of its range is bound to the current source (``superseded_by``):
    # one anti-join the planner can walk the queue's index with.
    newer_current = CompactionJob.objects.filter(
        kind=OuterRef("generation__kind"), conversation_id=OuterRef("generation__conversation_id"),
        from_pair=OuterRef("generation__from_pair"), pk__gt=OuterRef("generation__job_id"),
        source_changed_at__isnull=True).exclude(state=JobState.STALE)
    qs = (
        ReviewAwaiting.objects.filter(generation__job__source_changed_at__isnull=True)
        .exclude(generation__job__state=JobState.STALE)
        .exclude(Exists(newer_current))
    )
    qs = in_scopes_of(qs, user=user)
    for name, value in filters.items():
        if value:
            qs = REVIEW_QUEUE_FILTERS[name](qs, value)
    return qs


@contextmanager
def _serial_plan():
    """Run the queue's reads without parallel workers on PostgreSQL: they
    walk an index for a bounded number of rows (a few ms), and starting a
    worker costs more than that on a busy machine."""
    from django.db import connection, transaction

    if connection.vendor != "postgresql":
        yield
        return
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL max_parallel_workers_per_gather = 0")
        yield


def _claimed_by_others(user, now):
    return Exists(ReviewClaim.objects.filter(generation_id=OuterRef("pk"), expires_at__gt=now).exclude(reviewer=user))


@dataclass
class ReviewStanding:
    left: int  # summaries awaiting a verdict under these filters (at most REVIEW_COUNT_CAP)
    capped: bool  # more than that
    position: int | None  # 1-based place of the current item among them


def review_left(*, user, filters: dict, current: SummaryGeneration | None = None) -> ReviewStanding:
    """How many are left and where ``current`` stands among them: one query
    that counts at most ``REVIEW_COUNT_CAP + 1`` rows of the queue's index
    (never everything), in the database."""
    keys = (review_awaiting(user=user, **filters).order_by("created_at", "generation_id")
            .values_list("created_at", "generation_id")[:REVIEW_COUNT_CAP + 1])
    sql, params = keys.query.sql_with_params()
    before = "1 = 0"
    extra: list = []
    if current is not None:
        before = "t.created_at < %s OR (t.created_at = %s AND t.generation_id < %s)"
        extra = [current.created_at, current.created_at, current.pk]
    from django.db import connection

    with _serial_plan(), connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*), COALESCE(SUM(CASE WHEN {before} THEN 1 ELSE 0 END), 0), "
                       f"COALESCE(SUM(CASE WHEN t.generation_id = %s THEN 1 ELSE 0 END), 0) FROM ({sql}) t",
                       [*extra, current.pk if current is not None else 0, *params])
        count, ahead, present = cursor.fetchone()
    position = None
    if current is not None and (present or (ahead == 0 and count)):
        position = ahead + 1
    return ReviewStanding(left=min(count, REVIEW_COUNT_CAP), capped=count > REVIEW_COUNT_CAP, position=position)


def review_queue_page(*, user, filters: dict, cursor: str | None = None, page_size: int = 50) -> Page:
    """One page of the queue, oldest first: its rows are the generations,
    each with who holds a claim on it (one more query for the page)."""
    qs = (review_awaiting(user=user, **filters)
          .select_related("generation__conversation", "generation__prompt_version")
          .only("generation_id", "created_at", "scope", "generation__job_id", "generation__number",
                "generation__kind", "generation__scope", "generation__from_pair", "generation__to_pair",
                "generation__model_id", "generation__text_bytes", "generation__created_at",
                "generation__conversation_id", "generation__conversation__external_id",
                "generation__prompt_version__name"))
    with _serial_plan():
        page = REVIEW_QUEUE.page(qs, cursor=cursor, size=page_size)
    claims = {c.generation_id: c for c in ReviewClaim.objects.filter(
        generation_id__in=[r.generation_id for r in page.rows], expires_at__gt=timezone.now())
        .select_related("reviewer")}
    rows = []
    for r in page.rows:
        r.generation.claim = claims.get(r.generation_id)
        rows.append(r.generation)
    page.rows = rows
    return page


def review_candidates(*, user, filters: dict, after: SummaryGeneration | None = None, backwards: bool = False,
                      limit: int = 10) -> list[SummaryGeneration]:
    """The next few summaries this reviewer may be given, in queue order
    after ``after`` (before it, nearest first, when ``backwards``): not held
    by another reviewer's live claim. Claiming them is
    ``reviewclaims.review_claim_take``'s; a candidate lost to a race is
    skipped for the next."""
    qs = review_awaiting(user=user, **filters).exclude(_claimed_by_others(user, timezone.now()))
    order = ["-created_at", "-generation_id"] if backwards else ["created_at", "generation_id"]
    position = [after.created_at, after.pk] if after is not None else None
    rows = rows_after(qs, order=order, position=position).select_related("generation").only(
        "generation_id", "created_at", "generation__job_id", "generation__created_at")[:limit]
    return [r.generation for r in rows]


def review_generation_get(*, user, generation_id: int) -> SummaryGeneration | None:
    return in_scopes_of(SummaryGeneration.objects.only("id", "job_id", "created_at", "scope"),
                        user=user).filter(pk=generation_id).first()
