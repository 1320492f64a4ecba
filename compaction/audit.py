"""Audit records: the read side of what became of every job (SPEC §11, issue 6).

(The log of human actions is the *activity* log: ``AuditEvent`` rows,
written by ``compaction.actions``, read by ``compaction.activity``.)

One audit record per job (range × prompt version): the whole source binding,
the digest recomputed now (the planned segment's current digest; for a
rolling hand-off job its material's, ``HandoffPlan.current_digest``) and
whether it still matches, every attempt, the generation when there is one
and the verdict that stands on it (``review``: the newest review of that
generation that still stands, ``models.reviews``; null when none — never
reviewed, replaced by a newer generation, or its source changed after the
verdict). A hand-off job's binding also names its
parent generation and the parent note's digest, and, once its chain broke,
where (``chain_break``: the generation whose material changed and the first
changed pair); a hand-off job is valid only while its own material matches
and its chain is intact. The current digest and the newest review come from
correlated subqueries on the job query; attempts and reviewers are fetched
once per chunk of jobs, so a page or a whole export costs a fixed number of
queries per chunk, never one per job.

Serialisation to dicts, JSON lines and CSV rows lives here too so the paged
JSON, the JSONL export and the CSV export always carry the same fields.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator

from django.db.models import BooleanField, Case, F, OuterRef, QuerySet, Subquery, Value, When
from django.db.models.functions import NullIf

from conversations.selectors import in_scopes_of

from .bindings.handoff import HANDOFF_KIND
from .bindings.segments import current_digest_subquery
from .csvsafe import csv_cell
from .keyset import MAX_ID
from .models import Attempt, CompactionJob, DriftFinding, Review

ATTEMPT_FIELDS = (
    "number", "started_at", "finished_at", "outcome", "failure_code", "failure_detail",
    "finish_reason", "model", "input_tokens", "output_tokens", "latency_ms",
)


def iso(value) -> str | None:
    # The same spelling as DRF's DateTimeField, so paged JSON and exports agree.
    if value is None:
        return None
    text = value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _or_none(text: str) -> str | None:
    return text if text else None


# --- selectors ---------------------------------------------------------------

def audit_jobs(*, user) -> QuerySet[CompactionJob]:
    """Every job ``user`` may see, annotated with what an audit record needs."""
    # The verdict that stands on the job's summary (``models.reviews``): none
    # once the summary was replaced by a newer generation or its source
    # changed after the verdict.
    latest_review = Review.objects.standing_of_job(OuterRef("pk"))
    qs = (
        CompactionJob.objects.annotate(
            conversation_external_id=F("conversation__external_id"),
            prompt_version_name=F("prompt_version__name"),
            current_digest=Case(
                When(kind=HANDOFF_KIND, then=NullIf(F("handoff__current_digest"), Value(""))),
                default=current_digest_subquery(),
            ),
            latest_review_id=Subquery(latest_review.values("pk")[:1]),
            break_generation_id=F("handoff__break_generation_id"),
            break_pair=F("handoff__break_pair"),
        )
        .annotate(
            # NULL current digest (range no longer planned) compares unknown,
            # so it falls to the default: not valid. A hand-off job whose
            # chain broke above it is not valid either.
            source_valid=Case(
                When(kind=HANDOFF_KIND, source_changed_at__isnull=False, then=Value(False)),
                When(current_digest=F("source_digest"), then=Value(True)),
                default=Value(False),
                output_field=BooleanField(),
            )
        )
        .select_related("generation")
    )
    qs = in_scopes_of(qs, user=user)
    return qs


def audit_job_get(*, user, job_id: int) -> CompactionJob | None:
    if not 1 <= job_id <= MAX_ID:
        return None
    return audit_jobs(user=user).filter(pk=job_id).first()


# --- serialisation -------------------------------------------------------------

def _attempts_by_job(job_ids: list[int]) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {pk: [] for pk in job_ids}
    rows = (
        Attempt.objects.filter(job_id__in=job_ids)
        .order_by("job_id", "number")
        .values_list("job_id", *ATTEMPT_FIELDS)
    )
    for job_id, *values in rows:
        a = dict(zip(ATTEMPT_FIELDS, values))
        out[job_id].append({
            "number": a["number"],
            "started_at": iso(a["started_at"]),
            "finished_at": iso(a["finished_at"]),
            "outcome": a["outcome"],
            "failure_code": _or_none(a["failure_code"]),
            "failure_detail": a["failure_detail"],
            "finish_reason": _or_none(a["finish_reason"]),
            "model": a["model"],
            "input_tokens": a["input_tokens"],
            "output_tokens": a["output_tokens"],
            "latency_ms": a["latency_ms"],
        })
    return out


def _reviews_by_id(review_ids: list[int]) -> dict[int, dict]:
    if not review_ids:
        return {}
    rows = Review.objects.filter(pk__in=review_ids).values_list(
        "pk", "verdict", "reviewer__username", "note", "created_at"
    )
    return {
        pk: {"verdict": verdict, "reviewer": reviewer, "note": note, "created_at": iso(created_at)}
        for pk, verdict, reviewer, note, created_at in rows
    }


def _drift_by_job(jobs: list[CompactionJob]) -> dict[int, list[dict]]:
    """The drift findings of each rolling job's generation, in their order."""
    ids = [job.pk for job in jobs if job.kind == HANDOFF_KIND]
    out: dict[int, list[dict]] = {pk: [] for pk in ids}
    if not ids:
        return out
    findings = (DriftFinding.objects.filter(generation__job_id__in=ids)
                .order_by("generation_id", "position").annotate(job_id=F("generation__job_id")))
    for finding in findings:
        out[finding.job_id].append(finding.as_record())
    return out


