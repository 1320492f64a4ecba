"""Reads for the desk pages (SPEC §1, §8; issue 5). What the pages draw
from these rows (bars, charts, diffs) is ``presenters``'.

Every read is narrowed to the scopes the user may see
(``conversations.selectors.user_scopes``); a row from another scope is
simply absent, so pages answer 404, never "forbidden", for it.

Query counts are bounded by design, independent of how much data exists:
lists use keyset pagination (fetch one row more than a page, never
``COUNT(*)``), and per-row figures come from one aggregated query over the
rows on the page. The failed ranges queue's reads are ``queue``'s, the
activity log's ``activity``'s, the review queue's ``review_queue``'s, a
rolling conversation's chain ``chain``'s, the assembly inspector's
``inspector``'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from datetime import timezone as dt_timezone

from django.db.models import Count, Exists, OuterRef, Q, QuerySet, prefetch_related_objects

from conversations.models import Conversation, Message, MessageRevision, Pair, Segment
from conversations.selectors import conversations_visible, in_scopes_of, user_scopes

from ..digest import range_digest
from ..keyset import COUNT, ID, TEXT, TIME, Keyset, Page
from ..models import (SEGMENT_KIND, SETTLED_STATES, Attempt, CompactionJob, JobState, Review, SummaryGeneration,
                      verdict_stands)
from ..models.jobs import SOURCE_CHANGED, SUPERSEDED
from .presenters import STATE_ORDER
from .segment import answer_pieces, kept_by_message, source_anchor, summary_pieces, word_diff

# The failed ranges queue's other kind of trouble (``queue``), and a filter of
# the conversations list: a succeeded summary whose source changed since, so projections no longer use it and its range falls back to raw.
# (Not the failure code ``source_changed`` of an attempt whose source changed
# while it ran; the value stays what bookmarked ``?state=`` links say.)
OUTDATED_SUMMARY = "source_changed"


# --- conversations list -------------------------------------------------------

CONVERSATION_SORTS = {
    "recent": Keyset("desk-conversations-recent", ("-updated_at", "-id"), (TIME, ID)),
    "oldest": Keyset("desk-conversations-oldest", ("updated_at", "id"), (TIME, ID)),
    "external_id": Keyset("desk-conversations-external-id", ("external_id", "id"), (TEXT, ID)),
    "pairs": Keyset("desk-conversations-pairs", ("-pair_count", "-id"), (COUNT, ID)),
}


def where_given(qs: QuerySet, **lookups) -> QuerySet:
    """``qs`` narrowed by every lookup a filter form gave a value (an empty
    one means "any")."""
    return qs.filter(**{name: value for name, value in lookups.items() if value})


def day_start_utc(day):
    """A date filter's first moment: midnight UTC, the zone the desk shows."""
    if isinstance(day, datetime):
        return day
    return datetime.combine(day, datetime.min.time(), tzinfo=dt_timezone.utc)


def _standing_verdicts_of_conversation(verdict: str):
    """A conversation's reviews that are the current verdict on their
    summary (the newest review of that generation that stands,
    ``models.reviews``) and say ``verdict``. A later review of the same
    generation stands whenever this one does (same job, later than any
    source change), so "newest" needs no second look at the rule."""
    later = Review.objects.filter(generation_id=OuterRef("generation_id")).filter(
        Q(created_at__gt=OuterRef("created_at")) | Q(created_at=OuterRef("created_at"), id__gt=OuterRef("id")))
    return (Review.objects.standing().filter(job__conversation_id=OuterRef("pk"), verdict=verdict)
            .exclude(Exists(later)))


DRIFT_FOUND = "found"  # the drift filter's "any finding"; else a finding code (SPEC §8)


def drift_findings_for(drift: str) -> QuerySet:
    """The findings a drift filter asks for: any (``found``) or one code's."""
    from ..models import DriftFinding

    findings = DriftFinding.objects.all()
    return findings if drift == DRIFT_FOUND else findings.filter(code=drift)


