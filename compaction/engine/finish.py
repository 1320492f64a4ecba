"""An attempt's end (SPEC §5): recorded, and the job moved on, in one
transaction; a good answer becomes an immutable generation.

The job moves only if this worker still holds it (state running, same lease
owner, same attempt number): a reaped attempt's late answer is dropped. A
good answer becomes a generation only if the job's binding is still current
(``Binding.current_sql``) — checked in the same conditional UPDATE —
otherwise the attempt fails ``source_changed`` and the job is ``stale``.
The generation copies the whole binding in, so it stands on its own.

Whatever a provider sent ends the attempt with a record (issue 12): what
the database cannot hold is escaped or cut first (``_storable``), and a
reply the database refuses all the same is recorded as ``unstorable_text``
with what arrived in ASCII. An outage is not handled here but by the
caller, which retries the whole finish (``engine.outages``): a finish is
safe to run again, and one whose first try was written although its reply
was lost reports what that try recorded. ``attempt_release`` ends an
attempt that an outage ate without counting it; ``attempt_settle`` ends one
a worker handed on because the database stayed away.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
from dataclasses import dataclass

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Max
from django.utils import timezone

from conversations.models import Conversation

from .. import bindings
from ..bindings.base import Binding
from ..contract import (LEASE_EXPIRED, SOURCE_CHANGED, UNSTORABLE_TEXT, ContractResult, ProviderResult,
                        escape_unstorable)
from ..models import Attempt, AttemptOutcome, CompactionJob, JobState, SummaryGeneration
from .attempts import failure_state, limit_given_back, state_after_failure
from .dispatch import jobs_enqueue_after_commit
from .leases import lease_held
from .outages import INFRASTRUCTURE
from .prepared import execute_prepared

logger = logging.getLogger(__name__)


@dataclass
class RunOutcome:
    job_id: int
    # succeeded / failed / exhausted / stale: the attempt's end was recorded;
    # skipped / deferred: no attempt was made; lost: the lease was lost first;
    # released: an outage ate the attempt, given back (outcome infrastructure);
    # handed_off: the database stayed away, the end was sent to settle_attempt.
    status: str
    failure_code: str = ""
    attempt: int | None = None
    generation_id: int | None = None
    detail: str = ""
    overhead_ms: float | None = None


LOST = "the lease was lost before the attempt finished; its result is dropped"


_INT_MAX = 2**31 - 1  # PostgreSQL integer; the counts are PositiveIntegerFields


def _storable(result: ProviderResult) -> ProviderResult:
    """What a provider sent, as the database can keep it, whatever it was:
    every text field with what PostgreSQL text and jsonb refuse (NUL, lone
    surrogates) escaped (``contract.escape_unstorable``), the model name cut
    to its column with a note of its real length, counts outside the
    column's range dropped. The summary text is escaped too, but a text
    that needed it never passes the contract (``unstorable_text``), so no
    summary is ever altered by this."""
    def clean(value):
        if isinstance(value, str):
            return escape_unstorable(value)
        if isinstance(value, list):
            return [clean(v) for v in value]
        if isinstance(value, dict):
            return {clean(str(k)): clean(v) for k, v in value.items()}
        return value

    def count(value):
        return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _INT_MAX else None

    finish_reason = result.finish_reason if result.finish_reason is None else str(result.finish_reason)
    return dataclasses.replace(
        result, text=clean(result.text), finish_reason=clean(finish_reason),
        model=_fit(clean(result.model if isinstance(result.model, str) else str(result.model or "")),
                   Attempt._meta.get_field("model").max_length),
        error_detail=clean(str(result.error_detail or "")), raw=clean(str(result.raw or "")),
        tool_calls=_capped_json(clean(result.tool_calls)) if result.tool_calls else result.tool_calls,
        input_tokens=count(result.input_tokens), output_tokens=count(result.output_tokens),
        latency_ms=count(result.latency_ms))


def _fit(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters; a cut one says so and how long it was."""
    if len(text) <= limit:
        return text
    note = f"… ({len(text):,} characters, cut)"
    return text[: limit - len(note)] + note


def _capped_json(value):
    """Tool calls kept for review up to the raw output cap; beyond it, their
    JSON text cut, so a reply of any size is recorded."""
    text = json.dumps(value, ensure_ascii=False)
    cap = settings.COMPACTION_RAW_OUTPUT_CAP
    if len(text) <= cap:
        return value
    return [{"truncated": True, "characters": len(text), "json": text[:cap]}]


