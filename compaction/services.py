"""Writes for the engine: planning, the atomic claim, attempts, generations,
leases (SPEC §5, seed 000 §3–§6).

Every function here is a service in the HackSoft sense: keyword-only
arguments, one transaction where it writes. The model call in ``job_run``
happens between transactions, never inside one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import socket
import time
from dataclasses import dataclass
from datetime import timedelta

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Case, Exists, F, Max, OuterRef, Q, Subquery, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone

from .admission import AdmissionTimeout, admitted
from .contract import LEASE_EXPIRED, PROVIDER_ERROR, SOURCE_CHANGED, TIMEOUT, ContractResult, ProviderResult, check
from .digest import digest_input, source_digest
from .metrics import CLAIMS, OVERHEAD, REAPED, attempt_observed, emit
from .models import Attempt, AttemptOutcome, CompactionJob, JobState, PromptVersion, SummaryGeneration
from .planning import is_valid_range
from .prepared import execute_prepared as _execute_prepared
from .providers import Answer, SummaryRequest, configured_model_id, provider_build, render_answers

logger = logging.getLogger(__name__)

# A job in one of these states has not produced anything yet, so a changed
# source simply makes it stale: it will never run against the old binding.
_STALEABLE = (JobState.PENDING, JobState.FAILED, JobState.EXHAUSTED)


def jobs_sources_changed(*, conversation, changes) -> int:
    """React to ranges whose digest moved. Called inside the ingest
    transaction (SPEC §5). Every job of such a range records whether its
    binding still matches (``source_changed_at``; cleared again if an edit
    is undone, which also revives a job that edit made stale), whatever its
    state, and an unfinished job bound to the old digest becomes stale.
    Returns how many jobs were made stale."""
    marked = 0
    revived: list[int] = []
    # A range planned anew (no old digest) has jobs only if it was planned
    # before and then dropped (a run stopped counting, the pairs came back):
    # those jobs were marked when it was dropped, and one bound to the
    # source the range has again is as it was before — an undo too.
    again = {change.from_pair for change in changes if change.old_digest is None and change.new_digest is not None}
    if again:
        again &= set(CompactionJob.objects.filter(conversation=conversation, from_pair__in=again,
                                                  source_changed_at__isnull=False)
                     .values_list("from_pair", flat=True).distinct())
    changes = [change for change in changes if change.old_digest is not None or change.from_pair in again]
    if not changes:
        return 0  # only new ranges that never had a job
    now = timezone.now()
    with transaction.atomic():
        for change in changes:
            jobs = CompactionJob.objects.filter(conversation=conversation, from_pair=change.from_pair)
            bound_elsewhere = jobs if change.new_digest is None else jobs.exclude(source_digest=change.new_digest)
            bound_elsewhere.filter(source_changed_at__isnull=True).update(source_changed_at=now, updated_at=now)
            if change.new_digest is not None:
                back = jobs.filter(source_digest=change.new_digest, source_changed_at__isnull=False)
                # An edit undone: a job made stale by it is as it was before.
                # Its binding is unique, so no new job could take its place.
                revived += list(back.filter(state=JobState.STALE, attempts_used__lt=F("max_attempts"))
                                .values_list("pk", flat=True))
                back.filter(state=JobState.STALE).update(
                    state=Case(When(attempts_used__lt=F("max_attempts"), then=Value(JobState.PENDING.value)),
                               default=Value(JobState.EXHAUSTED.value)))
                back.update(source_changed_at=None, updated_at=now)
            marked += bound_elsewhere.filter(state__in=_STALEABLE).update(state=JobState.STALE, updated_at=now)
    if revived:
        from .operations import enqueue_after_commit

        enqueue_after_commit(revived)
    return marked


def prompt_version_current() -> PromptVersion:
    return PromptVersion.objects.get(is_current=True)


def conversation_plan(*, conversation, prompt_version: PromptVersion | None = None,
                      model_id: str | None = None) -> list[CompactionJob]:
    """Create a pending job for every planned segment that has no job for its
    current binding (range, digest, model, prompt version). Idempotent: the
    unique binding constraint makes concurrent planners create each job once.
    Returns the jobs created by this call."""
    from conversations.models import Segment

    prompt_version = prompt_version or prompt_version_current()
    model_id = model_id or configured_model_id()
    created: list[CompactionJob] = []
    segments = Segment.objects.filter(conversation=conversation).order_by("from_pair")
    existing = set(
        CompactionJob.objects.filter(
            conversation=conversation, prompt_version=prompt_version, model_id=model_id
        ).values_list("from_pair", "source_digest")
    )
    for segment in segments:
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
            conversation_id=segment.conversation_id,
            from_pair=segment.from_pair,
            to_pair=segment.to_pair,
            prompt_version=prompt_version,
            model_id=model_id,
            source_digest=segment.digest,
            defaults={"scope": scope, "message_ids": segment.message_ids,
                      "max_attempts": settings.COMPACTION_MAX_ATTEMPTS},
        )


# --- Claim, run, finish (SPEC §5, seed 000 §5) ------------------------------

CLAIMABLE = (JobState.PENDING, JobState.FAILED)


@dataclass
class Claim:
    job: CompactionJob
    attempt: Attempt | None
    refused: str = ""  # why not, when attempt is None


@dataclass
class RunOutcome:
    job_id: int
    status: str  # succeeded / failed / exhausted / stale / skipped / deferred / lost
    failure_code: str = ""
    attempt: int | None = None
    generation_id: int | None = None
    detail: str = ""
    overhead_ms: float | None = None


def worker_identity() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def binding_problem(job: CompactionJob) -> str:
    """The static half of the claim rule: a range on a multiple of 10, exactly
    10 pairs, 20 distinct non-empty message ids. Empty when valid."""
    if not is_valid_range(job.from_pair, job.to_pair):
        return f"range {job.from_pair}-{job.to_pair} is not 10 pairs starting on a multiple of 10"
    ids = job.message_ids if isinstance(job.message_ids, list) else []
    if len(ids) != 20 or any(not isinstance(i, str) or not i for i in ids) or len(set(ids)) != 20:
        return "the binding does not list 20 distinct, non-empty message ids"
    return ""


def _current_digest_subquery():
    from conversations.models import Segment

    return Subquery(
        Segment.objects.filter(
            conversation_id=OuterRef("conversation_id"), from_pair=OuterRef("from_pair"), to_pair=OuterRef("to_pair")
        ).values("digest")[:1]
    )


def current_digest(job: CompactionJob) -> str | None:
    from conversations.models import Segment

    return (
        Segment.objects.filter(conversation_id=job.conversation_id, from_pair=job.from_pair, to_pair=job.to_pair)
        .values_list("digest", flat=True)
        .first()
    )


def _mark_stale(job_id: int, *, from_states=CLAIMABLE) -> bool:
    return bool(
        CompactionJob.objects.filter(pk=job_id, state__in=from_states)
        .update(state=JobState.STALE, lease_owner="", lease_expires_at=None, updated_at=timezone.now())
    )


# The binding's 20 message ids must be distinct and non-empty, checked in
# the same statement (the JSON functions differ per database).
_IDS_OK_PG = """(SELECT count(DISTINCT x) FROM jsonb_array_elements_text(j.message_ids) AS x
                WHERE x <> '') = 20 AND jsonb_array_length(j.message_ids) = 20"""
_IDS_OK_SQLITE = """(SELECT count(DISTINCT value) FROM json_each(j.message_ids)
                    WHERE type = 'text' AND value <> '') = 20 AND json_array_length(j.message_ids) = 20"""

_CLAIM_WHERE = """
    WHERE j.id = %s
      AND j.state IN ('pending', 'failed')
      AND j.attempts_used < j.max_attempts
      AND j.from_pair %% 10 = 0 AND j.to_pair = j.from_pair + 9
      AND j.model_id = %s AND j.prompt_version_id = %s
      AND (CAST(%s AS integer) IS NULL OR j.attempts_used = CAST(%s AS integer))
      AND j.source_digest = (
          SELECT s.digest FROM conversations_segment s
          WHERE s.conversation_id = j.conversation_id AND s.from_pair = j.from_pair AND s.to_pair = j.to_pair)
      AND {ids_ok}