def conversation_list(*, user, q: str = "", scope: str = "", has: str = "", verdict: str = "",
                      drift: str = "", updated_since=None, sort: str = "recent", cursor: str | None = None,
                      page_size: int = 50) -> Page:
    qs = conversations_visible(user=user)
    if q:
        # An exact external id (what people paste) or words of the title: both
        # can use an index (the unique key; a trigram index on UPPER(title)).
        qs = qs.filter(Q(external_id=q) | Q(title__icontains=q))
    if scope:
        qs = qs.filter(scope=scope)
    if has:
        # A range counts by the job that counts for it (as the bars do): an
        # old failed job its range replaced is not a failed range.
        wanted = (Q(state=JobState.SUCCEEDED, source_changed_at__isnull=False) if has == OUTDATED_SUMMARY
                  else Q(state=has))
        qs = qs.filter(Exists(CompactionJob.objects.filter(wanted, conversation=OuterRef("pk")).not_superseded()))
    if verdict:
        qs = qs.filter(Exists(_standing_verdicts_of_conversation(verdict)))
    if drift:
        # A hand-off note of the conversation (any generation) with such a finding.
        qs = qs.filter(Exists(drift_findings_for(drift).filter(generation__conversation_id=OuterRef("pk"))))
    if updated_since:
        qs = qs.filter(updated_at__gte=day_start_utc(updated_since))
    page = CONVERSATION_SORTS.get(sort, CONVERSATION_SORTS["recent"]).page(qs, cursor=cursor, size=page_size)
    counts = job_state_counts(conversation_ids=[c.pk for c in page.rows])
    for conv in page.rows:
        conv.state_counts = counts.get(conv.pk, {})
    return page


def job_state_counts(*, conversation_ids: list[int]) -> dict[int, dict[str, int]]:
    """Jobs by display state for each conversation (a replaced job counts as
    ``superseded``, a summary whose source changed as ``source_changed``,
    never as ``succeeded``): one grouped query."""
    counts: dict[int, dict[str, int]] = {}
    if not conversation_ids:
        return counts
    rows = (
        CompactionJob.objects.filter(conversation_id__in=conversation_ids)
        .with_display_state()
        .values_list("conversation_id", "shown_state")
        .annotate(n=Count("id"))
        .order_by()
    )
    for conversation_id, state, n in rows:
        counts.setdefault(conversation_id, {})[state] = n
    return counts


def visible_scopes(*, user) -> list[str]:
    """Scopes for the filter menus. Staff: the distinct scopes that exist
    (one index-only query over the unique (scope, external_id) index)."""
    scopes = user_scopes(user)
    if scopes is None:
        return _distinct_scopes()
    return sorted(scopes)