def _cap(text: str) -> tuple[str, bool]:
    cap = settings.COMPACTION_RAW_OUTPUT_CAP
    return (text[:cap], True) if len(text) > cap else (text, False)


def attempt_finish(*, job: CompactionJob, attempt: Attempt, worker: str, result: ProviderResult,
                   judged: ContractResult) -> RunOutcome:
    """Record an attempt's end and move the job on, in one transaction (see
    the module docstring). An infrastructure error is raised for the caller
    to retry; any other refusal of the database ends the attempt as
    ``unstorable_text``."""
    binding = bindings.binding_for(job.kind)
    try:
        return _record(job=job, attempt=attempt, worker=worker, result=_storable(result), judged=judged,
                       binding=binding)
    except (*INFRASTRUCTURE, SoftTimeLimitExceeded):
        raise  # not the reply's doing: the caller retries, or hands the answer on
    except Exception as exc:  # noqa: BLE001 - whatever the reply held, the attempt ends recorded
        # A value no rule above foresaw, refused by the database (or by the
        # driver encoding it): the reply is still kept, in ASCII.
        logger.exception("job %s attempt %s: the reply could not be recorded as it came", job.pk, attempt.number)
        refused = ProviderResult(model=_ascii(result.model)[:200], raw=_cap(_ascii(result.raw or result.text))[0],
                                 finish_reason=_ascii(result.finish_reason)[:50], latency_ms=None)
        judged = ContractResult(False, UNSTORABLE_TEXT, f"the reply could not be recorded as it came: "
                                f"{type(exc).__name__}: {ascii(str(exc))[:1500]}")
        return _record(job=job, attempt=attempt, worker=worker, result=refused, judged=judged, binding=binding)


def _ascii(value) -> str:
    """Any value as printable ASCII (a string without its quotes)."""
    if value is None or value == "":
        return ""
    return ascii(value)[1:-1] if isinstance(value, str) else ascii(value)


def _record(*, job: CompactionJob, attempt: Attempt, worker: str, result: ProviderResult, judged: ContractResult,
            binding: Binding) -> RunOutcome:
    now = timezone.now()
    raw, truncated = _cap(result.raw or result.text or "")
    code, detail = judged.failure_code, escape_unstorable(judged.detail)
    text = binding.summary_text(result) if not code else None
    # What the binding keeps beside the generation (a hand-off note's drift
    # report), computed before the transaction and written inside it.
    beside = binding.generation_prepare(job=job, text=text) if not code else None
    if not code and connection.vendor == "postgresql":
        fast = _finish_success_pg(job=job, attempt=attempt, worker=worker, result=result, text=text, raw=raw,
                                  truncated=truncated, now=now, binding=binding, beside=beside)
        if fast is not None:
            return fast
        # Nothing moved: the source changed or the lease was lost; the
        # general path below finds out which and records it.
    released = {"lease_owner": "", "lease_expires_at": None, "updated_at": now}
    with transaction.atomic():
        mine = CompactionJob.objects.filter(pk=job.pk, state=JobState.RUNNING, lease_owner=worker,
                                            attempts_used=attempt.number)
        current = mine.filter(binding.current())
        if not code:
            # Serialises generation numbering per conversation.
            Conversation.objects.select_for_update().filter(pk=job.conversation_id).values_list("pk").first()
            if current.update(state=JobState.SUCCEEDED, last_failure_code="", **released):
                state = JobState.SUCCEEDED
            elif mine.exists():
                code, detail = SOURCE_CHANGED, "the source changed while the attempt ran"
            else:
                state = None
        if code == SOURCE_CHANGED:
            state = JobState.STALE if mine.update(state=JobState.STALE, last_failure_code=code, **released) else None
        elif code:
            state = failure_state(attempt_number=attempt.number, max_attempts=job.max_attempts)
            moved = current.update(state=state_after_failure(), last_failure_code=code, **released)
            if not moved:
                # The source changed while the attempt ran: the ingest could
                # not stale a running job, so its end does (README).
                state = JobState.STALE
                moved = mine.update(state=JobState.STALE, last_failure_code=code, **released)
            state = state if moved else None
        if state is None:
            return _recorded_before(job, attempt) or RunOutcome(job.pk, "lost", attempt=attempt.number, detail=LOST)
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
            job=job, conversation_id=job.conversation_id, number=number, text=text,
            text_bytes=len(text.encode("utf-8")), kind=job.kind, scope=job.scope, from_pair=job.from_pair,
            to_pair=job.to_pair, message_ids=job.message_ids, source_digest=job.source_digest,
            model_id=job.model_id, prompt_version_id=job.prompt_version_id,
            parent_id=job.parent_generation_id, parent_digest=job.parent_digest,
        )
        if beside is not None:
            binding.generation_record(generation_id=generation.pk, prepared=beside)
        return RunOutcome(job.pk, JobState.SUCCEEDED, attempt=attempt.number, generation_id=generation.pk)