"""

# PostgreSQL: the claim and its attempt row are one statement.
_CLAIM_PG = """
WITH claimed AS (
    UPDATE compaction_compactionjob AS j
    SET state = 'running', attempts_used = j.attempts_used + 1, lease_owner = %s,
        lease_expires_at = %s, updated_at = %s
""" + _CLAIM_WHERE.format(ids_ok=_IDS_OK_PG) + """
    RETURNING j.id, j.attempts_used
)
INSERT INTO compaction_attempt (job_id, number, worker, started_at, outcome, failure_code, failure_detail,
                                model, finish_reason, raw_output, raw_output_truncated)
SELECT id, attempts_used, %s, %s, 'running', '', '', %s, '', '', false FROM claimed
RETURNING id, number
"""

# Elsewhere (SQLite): the same conditional UPDATE, then the attempt row, in
# one transaction; SQLite's single writer makes the pair atomic.
_CLAIM_UPDATE = """
UPDATE compaction_compactionjob AS j
SET state = 'running', attempts_used = j.attempts_used + 1, lease_owner = %s,
    lease_expires_at = %s, updated_at = %s
""" + _CLAIM_WHERE.format(ids_ok=_IDS_OK_SQLITE) + """
RETURNING attempts_used
"""


def job_claim(*, job_id: int | None = None, job: CompactionJob | None = None, worker: str, model_id: str,
              prompt_version_id: int | None = None, lease_seconds: int | None = None,
              expected_attempts_used: int | None = None) -> Claim:
    """Claim a job for one attempt with ONE conditional UPDATE.

    The UPDATE succeeds only if, at that instant, the job is pending or failed,
    has attempts left, covers 10 pairs starting on a multiple of 10, is bound
    to this model and prompt version, and its digest equals the range's
    current digest. Two workers racing: exactly one sees a row. The attempt
    row is written in the same statement (PostgreSQL) or transaction. A
    refused claim says why; a digest mismatch makes the job ``stale``. The
    20 distinct non-empty ids are checked before (they never change after a
    job is created, so that check cannot race).
    """
    if job is None:
        job = CompactionJob.objects.select_related("prompt_version").get(pk=job_id)
    prompt_version_id = prompt_version_id or job.prompt_version_id
    problem = binding_problem(job)
    if problem:
        if _mark_stale(job.pk):
            logger.warning("job %s made stale: %s", job.pk, problem)
        CLAIMS.labels(result="invalid_binding").inc()
        return Claim(job, None, "invalid_binding")
    lease = lease_seconds if lease_seconds is not None else settings.COMPACTION_LEASE_SECONDS
    now = timezone.now()
    expires = now + timedelta(seconds=lease)
    where = [job.pk, model_id, prompt_version_id, expected_attempts_used, expected_attempts_used]
    if connection.vendor == "postgresql":
        # One statement, so autocommit makes it its own transaction.
        row = _execute_prepared(_CLAIM_PG, [worker, expires, now, *where, worker, now, model_id])
        attempt = Attempt(pk=row[0], job=job, number=row[1], worker=worker, started_at=now,
                          model=model_id) if row else None
        if attempt is not None:
            attempt._state.adding = False
    else:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(_CLAIM_UPDATE, [worker, expires, now, *where])
            row = cursor.fetchone()
            attempt = Attempt.objects.create(job=job, number=row[0], worker=worker, started_at=now,
                                             model=model_id) if row else None
    if attempt is not None:
        job.state, job.attempts_used, job.lease_owner, job.lease_expires_at = (
            JobState.RUNNING, attempt.number, worker, expires)
        # A prompt version is frozen the first time a job uses it.
        if job.prompt_version_id != prompt_version_id or job.prompt_version.frozen_at is None:
            PromptVersion.objects.filter(pk=prompt_version_id, frozen_at__isnull=True).update(frozen_at=now)
        CLAIMS.labels(result="claimed").inc()
        return Claim(job, attempt)
    job.refresh_from_db()
    refused = _refusal(job, model_id=model_id, prompt_version_id=prompt_version_id,
                       expected_attempts_used=expected_attempts_used)
    CLAIMS.labels(result=refused).inc()
    return Claim(job, None, refused)


def _refusal(job: CompactionJob, *, model_id: str, prompt_version_id: int,
             expected_attempts_used: int | None = None) -> str:
    if job.state not in CLAIMABLE:
        return f"state_{job.state}"
    if expected_attempts_used is not None and job.attempts_used != expected_attempts_used:
        return "attempt_already_made"
    if job.attempts_used >= job.max_attempts:
        CompactionJob.objects.filter(pk=job.pk, state=JobState.FAILED,
                                     attempts_used__gte=F("max_attempts")).update(state=JobState.EXHAUSTED)
        return "no_attempts_left"
    if job.model_id != model_id:
        return "model_mismatch"
    if job.prompt_version_id != prompt_version_id:
        return "prompt_version_mismatch"
    if current_digest(job) != job.source_digest:
        # Conditional too: only a claimable job whose binding still differs.
        CompactionJob.objects.filter(pk=job.pk, state__in=CLAIMABLE).exclude(
            source_digest=Coalesce(_current_digest_subquery(), Value(""))
        ).update(state=JobState.STALE, updated_at=timezone.now())
        return "source_changed"
    return "lost_race"


_job_load_plan: dict = {}


def _job_load_sql():
    """The load statement and each column's converters, built once per
    database vendor."""
    from conversations.models import Message

    vendor = connection.vendor
    if vendor not in _job_load_plan:
        qn = connection.ops.quote_name
        job_fields = CompactionJob._meta.concrete_fields
        pv_fields = PromptVersion._meta.concrete_fields
        cols = [f"j.{qn(f.column)}" for f in job_fields] + [f"p.{qn(f.column)}" for f in pv_fields]
        if vendor == "postgresql":
            # A claimable job's bound messages come in the same statement, as
            # JSON pairs; a job that is not claimable reads none.
            cols.append(
                f"""CASE WHEN j.state IN ('pending', 'failed') THEN (
                    SELECT json_agg(json_build_array(m.external_id, m.content))::text
                    FROM {qn(Message._meta.db_table)} m
                    WHERE m.conversation_id = j.conversation_id
                      AND m.external_id IN (SELECT jsonb_array_elements_text(j.message_ids))) END""")
        sql = (
            f"SELECT {', '.join(cols)} FROM {qn(CompactionJob._meta.db_table)} j "
            f"JOIN {qn(PromptVersion._meta.db_table)} p ON p.{qn('id')} = j.{qn('prompt_version_id')} "
            f"WHERE j.{qn('id')} = %s"
        )
        # What the ORM applies per column: the field's and the backend's
        # converters (JSON decoding; SQLite's datetimes and booleans).
        converters = [
            (f.get_db_converters(connection) + connection.ops.get_db_converters(f.cached_col), f.cached_col)
            for f in (*job_fields, *pv_fields)
        ]
        _job_load_plan[vendor] = (sql, job_fields, pv_fields, converters)
    return _job_load_plan[vendor]


def job_load(job_id: int) -> CompactionJob | None:
    """The job with its prompt version, in one plain SELECT; on PostgreSQL a
    claimable job's bound messages come with it (``job.bound_messages``, a
    dict of external id to content; absent elsewhere).

    The same row ``select_related("prompt_version")`` reads, but without
    compiling a queryset: on the per-job hot path (and on every redelivered
    no-op message) Django's query compilation cost more than the query.
    Reading the messages before the claim is safe: ``job_request_build``
    checks that they give the bound digest, and the finish checks that the
    digest is still the range's current one.
    """
    sql, job_fields, pv_fields, converters = _job_load_sql()
    if connection.vendor == "postgresql":
        row = _execute_prepared(sql, [job_id])
    else:
        with connection.cursor() as cursor:
            cursor.execute(sql, [job_id])
            row = cursor.fetchone()
    if row is None:
        return None
    values = []
    for (convert, expression), value in zip(converters, row):
        for converter in convert:
            value = converter(value, expression, connection)
        values.append(value)
    n = len(job_fields)
    job = CompactionJob.from_db(connection.alias, [f.attname for f in job_fields], values[:n])
    job.prompt_version = PromptVersion.from_db(connection.alias, [f.attname for f in pv_fields],
                                               values[n:n + len(pv_fields)])
    if len(row) > len(values) and row[-1] is not None:
        job.bound_messages = dict(json.loads(row[-1]))
    return job


def job_request_build(*, job: CompactionJob, attempt: Attempt) -> tuple[SummaryRequest | None, str]:
    """Read the bound messages and render the request from the ten assistant
    answers only. Returns (None, why) when what is stored no longer matches
    the binding, so a summary is never made of anything but its source."""
    from conversations.models import Message

    ids = job.message_ids
    stored = getattr(job, "bound_messages", None)  # read with the job by ``job_load``
    if stored is None:
        # Plain SQL for the same reason as ``job_load``: this runs once per job.
        table = connection.ops.quote_name(Message._meta.db_table)
        marks = ", ".join(["%s"] * len(ids))
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT external_id, content FROM {table} WHERE conversation_id = %s "
                           f"AND external_id IN ({marks})", [job.conversation_id, *ids])
            stored = dict(cursor.fetchall())
    if len(stored) != len(ids):
        return None, "a bound message no longer exists"
    pairs = []
    for offset in range(10):
        user_id, assistant_id = ids[2 * offset], ids[2 * offset + 1]
        pairs.append(digest_input(job.from_pair + offset, user_id, stored[user_id], assistant_id,
                                  stored[assistant_id]))
    if source_digest(pairs) != job.source_digest:
        return None, "the stored messages no longer give the bound digest"
    answers = tuple(Answer(p["assistant"]["id"], p["assistant"]["text"]) for p in pairs)
    pv = job.prompt_version
    rendered = render_answers(answers)
    request = SummaryRequest(
        answers=answers,
        system=pv.system_template,
        user=pv.user_template.replace("{answers}", rendered),
        prompt_version=pv.name,
        job_id=job.pk,
        attempt=attempt.number,
    )
    return request, ""


def _storable(result: ProviderResult) -> ProviderResult:
    """What a provider sent, as the database can keep it: a NUL (which
    PostgreSQL text and jsonb refuse) becomes U+FFFD in the raw output,
    detail, model, finish reason and tool calls kept for review. A text
    with control characters never passes the contract, so no summary is
    ever altered by this."""
    def clean(value):
        return value.replace("\x00", "\ufffd") if isinstance(value, str) else value

    tool_calls = result.tool_calls
    if tool_calls and "\\u0000" in json.dumps(tool_calls):
        tool_calls = json.loads(json.dumps(tool_calls).replace("\\u0000", "\\ufffd"))
    return dataclasses.replace(result, text=clean(result.text), finish_reason=clean(result.finish_reason),
                               model=clean(result.model), error_detail=clean(result.error_detail),
                               raw=clean(result.raw), tool_calls=tool_calls)


def _cap(text: str) -> tuple[str, bool]:
    cap = settings.COMPACTION_RAW_OUTPUT_CAP
    return (text[:cap], True) if len(text) > cap else (text, False)


def attempt_finish(*, job: CompactionJob, attempt: Attempt, worker: str, result: ProviderResult,
                   judged: ContractResult) -> RunOutcome:
    """Record an attempt's end and move the job on, in one transaction.

    The job moves only if this worker still holds it (state running, same
    lease owner, same attempt number): a reaped attempt's late answer is
    dropped. A good answer becomes a generation only if the range's current
    digest still equals the binding — checked in the same conditional UPDATE
    — otherwise the attempt fails ``source_changed`` and the job is ``stale``.
    """
    from conversations.models import Conversation

    now = timezone.now()
    result = _storable(result)
    raw, truncated = _cap(result.raw or result.text or "")
    code, detail = judged.failure_code, judged.detail.replace("\x00", "\ufffd")
    if not code and connection.vendor == "postgresql":
        fast = _finish_success_pg(job=job, attempt=attempt, worker=worker, result=result, raw=raw,
                                  truncated=truncated, now=now)
        if fast is not None:
            return fast
        # Nothing moved: the source changed or the lease was lost; the
        # general path below finds out which and records it.
    released = {"lease_owner": "", "lease_expires_at": None, "updated_at": now}
    with transaction.atomic():
        mine = CompactionJob.objects.filter(pk=job.pk, state=JobState.RUNNING, lease_owner=worker,
                                            attempts_used=attempt.number)
        if not code:
            # Serialises generation numbering per conversation.
            Conversation.objects.select_for_update().filter(pk=job.conversation_id).values_list("pk").first()
            if mine.filter(source_digest=_current_digest_subquery()).update(
                    state=JobState.SUCCEEDED, last_failure_code="", **released):
                state = JobState.SUCCEEDED
            elif mine.exists():
                code, detail = SOURCE_CHANGED, "the source changed while the attempt ran"
            else:
                state = None
        if code == SOURCE_CHANGED:
            state = JobState.STALE if mine.update(state=JobState.STALE, last_failure_code=code, **released) else None
        elif code:
            state = JobState.EXHAUSTED if attempt.number >= job.max_attempts else JobState.FAILED
            moved = mine.filter(source_digest=_current_digest_subquery()).update(
                state=Case(When(attempts_used__gte=F("max_attempts"), then=Value(JobState.EXHAUSTED.value)),
                           default=Value(JobState.FAILED.value)),
                last_failure_code=code, **released)
            if not moved:
                # The source changed while the attempt ran: the ingest could
                # not stale a running job, so its end does (README).
                state = JobState.STALE
                moved = mine.update(state=JobState.STALE, last_failure_code=code, **released)
            state = state if moved else None
        if state is None:
            return RunOutcome(job.pk, "lost", attempt=attempt.number,
                              detail="the lease was lost before the attempt finished; its result is dropped")
        Attempt.objects.filter(pk=attempt.pk).update(
            finished_at=now,
            outcome=AttemptOutcome.FAILED if code else AttemptOutcome.SUCCEEDED,
            failure_code=code,
            failure_detail=detail[:2000],
            model=result.model or job.model_id,
            finish_reason=(result.finish_reason or "")[:50],
            input_tokens=result.input_tokens,
            output_tokens=result.output_tokens,
            latency_ms=result.latency_ms,
            raw_output=raw,
            raw_output_truncated=truncated,
            tool_calls=result.tool_calls or None,
        )
        job.state = state
        if code:
            return RunOutcome(job.pk, state, failure_code=code, attempt=attempt.number, detail=detail)
        number = (SummaryGeneration.objects.filter(conversation_id=job.conversation_id)
                  .aggregate(n=Max("number"))["n"] or 0) + 1
        generation = SummaryGeneration.objects.create(
            job=job, conversation_id=job.conversation_id, number=number, text=result.text,
            text_bytes=len(result.text.encode("utf-8")), scope=job.scope, from_pair=job.from_pair,
            to_pair=job.to_pair, message_ids=job.message_ids, source_digest=job.source_digest,
            model_id=job.model_id, prompt_version_id=job.prompt_version_id,
        )
        return RunOutcome(job.pk, JobState.SUCCEEDED, attempt=attempt.number, generation_id=generation.pk)


_FINISH_SUCCESS_PG = """
WITH moved AS (
    UPDATE compaction_compactionjob AS j
    SET state = 'succeeded', last_failure_code = '', lease_owner = '', lease_expires_at = NULL, updated_at = %s
    WHERE j.id = %s AND j.state = 'running' AND j.lease_owner = %s AND j.attempts_used = %s
      AND j.source_digest = (
          SELECT s.digest FROM conversations_segment s
          WHERE s.conversation_id = j.conversation_id AND s.from_pair = j.from_pair AND s.to_pair = j.to_pair)
    RETURNING j.id, j.conversation_id
), finished AS (
    UPDATE compaction_attempt
    SET finished_at = %s, outcome = 'succeeded', failure_code = '', failure_detail = '', model = %s,
        finish_reason = %s, input_tokens = %s, output_tokens = %s, latency_ms = %s, raw_output = %s,
        raw_output_truncated = %s, tool_calls = NULL
    WHERE id = %s AND EXISTS (SELECT 1 FROM moved)
)
INSERT INTO compaction_summarygeneration (job_id, conversation_id, number, text, text_bytes, scope, from_pair,
                                          to_pair, message_ids, source_digest, model_id, prompt_version_id,
                                          created_at)