def _generation(job: CompactionJob) -> dict | None:
    try:
        generation = job.generation
    except CompactionJob.generation.RelatedObjectDoesNotExist:
        return None
    return {
        "id": generation.pk,
        "number": generation.number,
        "text": generation.text,
        "created_at": iso(generation.created_at),
    }


def audit_records(jobs: list[CompactionJob]) -> list[dict]:
    """The audit records of ``jobs`` (from ``audit_jobs``), in their order:
    three queries for the whole list, whatever its length."""
    ids = [job.pk for job in jobs]
    attempts = _attempts_by_job(ids)
    reviews = _reviews_by_id([job.latest_review_id for job in jobs if job.latest_review_id])
    drift = _drift_by_job(jobs)
    return [
        {
            "job": job.pk,
            "scope": job.scope,
            "conversation": job.conversation_id,
            "conversation_external_id": job.conversation_external_id,
            "from_pair": job.from_pair,
            "to_pair": job.to_pair,
            "message_ids": list(job.message_ids),
            "source_digest": job.source_digest,
            "current_digest": job.current_digest,
            "source_valid": bool(job.source_valid),
            "model": job.model_id,
            "prompt_version": job.prompt_version_name,
            "state": job.state,
            "attempts_used": job.attempts_used,
            "max_attempts": job.max_attempts,
            "last_failure_code": _or_none(job.last_failure_code),
            "created_at": iso(job.created_at),
            "updated_at": iso(job.updated_at),
            "attempts": attempts[job.pk],
            "generation": _generation(job),
            "review": reviews.get(job.latest_review_id),
            # Added by issue 13 (rolling hand-off notes), at the end.
            "kind": job.kind,
            "parent_generation": job.parent_generation_id,
            "parent_digest": _or_none(job.parent_digest),
            "chain_break": ({"generation": job.break_generation_id, "pair": job.break_pair}
                            if job.break_pair is not None else None),
            # Rolling jobs' drift findings (SPEC §11; issue 14), null for segments.
            "drift": drift.get(job.pk),
        }
        for job in jobs
    ]


def audit_records_iter(queryset: QuerySet[CompactionJob], *, chunk_size: int = 500) -> Iterator[dict]:
    """Every record of ``queryset``, read through a server-side cursor
    (``iterator``) and completed a chunk at a time: memory stays at one
    chunk however many jobs match."""
    chunk: list[CompactionJob] = []
    for job in queryset.iterator(chunk_size=chunk_size):
        chunk.append(job)
        if len(chunk) >= chunk_size:
            yield from audit_records(chunk)
            chunk = []
    if chunk:
        yield from audit_records(chunk)


# --- export formats ---------------------------------------------------------------

CSV_COLUMNS = (
    "job", "scope", "conversation", "conversation_external_id", "from_pair", "to_pair", "message_ids",
    "source_digest", "current_digest", "source_valid", "model", "prompt_version", "state",
    "attempts_used", "max_attempts", "last_failure_code", "created_at", "updated_at", "attempts",
    "generation_id", "generation_number", "generation_text", "generation_created_at",
    "review_verdict", "review_reviewer", "review_note", "review_created_at",
    "kind", "parent_generation", "parent_digest", "chain_break", "drift",
)
# Nested values a spreadsheet cannot hold are written as JSON text.
_CSV_JSON = ("message_ids", "attempts")
_CSV_JSON_OR_EMPTY = ("chain_break", "drift")


def csv_row(record: dict) -> list[str]:
    flat = {k: v for k, v in record.items() if k not in ("generation", "review")}
    for key in _CSV_JSON:
        flat[key] = json.dumps(record[key], ensure_ascii=False, separators=(",", ":"))
    for key in _CSV_JSON_OR_EMPTY:
        if record.get(key) is not None:
            flat[key] = json.dumps(record[key], ensure_ascii=False, separators=(",", ":"))
    for prefix in ("generation", "review"):
        for key, value in (record[prefix] or {}).items():
            flat[f"{prefix}_{key}"] = value
    return [csv_cell(flat.get(column)) for column in CSV_COLUMNS]


class _Line:
    """A file-like object whose ``write`` hands the line back (csv.writer
    needs somewhere to write; we want the text, not a buffer)."""

    def write(self, value: str) -> str:
        return value


def csv_lines(records: Iterable[dict]) -> Iterator[str]:
    writer = csv.writer(_Line())
    yield writer.writerow(CSV_COLUMNS)
    for record in records:
        yield writer.writerow(csv_row(record))


def jsonl_lines(records: Iterable[dict]) -> Iterator[str]:
    for record in records:
        yield json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