_success_statements: dict[Binding, tuple[str, list]] = {}


def _success_statement(binding: Binding) -> tuple[str, list]:
    """PostgreSQL: a good attempt's whole finish as ONE statement, for
    ``binding``'s kind (built once), and the binding's parameters."""
    if binding not in _success_statements:
        current, params = binding.current_sql(job="j")
        _success_statements[binding] = (f"""
WITH moved AS (
    UPDATE compaction_compactionjob AS j
    SET state = 'succeeded', last_failure_code = '', lease_owner = '', lease_expires_at = NULL, updated_at = %s
    WHERE j.id = %s AND j.state = 'running' AND j.lease_owner = %s AND j.attempts_used = %s AND ({current})
    RETURNING j.id, j.conversation_id
), finished AS (
    UPDATE compaction_attempt
    SET finished_at = %s, outcome = 'succeeded', failure_code = '', failure_detail = '', model = %s,
        finish_reason = %s, input_tokens = %s, output_tokens = %s, latency_ms = %s, raw_output = %s,
        raw_output_truncated = %s, tool_calls = NULL
    WHERE id = %s AND EXISTS (SELECT 1 FROM moved)
)
INSERT INTO compaction_summarygeneration (job_id, conversation_id, number, text, text_bytes, kind, scope,
                                          from_pair, to_pair, message_ids, source_digest, model_id,
                                          prompt_version_id, parent_id, parent_digest, created_at)
SELECT m.id, m.conversation_id,
       COALESCE((SELECT MAX(g.number) FROM compaction_summarygeneration g
                 WHERE g.conversation_id = m.conversation_id), 0) + 1,
       %s, %s, %s, %s, %s, %s, %s::jsonb, %s, %s, %s, %s, %s, %s
FROM moved m
RETURNING id, number
""", params)
    return _success_statements[binding]


def _finish_success_pg(*, job, attempt, worker, result, text, raw, truncated, now, binding,
                       beside=None) -> RunOutcome | None:
    """PostgreSQL: a good attempt's whole finish — the job's conditional move
    (still ours, binding still current), the attempt's record and the
    generation — as ONE statement, hence one transaction. Two finishes in one
    conversation that pick the same generation number collide on the unique
    constraint and the loser retries. None when nothing moved. What the
    binding keeps beside the generation (``beside``) is written in the same
    transaction, right after the statement."""
    sql, current_params = _success_statement(binding)
    params = [
        now, job.pk, worker, attempt.number, *current_params,
        now, result.model or job.model_id, (result.finish_reason or "")[:50], result.input_tokens,
        result.output_tokens, result.latency_ms, raw, truncated, attempt.pk,
        text, len(text.encode("utf-8")), job.kind, job.scope, job.from_pair, job.to_pair,
        json.dumps(job.message_ids), job.source_digest, job.model_id, job.prompt_version_id,
        job.parent_generation_id, job.parent_digest, now,
    ]
    # One statement is its own transaction in autocommit; inside an outer
    # transaction (tests, callers) a savepoint keeps a collision local.
    # With something to write beside it, statement and rows share one transaction.
    atomic = transaction.atomic if connection.in_atomic_block or beside is not None else contextlib.nullcontext
    for _ in range(20):
        try:
            with atomic():
                row = execute_prepared(sql, params)
                if row is not None and beside is not None:
                    binding.generation_record(generation_id=row[0], prepared=beside)
        except IntegrityError:
            continue  # a concurrent finish took that number; count again
        if row is None:
            return None
        job.state = JobState.SUCCEEDED
        return RunOutcome(job.pk, JobState.SUCCEEDED, attempt=attempt.number, generation_id=row[0])
    raise RuntimeError(f"job {job.pk}: could not number its generation after 20 tries")