SELECT m.id, m.conversation_id,
       COALESCE((SELECT MAX(g.number) FROM compaction_summarygeneration g
                 WHERE g.conversation_id = m.conversation_id), 0) + 1,
       %s, %s, %s, %s, %s, %s::jsonb, %s, %s, %s, %s
FROM moved m
RETURNING id, number
"""


def _finish_success_pg(*, job, attempt, worker, result, raw, truncated, now) -> RunOutcome | None:
    """PostgreSQL: a good attempt's whole finish — the job's conditional move
    (still ours, digest still current), the attempt's record and the
    generation — as ONE statement, hence one transaction. Two finishes in one
    conversation that pick the same generation number collide on the unique
    constraint and the loser retries. None when nothing moved."""
    params = [
        now, job.pk, worker, attempt.number,
        now, result.model or job.model_id, (result.finish_reason or "")[:50], result.input_tokens,
        result.output_tokens, result.latency_ms, raw, truncated, attempt.pk,
        result.text, len(result.text.encode("utf-8")), job.scope, job.from_pair, job.to_pair,
        json.dumps(job.message_ids), job.source_digest, job.model_id, job.prompt_version_id, now,
    ]
    # One statement is its own transaction in autocommit; inside an outer
    # transaction (tests, callers) a savepoint keeps a collision local.
    atomic = transaction.atomic if connection.in_atomic_block else contextlib.nullcontext
    for _ in range(20):
        try:
            with atomic():
                row = _execute_prepared(_FINISH_SUCCESS_PG, params)
        except IntegrityError:
            continue  # a concurrent finish took that number; count again
        if row is None:
            return None
        job.state = JobState.SUCCEEDED
        return RunOutcome(job.pk, JobState.SUCCEEDED, attempt=attempt.number, generation_id=row[0])
    raise RuntimeError(f"job {job.pk}: could not number its generation after 20 tries")


_provider_cache: dict = {}


def provider_get():
    """One provider per process, rebuilt when its settings change (tests)."""
    key = (settings.COMPACTION_PROVIDER, settings.COMPACTION_MODEL, settings.OPENAI_BASE_URL,
           settings.OPENAI_TIMEOUT_SECONDS, settings.COMPACTION_FAULT_RATE, settings.COMPACTION_FAULT_KIND)
    if key not in _provider_cache:
        _provider_cache.clear()
        _provider_cache[key] = provider_build()
    return _provider_cache[key]


def job_run(*, job_id: int, provider=None, worker: str | None = None,
            expected_attempts_used: int | None = None) -> RunOutcome:
    """One attempt at one job, end to end: admission, claim, request, model
    call (outside any transaction), contract, finish. Idempotent: a job that
    is not claimable (running elsewhere, done, stale, out of attempts) is
    left alone, so a redelivered task never makes a second attempt."""
    started = time.perf_counter()
    provider = provider or provider_get()
    worker = worker or worker_identity()
    job = job_load(job_id)
    if job is None:
        return RunOutcome(job_id, "skipped", detail="no such job")
    if job.state not in CLAIMABLE:
        return RunOutcome(job_id, "skipped", detail=f"job is {job.state}")
    if expected_attempts_used is not None and job.attempts_used != expected_attempts_used:
        return RunOutcome(job_id, "skipped", detail="attempt_already_made")
    provider_seconds = 0.0
    try:
        with admitted():
            claim = job_claim(job=job, worker=worker, model_id=provider.model_id,
                              prompt_version_id=job.prompt_version_id,
                              expected_attempts_used=expected_attempts_used)
            if claim.attempt is None:
                status = "stale" if claim.refused in ("source_changed", "invalid_binding") else "skipped"
                return RunOutcome(job_id, status, detail=claim.refused)
            job, attempt = claim.job, claim.attempt
            fields = _event_fields(job, attempt)
            emit("compacting", **fields)
            request, problem = job_request_build(job=job, attempt=attempt)
            if request is None:
                result = ProviderResult(model=provider.model_id)
                judged = ContractResult(False, SOURCE_CHANGED, problem)
            else:
                t = time.perf_counter()
                result = _call(provider, request)
                provider_seconds = time.perf_counter() - t
                judged = check(result)
    except AdmissionTimeout as exc:
        return RunOutcome(job_id, "deferred", detail=str(exc))
    outcome = attempt_finish(job=job, attempt=attempt, worker=worker, result=result, judged=judged)
    overhead = time.perf_counter() - started - provider_seconds
    outcome.overhead_ms = overhead * 1000
    OVERHEAD.observe(overhead)
    if outcome.status != "lost":
        attempt_observed(outcome="failed" if outcome.failure_code else "succeeded",
                         failure_code=outcome.failure_code, input_tokens=result.input_tokens,
                         output_tokens=result.output_tokens, latency_ms=result.latency_ms)
    fields.update(state=outcome.status, failure_code=outcome.failure_code or None,
                  input_tokens=result.input_tokens, output_tokens=result.output_tokens,
                  latency_ms=result.latency_ms, generation=outcome.generation_id)
    emit("compaction_failed" if outcome.failure_code or outcome.status == "lost" else "compacted", **fields)
    return outcome


def _call(provider, request) -> ProviderResult:
    try:
        return provider.summarise(request)
    except SoftTimeLimitExceeded:
        return ProviderResult(model=provider.model_id, error=TIMEOUT, error_detail="the task's soft time limit ran out")
    except Exception as exc:  # a provider bug is a provider error, recorded, not a crash
        logger.exception("provider %s raised", provider.name)
        return ProviderResult(model=provider.model_id, error=PROVIDER_ERROR,
                              error_detail=f"{type(exc).__name__}: {exc}")


def _event_fields(job: CompactionJob, attempt: Attempt) -> dict:
    return {"job": job.pk, "conversation": job.conversation_id, "scope": job.scope,
            "range": [job.from_pair, job.to_pair], "attempt": attempt.number,
            "prompt_version": job.prompt_version.name, "model": job.model_id}


# --- Leases, retries, scanning ----------------------------------------------

def jobs_reap_expired(*, now=None) -> list[int]:
    """Every running job whose lease ran out (its worker died or hung) loses
    its attempt as ``lease_expired``: the job becomes failed, or exhausted
    when that was its last attempt (stale if its source changed meanwhile).
    Conditional per job, so two reapers and
    a late-finishing worker cannot both win."""
    now = now or timezone.now()
    reaped = []
    for job_id, owner, used in CompactionJob.objects.filter(
        state=JobState.RUNNING, lease_expires_at__lt=now
    ).values_list("pk", "lease_owner", "attempts_used"):
        with transaction.atomic():
            expired = CompactionJob.objects.filter(pk=job_id, state=JobState.RUNNING, lease_owner=owner,
                                                   attempts_used=used, lease_expires_at__lt=now)
            released = {"lease_owner": "", "lease_expires_at": None, "last_failure_code": LEASE_EXPIRED,
                        "updated_at": now}
            current = expired.filter(source_digest=_current_digest_subquery())
            moved = current.filter(attempts_used__gte=F("max_attempts")).update(state=JobState.EXHAUSTED,
                                                                               **released)
            moved = moved or current.update(state=JobState.FAILED, **released)
            # A source that changed meanwhile: the job is stale, as the
            # ingest would have made it had it not been running.
            moved = moved or expired.update(state=JobState.STALE, **released)
            if not moved:
                continue
            Attempt.objects.filter(job_id=job_id, number=used, outcome=AttemptOutcome.RUNNING).update(
                finished_at=now, outcome=AttemptOutcome.FAILED, failure_code=LEASE_EXPIRED,
                failure_detail=f"the lease held by {owner} expired before the attempt finished")
        reaped.append(job_id)
        REAPED.inc()
        attempt_observed(outcome="failed", failure_code=LEASE_EXPIRED, input_tokens=None, output_tokens=None,
                         latency_ms=None)
        emit("compaction_failed", job=job_id, attempt=used, failure_code=LEASE_EXPIRED, worker=owner)
    return reaped


def jobs_take_due(*, now=None, retry_delay: int | None = None, orphan_after: int | None = None,
                  limit: int = 500) -> list[int]:
    """Jobs the scanner should (re-)enqueue: failed jobs with attempts left
    whose retry delay has passed, and pending jobs nobody touched for a long
    time (their message was lost). Each is touched with a conditional UPDATE
    so concurrent scanners enqueue it once per delay."""
    now = now or timezone.now()
    retry_delay = settings.COMPACTION_RETRY_DELAY_SECONDS if retry_delay is None else retry_delay
    orphan_after = settings.COMPACTION_LEASE_SECONDS if orphan_after is None else orphan_after
    retry_cut = now - timedelta(seconds=retry_delay)
    orphan_cut = now - timedelta(seconds=orphan_after)
    due = (
        Q(state=JobState.FAILED, attempts_used__lt=F("max_attempts"), updated_at__lte=retry_cut)
        | Q(state=JobState.PENDING, updated_at__lte=orphan_cut)
    )
    # Only jobs this deployment's model can claim (another model's would be
    # refused and sent again at every scan), and only the job that counts
    # for its range (an older prompt version's failure is not retried).
    candidates = CompactionJob.objects.filter(due, model_id=configured_model_id()).not_superseded()
    taken = []
    for job_id, updated_at in candidates.order_by("updated_at").values_list("pk", "updated_at")[:limit]:
        if CompactionJob.objects.filter(pk=job_id, updated_at=updated_at).filter(due).update(updated_at=now):
            taken.append(job_id)
    return taken


def conversations_unplanned(*, limit: int = 100) -> list[int]:
    """Conversations with a planned range that has no job for its current
    binding under the current prompt version and model."""
    from conversations.models import Segment

    try:
        pv = prompt_version_current()
        model_id = configured_model_id()
    except (PromptVersion.DoesNotExist, ValueError):
        return []
    has_job = CompactionJob.objects.filter(
        conversation_id=OuterRef("conversation_id"), from_pair=OuterRef("from_pair"),
        source_digest=OuterRef("digest"), prompt_version=pv, model_id=model_id,
    )
    return list(
        Segment.objects.filter(~Exists(has_job)).values_list("conversation_id", flat=True).distinct()[:limit]
    )


def jobs_enqueue(job_ids) -> None:
    """Send one ``run_job`` message per job, each naming the attempt it is
    for (the job's attempts used now), so duplicates are harmless."""
    from .tasks import run_job

    job_ids = list(job_ids)
    used = dict(CompactionJob.objects.filter(pk__in=job_ids).values_list("pk", "attempts_used"))
    for job_id in job_ids:
        if job_id in used:
            run_job.delay(job_id, used[job_id])


def conversations_changed(*, conversation_ids: list[int]) -> None:
    """Called inside an ingest transaction: once it commits, one background
    message plans the new ranges of all these conversations (a single
    ingest's one, or a bulk import group's)."""
    if not settings.COMPACTION_AUTO_PLAN or not conversation_ids:
        return
    conversation_ids = list(conversation_ids)

    def send():
        from .tasks import plan_conversations

        plan_conversations.delay(conversation_ids)

    transaction.on_commit(send, robust=True)


def conversation_plan_and_enqueue(*, conversation) -> list[CompactionJob]:
    """Plan, then enqueue each new job once the planning has committed."""
    from .operations import enqueue_after_commit

    with transaction.atomic():
        created = conversation_plan(conversation=conversation)
        enqueue_after_commit([j.pk for j in created])
    return created