def _distinct_scopes() -> list[str]:
    """Distinct scopes by skipping through the (scope, external_id) index:
    one probe per scope instead of a scan over every conversation."""
    from django.db import connection

    table = Conversation._meta.db_table
    sql = (
        f"WITH RECURSIVE s(scope) AS ("
        f" SELECT MIN(scope) FROM {table}"
        f" UNION ALL SELECT (SELECT MIN(scope) FROM {table} WHERE scope > s.scope) FROM s WHERE s.scope IS NOT NULL"
        f") SELECT scope FROM s WHERE scope IS NOT NULL"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return [row[0] for row in cursor.fetchall()]


# --- one conversation ---------------------------------------------------------

# What a row about a job shows; the binding's message ids and the prompt's
# templates stay in the database.
JOB_ROW_FIELDS = ("id", "scope", "conversation_id", "from_pair", "to_pair", "source_digest", "state", "attempts_used",
                  "max_attempts", "last_failure_code", "source_changed_at", "created_at", "updated_at",
                  "prompt_version__name", "prompt_version__version")


@dataclass
class SegmentView:
    from_pair: int
    to_pair: int
    digest: str | None
    state: str  # display state: a JobState value, or "unplanned"/"no_job"
    job: CompactionJob | None = None
    jobs: list = field(default_factory=list)
    source_valid: bool | None = None
    review: Review | None = None  # the verdict that stands on the job's summary
    review_lapsed: bool = False  # reviewed once, but no verdict stands now


def _pick_current_job(jobs: list[CompactionJob], digest: str | None) -> tuple[CompactionJob | None, str, bool | None]:
    """The job that speaks for a range now, its display state, and whether its
    binding matches the range's current digest.

    A succeeded job whose source moved is shown ``source_changed``: its
    generation is kept (immutable) but the projection may no longer use it;
    one that another job of its range replaced (a newer job bound to the
    current source, say under a newer prompt) is shown ``superseded``.
    Any other job whose source moved is shown ``stale``.
    """
    if not jobs:
        return None, "no_job", None
    bound = [j for j in jobs if j.source_digest == digest]
    pool = bound or jobs
    pool = sorted(pool, key=lambda j: (j.state == JobState.SUCCEEDED, j.prompt_version.version, j.pk), reverse=True)
    job = pool[0]
    valid = job.source_digest == digest
    if job.superseded_by([j for j in jobs if j.pk != job.pk]) is not None:
        state = SUPERSEDED
    elif valid or job.state == JobState.STALE:
        state = job.display_state()
    elif job.state == JobState.SUCCEEDED:
        state = SOURCE_CHANGED
    else:
        state = JobState.STALE
    return job, state, valid


def conversation_detail(*, conversation: Conversation) -> dict:
    """Everything the conversation page draws, in a fixed number of queries."""
    segments = list(
        Segment.objects.filter(conversation=conversation).order_by("from_pair").only("from_pair", "to_pair", "digest")
    )
    jobs = list(
        CompactionJob.objects.filter(conversation=conversation, kind=SEGMENT_KIND)
        .select_related("prompt_version")
        .only(*JOB_ROW_FIELDS)
        .order_by("from_pair", "id")
    )
    reviews = reviews_by_job(job_ids=[j.pk for j in jobs])
    by_range: dict[int, list[CompactionJob]] = {}
    for job in jobs:
        by_range.setdefault(job.from_pair, []).append(job)
    jobs_by_range = {from_pair: list(range_jobs) for from_pair, range_jobs in by_range.items()}

    views = []
    for seg in segments:
        range_jobs = by_range.pop(seg.from_pair, [])
        job, state, valid = _pick_current_job(range_jobs, seg.digest)
        views.append(SegmentView(seg.from_pair, seg.to_pair, seg.digest, state, job, jobs=range_jobs,
                                 source_valid=valid, **_standing(job, range_jobs, reviews)))
    # Ranges that once had jobs but are no longer planned (history rewritten).
    for from_pair, old_jobs in sorted(by_range.items()):
        job, _, _ = _pick_current_job(old_jobs, None)
        views.append(SegmentView(from_pair, old_jobs[0].to_pair, None, "unplanned", job, jobs=old_jobs,
                                 source_valid=False, **_standing(job, old_jobs, reviews)))
    views.sort(key=lambda v: v.from_pair)

    planned_to = max((s.to_pair for s in segments), default=-1)
    tail_from = planned_to + 1
    generations = list(
        SummaryGeneration.objects.filter(conversation=conversation)
        .select_related("prompt_version")
        .order_by("number")
        .only("id", "number", "kind", "text_bytes", "from_pair", "to_pair", "created_at", "job_id",
              "prompt_version__name", "model_id", "source_digest")
    )
    digests = {s.from_pair: s.digest for s in segments}
    jobs_by_id = {j.pk: j for j in jobs}
    for gen in generations:
        gen.source_valid = digests.get(gen.from_pair) == gen.source_digest
        gen.display_state = generation_state(gen, jobs_by_id.get(gen.job_id), jobs_by_range.get(gen.from_pair, []))
    return {
        "segments": views,
        "has_handoff_jobs": CompactionJob.objects.filter(conversation=conversation).exclude(kind=SEGMENT_KIND).exists(),
        "tail_from": tail_from,
        "tail_count": max(0, conversation.pair_count - tail_from),
        "jobs": jobs,
        "generations": generations,
        "state_counts": {s: sum(1 for v in views if v.state == s) for s in [*STATE_ORDER, "no_job", "unplanned"]},
    }


GENERATION_VALID = "valid"


def generation_state(generation, job: CompactionJob | None, range_jobs: list[CompactionJob]) -> str:
    """A segment summary's state at a glance: ``superseded`` once another job
    of its range replaced its job, ``source_changed`` once its source moved,
    else ``valid``. (A hand-off note's state is its chain's: ``rolling_chain``.)"""
    if job is None:
        return GENERATION_VALID if generation.source_valid else SOURCE_CHANGED
    if job.superseded_by([j for j in range_jobs if j.pk != job.pk]) is not None:
        return SUPERSEDED
    if not generation.source_valid or job.source_changed_at is not None:
        return SOURCE_CHANGED
    return GENERATION_VALID


def reviews_by_job(*, job_ids: list[int]) -> dict[int, list[Review]]:
    """Each job's reviews, newest first: one query."""
    out: dict[int, list[Review]] = {}
    if not job_ids:
        return out
    for review in Review.objects.filter(job_id__in=job_ids).select_related("reviewer").newest_first():
        out.setdefault(review.job_id, []).append(review)
    return out


def standing_review(job: CompactionJob, reviews: list[Review], *, superseded: bool) -> Review | None:
    """The newest of ``reviews`` (one job's, newest first) whose verdict
    stands (``models.reviews.verdict_stands``)."""
    for review in reviews:
        if verdict_stands(review_created_at=review.created_at, review_generation_id=review.generation_id,
                          superseded=superseded, source_changed_at=job.source_changed_at):
            return review
    return None


def _standing(job, range_jobs, reviews) -> dict:
    if job is None:
        return {}
    own = reviews.get(job.pk, [])
    review = standing_review(job, own, superseded=job.superseded_by([j for j in range_jobs if j.pk != job.pk])
                             is not None)
    # Reviewed once (this summary or one it replaced), but no verdict stands now.
    judged = any(r.generation_id for j in range_jobs for r in reviews.get(j.pk, []))
    return {"review": review, "review_lapsed": judged and review is None}


# --- one job (the segment page) ------------------------------------------------

def job_get(*, user, job_id: int) -> CompactionJob | None:
    qs = CompactionJob.objects.select_related("conversation", "prompt_version")
    scopes = user_scopes(user)
    if scopes is not None:
        qs = qs.filter(scope__in=scopes, conversation__scope__in=scopes)
    return qs.filter(pk=job_id).first()


@dataclass
class ChangedMessage:
    position: int
    role: str
    bound_id: str
    current_id: str | None
    diff: list  # [(css class, line)]
    note: str = ""


def job_detail(*, job: CompactionJob) -> dict:
    """The segment page: sources, digest check, what changed, attempts,
    generation and reviews. A fixed number of queries."""
    conversation = job.conversation
    pairs = list(
        Pair.objects.filter(conversation=conversation, index__gte=job.from_pair, index__lte=job.to_pair)
        .select_related("user_message", "assistant_message")
        .order_by("index")
    )
    current_ids: list[str] = []
    for p in pairs:
        current_ids += [p.user_message.external_id, p.assistant_message.external_id]
    current_digest = range_digest({p.index: (p.user_message.external_id, p.user_message.content,
                                             p.assistant_message.external_id, p.assistant_message.content)
                                   for p in pairs}, job.from_pair, job.to_pair)[0] or None
    source_valid = current_digest == job.source_digest and current_ids == list(job.message_ids)

    changed: list[ChangedMessage] = []
    if not source_valid:
        bound_ids = list(job.message_ids)
        by_ext = {
            m.external_id: m
            for m in Message.objects.filter(conversation=conversation, external_id__in=bound_ids)
        }
        # The content a message had when the job was bound is the earliest
        # revision replaced after the job was created.
        revs: dict[int, MessageRevision] = {}
        for rev in MessageRevision.objects.filter(
            message_id__in=[m.pk for m in by_ext.values()], replaced_at__gte=job.created_at
        ).order_by("message_id", "-number"):
            revs[rev.message_id] = rev  # last assignment wins: the lowest number
        for pos, ext in enumerate(bound_ids):
            cur = current_ids[pos] if pos < len(current_ids) else None
            msg = by_ext.get(ext)
            role = "user" if pos % 2 == 0 else "assistant"
            if msg is None:
                changed.append(ChangedMessage(pos, role, ext, cur, [], note="message no longer stored"))
            elif msg.pk in revs:
                changed.append(ChangedMessage(pos, role, ext, cur, word_diff(revs[msg.pk].content, msg.content),
                                              note=f"edited (revision {revs[msg.pk].number} → current)"))
            elif cur != ext:
                changed.append(ChangedMessage(pos, role, ext, cur, [],
                                              note="pair now formed from a different message"))

    attempts = list(Attempt.objects.filter(job=job).order_by("number"))
    generation = SummaryGeneration.objects.filter(job=job).select_related("prompt_version").first()
    segment = Segment.objects.filter(conversation=conversation, from_pair=job.from_pair).only("digest").first()
    other_jobs = list(
        CompactionJob.objects.filter(conversation=conversation, kind=job.kind, from_pair=job.from_pair)
        .exclude(pk=job.pk)
        .select_related("prompt_version")
        .order_by("-id")
    )
    range_jobs = [job, *other_jobs]
    for other in other_jobs:
        other.shown_state = other.display_state(
            superseded=other.superseded_by([j for j in range_jobs if j.pk != other.pk]) is not None)
    superseded_by = job.superseded_by(other_jobs)
    # The verdict history of the range: every review of every job of it.
    range_reviews = list(
        Review.objects.filter(job_id__in=[job.pk, *(o.pk for o in other_jobs)])
        .select_related("reviewer", "generation").newest_first()
    )
    # Only a hand-off note has drift findings a verdict can cite.
    if job.kind != SEGMENT_KIND:
        prefetch_related_objects(range_reviews, "cited_findings")
    for r in range_reviews:
        r.cites = list(r.cited_findings.all()) if job.kind != SEGMENT_KIND else []
    drift_findings = _findings_in_words(generation)
    jobs_by_id = {o.pk: o for o in other_jobs} | {job.pk: job}
    for r in range_reviews:
        of = jobs_by_id[r.job_id]
        r.stands = verdict_stands(
            review_created_at=r.created_at, review_generation_id=r.generation_id,
            superseded=(of.superseded_by([o for o in jobs_by_id.values() if o.pk != of.pk]) is not None),
            source_changed_at=of.source_changed_at)
    own_reviews = [r for r in range_reviews if r.job_id == job.pk]
    review = next((r for r in own_reviews if r.stands), None)
    anchors: dict[str, str] = {}
    for p in pairs:
        p.user_anchor = source_anchor(p.index, "user")
        p.assistant_anchor = source_anchor(p.index, "assistant")
        anchors.setdefault(p.user_message.external_id, p.user_anchor)
        anchors.setdefault(p.assistant_message.external_id, p.assistant_anchor)
    extractive = generation is not None and job.kind == SEGMENT_KIND and generation.model_id.startswith("extractive")
    kept = kept_by_message(generation.text) if extractive else {}
    for p in pairs:
        p.assistant_pieces = answer_pieces(p.assistant_message.content, kept.get(p.assistant_message.external_id))
        p.kept_count = sum(1 for piece in p.assistant_pieces if piece.kind == "kept")
    return {
        "pairs": pairs,
        "summary_pieces": summary_pieces(generation.text, anchors) if generation else [],
        "marks_kept": extractive,
        "current_digest": current_digest,
        "source_valid": source_valid,
        "planned_digest": segment.digest if segment else None,
        "changed": changed,
        "attempts": attempts,
        "generation": generation,
        "reviews": range_reviews,
        "review": review,
        "review_lapsed": _lapsed(review, own_reviews, range_reviews, superseded=superseded_by is not None),
        "drift_findings": drift_findings,
        "other_jobs": other_jobs,
        "superseded_by": superseded_by,
    }


def job_drift_findings(*, job: CompactionJob) -> list:
    """The drift findings of the note ``job`` wrote (none for a segment or
    without a generation), in words: what a verdict on it may cite."""
    if job.kind == SEGMENT_KIND:
        return []
    return _findings_in_words(SummaryGeneration.objects.filter(job=job).first())


def _findings_in_words(generation: SummaryGeneration | None) -> list:
    """A note's drift findings (SPEC §8) with their kind and code in words,
    for a verdict to cite."""
    from ..drift import words
    from ..models import DriftFinding

    if generation is None or generation.kind == SEGMENT_KIND:
        return []
    findings = list(DriftFinding.objects.filter(generation=generation).order_by("position"))
    for f in findings:
        f.kind_title, f.code_title = words.kind_title(f.kind), words.code_title(f.code)
    return findings


def _lapsed(review, own_reviews, range_reviews, *, superseded: bool) -> str:
    """Why no verdict stands although the range was judged: ``"replaced"``
    or ``"source_changed"`` (this summary's verdict), ``"earlier_summary"``
    (a verdict on a summary this range had before); ``""`` otherwise."""
    if review is not None:
        return ""
    if any(r.generation_id for r in own_reviews):
        return "replaced" if superseded else "source_changed"
    if any(r.generation_id for r in range_reviews):
        return "earlier_summary"
    return ""


def job_is_settled(job: CompactionJob) -> bool:
    return job.state in SETTLED_STATES