def _recorded_before(job: CompactionJob, attempt: Attempt) -> RunOutcome | None:
    """This attempt's end as an earlier try of this finish recorded it (its
    commit went through, its reply was lost in an outage), or None. Only the
    attempt's own worker — or ``attempt_settle`` with its answer — writes an
    outcome other than the reaper's ``lease_expired`` or a release."""
    row = Attempt.objects.filter(pk=attempt.pk).values_list("outcome", "failure_code", "failure_detail").first()
    if row is None or row[0] not in (AttemptOutcome.SUCCEEDED, AttemptOutcome.FAILED) or row[1] == LEASE_EXPIRED:
        return None
    outcome, code, detail = row
    state = CompactionJob.objects.filter(pk=job.pk).values_list("state", flat=True).first()
    job.state = state
    generation = (SummaryGeneration.objects.filter(job_id=job.pk).values_list("pk", flat=True).first()
                  if outcome == AttemptOutcome.SUCCEEDED else None)
    return RunOutcome(job.pk, state, failure_code=code, attempt=attempt.number, generation_id=generation,
                      detail=detail)


def attempt_release(*, job_id: int, number: int, worker: str, detail: str) -> bool:
    """End attempt ``number`` of a job that ``worker`` still holds without
    counting it: an outage, not the model, kept it from being recorded
    (issue 12). The attempt is logged with outcome ``infrastructure`` and
    ``detail``, the job is pending again with its attempt given back
    (``attempts.limit_given_back``) and is enqueued once this commits.
    Conditional like every end, so a reaper or a late finish that got there
    first wins and nothing is released twice. True if released."""
    now = timezone.now()
    with transaction.atomic():
        moved = CompactionJob.objects.filter(pk=job_id, state=JobState.RUNNING, lease_owner=worker,
                                             attempts_used=number).update(
            state=JobState.PENDING, max_attempts=limit_given_back(), lease_owner="", lease_expires_at=None,
            updated_at=now)
        if not moved:
            return False
        Attempt.objects.filter(job_id=job_id, number=number, outcome=AttemptOutcome.RUNNING).update(
            finished_at=now, outcome=AttemptOutcome.INFRASTRUCTURE, failure_code="",
            failure_detail=escape_unstorable(detail)[:2000])
        jobs_enqueue_after_commit([job_id])
    return True


def ending_to_message(result: ProviderResult | None, judged: ContractResult | None) -> tuple[dict | None, dict | None]:
    """An attempt's answer and verdict as a task message can carry them
    (JSON; what the database could not store already escaped, texts cut to
    what a record keeps: a passing text is at most 6,000 characters)."""
    if result is None or judged is None:
        return None, None
    kept = _storable(result)
    cap = settings.COMPACTION_RAW_OUTPUT_CAP
    kept = dataclasses.replace(kept, text=kept.text[:cap] if kept.text else kept.text, raw=_cap(kept.raw)[0])
    return dataclasses.asdict(kept), dataclasses.asdict(judged)


def ending_from_message(result: dict | None, judged: dict | None) -> tuple[ProviderResult | None,
                                                                         ContractResult | None]:
    if result is None or judged is None:
        return None, None
    return ProviderResult(**result), ContractResult(**judged)


def attempt_settle(*, job_id: int, number: int, worker: str, result: ProviderResult | None,
                   judged: ContractResult | None, detail: str = "") -> RunOutcome:
    """End an attempt its worker handed on because the database stayed away
    longer than it could wait (``compaction.settle_attempt``): if ``worker``
    still holds attempt ``number``, its answer is recorded as the worker
    would have recorded it — while the lease lasts: the answer is kept until
    it is written or the lease passes — and otherwise (the lease passed, or
    there was no answer yet) the attempt is released without counting. A
    job that moved on meanwhile (reaped, finished) is left as it is."""
    job = CompactionJob.objects.filter(pk=job_id).first()
    if job is None or (job.state, job.lease_owner, job.attempts_used) != (JobState.RUNNING, worker, number):
        return RunOutcome(job_id, "skipped", attempt=number, detail=f"attempt {number} is no longer held by {worker}")
    attempt = Attempt.objects.filter(job_id=job_id, number=number).first()
    lease_left = lease_held(job.lease_expires_at, now=timezone.now())
    if attempt is not None and result is not None and judged is not None and lease_left:
        return attempt_finish(job=job, attempt=attempt, worker=worker, result=result, judged=judged)
    why = detail or "the attempt could not be recorded before its lease passed"
    if attempt_release(job_id=job_id, number=number, worker=worker, detail=why):
        return RunOutcome(job_id, "released", attempt=number, detail=why)
    return RunOutcome(job_id, "skipped", attempt=number, detail="the attempt ended meanwhile")
