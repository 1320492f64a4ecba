"""One attempt at one job, end to end (SPEC §5): load, admission, claim,
the binding's request, the model call (outside any database transaction),
the binding's contract, finish.

Idempotent: a job that is not claimable (running elsewhere, done, stale,
out of attempts) is left alone, so a redelivered task never makes a second
attempt or a second generation.

Outages (issue 12, ``engine.outages``). Before the claim an infrastructure
error propagates: nothing was claimed, and the caller (``run_job``) has the
message delivered again later instead of acknowledging it as done. From
the claim on nothing propagates and no attempt is spent on an outage: a
claim whose reply was lost is looked for once the database answers; an
attempt interrupted before the model was called is released
(``finish.attempt_release``, outcome ``infrastructure``, not counted); the
model's answer is kept while the finish retries its write with bounded
backoff across reconnects, until the lease passes or the task's time runs
short (``deadline``) — then it is handed to ``compaction.settle_attempt`` on
the maintenance queue, which records it once the database is back (or, if
the lease passed by then, releases the attempt).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import connection
from django.utils import timezone

from conversations.models import Message

from .. import bindings
from ..contract import PROVIDER_ERROR, SOURCE_CHANGED, TIMEOUT, ContractResult, ProviderResult
from ..models import Attempt, AttemptOutcome, CompactionJob, PromptVersion
from . import dispatch
from .admission import AdmissionTimeout, admitted
from .claim import CLAIMABLE, INVALID_BINDING, job_claim
from .finish import RunOutcome, attempt_finish, attempt_release, ending_to_message
from .metrics import OVERHEAD, attempt_observed, emit
from .outages import INFRASTRUCTURE, Outage, retrying
from .prepared import execute_prepared

logger = logging.getLogger(__name__)


def worker_identity() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


_job_load_plan: dict = {}


def _job_load_sql():
    """The load statement and each column's converters, built once per
    database vendor."""
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
    Reading the messages before the claim is safe: the binding's request
    checks that they give the bound digest, and the finish checks that the
    binding is still current.
    """
    sql, job_fields, pv_fields, converters = _job_load_sql()
    if connection.vendor == "postgresql":
        row = execute_prepared(sql, [job_id])
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


def bound_messages(job: CompactionJob) -> dict[str, str]:
    """The stored content of every message the job is bound to, by external
    id (read with the job by ``job_load`` on PostgreSQL)."""
    stored = getattr(job, "bound_messages", None)
    if stored is None:
        # Plain SQL for the same reason as ``job_load``: this runs once per job.
        ids = job.message_ids
        table = connection.ops.quote_name(Message._meta.db_table)
        marks = ", ".join(["%s"] * len(ids))
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT external_id, content FROM {table} WHERE conversation_id = %s "
                           f"AND external_id IN ({marks})", [job.conversation_id, *ids])
            stored = dict(cursor.fetchall())
    return stored


class _Interrupted(Exception):
    """An infrastructure error from the claim on, before an answer existed;
    ``attempt`` is None when the claim itself was interrupted."""

    def __init__(self, cause: BaseException, attempt: Attempt | None):
        super().__init__(str(cause))
        self.cause = cause
        self.attempt = attempt


def job_run(*, job_id: int, provider=None, worker: str | None = None,
            expected_attempts_used: int | None = None, deadline: float | None = None) -> RunOutcome:
    """One attempt at one job (see the module docstring). ``deadline``
    (``time.monotonic()``) is when the caller must be done at the latest —
    the task's soft time limit — besides the job's lease."""
    started = time.perf_counter()
    worker = worker or worker_identity()
    job = job_load(job_id)
    if job is None:
        return RunOutcome(job_id, "skipped", detail="no such job")
    if job.state not in CLAIMABLE:
        return RunOutcome(job_id, "skipped", detail=f"job is {job.state}")
    if expected_attempts_used is not None and job.attempts_used != expected_attempts_used:
        return RunOutcome(job_id, "skipped", detail="attempt_already_made")
    binding = bindings.binding_for(job.kind)
    provider = provider or binding.provider()
    provider_seconds = 0.0
    loaded_attempts = job.attempts_used
    try:
        with admitted():
            try:
                claim = job_claim(job=job, worker=worker, model_id=provider.model_id,
                                  prompt_version_id=job.prompt_version_id,
                                  expected_attempts_used=expected_attempts_used)
            except INFRASTRUCTURE as exc:
                raise _Interrupted(exc, None) from exc
            if claim.attempt is None:
                status = "stale" if claim.refused in (SOURCE_CHANGED, INVALID_BINDING) else "skipped"
                return RunOutcome(job_id, status, detail=claim.refused)
            job, attempt = claim.job, claim.attempt
            fields = _event_fields(job, attempt)
            emit("compacting", **fields)
            try:
                request, problem = binding.request(job=job, attempt=attempt, stored=bound_messages(job))
            except INFRASTRUCTURE as exc:
                raise _Interrupted(exc, attempt) from exc
            if request is None:
                result = ProviderResult(model=provider.model_id)
                judged = ContractResult(False, SOURCE_CHANGED, problem)
            else:
                t = time.perf_counter()
                result = _call(provider, request)
                provider_seconds = time.perf_counter() - t
                judged = _judge(binding, result)
    except AdmissionTimeout as exc:
        return RunOutcome(job_id, "deferred", detail=str(exc))
    except _Interrupted as stop:
        if stop.attempt is None:
            return _claim_interrupted(job, worker, loaded_attempts, stop.cause, deadline)
        return _release(job, stop.attempt, worker, stop.cause, _finish_deadline(job, deadline))
    try:
        outcome = retrying(lambda: attempt_finish(job=job, attempt=attempt, worker=worker, result=result,
                                                  judged=judged),
                           what=f"recording attempt {attempt.number} of job {job.pk}",
                           deadline=_finish_deadline(job, deadline))
    except Outage as exc:
        outcome = _hand_off(job, attempt, worker, exc, result=result, judged=judged)
    overhead = time.perf_counter() - started - provider_seconds
    outcome.overhead_ms = overhead * 1000
    OVERHEAD.observe(overhead)
    if outcome.status not in _NOT_RECORDED:
        attempt_observed(outcome="failed" if outcome.failure_code else "succeeded",
                         failure_code=outcome.failure_code, input_tokens=result.input_tokens,
                         output_tokens=result.output_tokens, latency_ms=result.latency_ms)
    fields.update(state=outcome.status, failure_code=outcome.failure_code or None,
                  input_tokens=result.input_tokens, output_tokens=result.output_tokens,
                  latency_ms=result.latency_ms, generation=outcome.generation_id)
    emit("compaction_failed" if outcome.failure_code or outcome.status in _NOT_RECORDED else "compacted", **fields)
    return outcome


# Ends that are not the model's: counted neither as a success nor a failure.
_NOT_RECORDED = ("lost", "released", "handed_off")


def _finish_deadline(job: CompactionJob, deadline: float | None) -> float:
    """When a worker stops retrying an attempt's end: a little before its
    lease passes (the reaper may count it after that), or before the
    caller's own deadline if that comes first."""
    margin = settings.COMPACTION_OUTAGE_BACKOFF_MAX_SECONDS
    lease_left = (job.lease_expires_at - timezone.now()).total_seconds() if job.lease_expires_at else 0.0
    ends = time.monotonic() + lease_left - margin
    return ends if deadline is None else min(ends, deadline)


def _claim_interrupted(job: CompactionJob, worker: str, loaded_attempts: int, cause: BaseException,
                       deadline: float | None) -> RunOutcome:
    """The claim statement met an outage: it may or may not have committed.
    Once the database answers, look for this worker's attempt: if the claim
    went through, release it (nothing was sent to the model); if not, raise
    the error, so the message is delivered again. If the database does not
    answer in time, hand the question to ``settle_attempt`` (it releases
    the attempt if there is one) and raise all the same."""
    number = loaded_attempts + 1

    def landed():
        """This worker's running attempt and the job's lease, or None."""
        attempt = Attempt.objects.filter(job_id=job.pk, number=number, worker=worker,
                                         outcome=AttemptOutcome.RUNNING).first()
        if attempt is None:
            return None
        return attempt, CompactionJob.objects.values_list("lease_expires_at", flat=True).get(pk=job.pk)

    wait = deadline if deadline is not None else time.monotonic() + settings.COMPACTION_LEASE_SECONDS
    try:
        claimed = retrying(landed, what=f"looking for the claim of job {job.pk}", deadline=wait)
    except Outage as exc:
        _send_settle(job.pk, number, worker, None, None, f"the claim met an outage: {exc}")
        raise cause
    if claimed is None:
        raise cause
    attempt, job.lease_expires_at = claimed
    return _release(job, attempt, worker, cause, _finish_deadline(job, deadline))


def _release(job: CompactionJob, attempt: Attempt, worker: str, cause: BaseException,
             deadline: float) -> RunOutcome:
    """Release an attempt an outage interrupted before the model answered."""
    detail = f"an outage interrupted the attempt before the model was called: {type(cause).__name__}: {cause}"
    try:
        released = retrying(lambda: attempt_release(job_id=job.pk, number=attempt.number, worker=worker,
                                                    detail=detail),
                            what=f"releasing attempt {attempt.number} of job {job.pk}", deadline=deadline)
    except Outage as exc:
        return _hand_off(job, attempt, worker, exc, result=None, judged=None, detail=detail)
    if not released:
        return RunOutcome(job.pk, "lost", attempt=attempt.number, detail="the attempt ended meanwhile")
    attempt_observed(outcome="infrastructure", failure_code="", input_tokens=None, output_tokens=None,
                     latency_ms=None)
    emit("compaction_failed", job=job.pk, attempt=attempt.number, state="released", detail=detail)
    return RunOutcome(job.pk, "released", attempt=attempt.number, detail=detail)


def _hand_off(job: CompactionJob, attempt: Attempt, worker: str, exc: Outage, *, result: ProviderResult | None,
              judged: ContractResult | None, detail: str = "") -> RunOutcome:
    """The database stayed away longer than this worker can wait: send the
    attempt's end — the answer too, if there is one — to
    ``settle_attempt`` on the maintenance queue."""
    detail = detail or f"the database stayed away while the attempt was being recorded: {exc}"
    if _send_settle(job.pk, attempt.number, worker, result, judged, detail):
        return RunOutcome(job.pk, "handed_off", attempt=attempt.number, detail=detail)
    return RunOutcome(job.pk, "lost", attempt=attempt.number,
                      detail=f"{detail}; the broker was unreachable too, so the lease will be reaped")


def _send_settle(job_id: int, number: int, worker: str, result: ProviderResult | None,
                 judged: ContractResult | None, detail: str) -> bool:
    try:
        dispatch.send(dispatch.SETTLE_ATTEMPT, job_id, number, worker, *ending_to_message(result, judged), detail)
    except Exception:  # noqa: BLE001 - the broker is down too: nothing more this worker can do
        logger.exception("job %s attempt %s: could not hand the attempt's end on", job_id, number)
        return False
    logger.warning("job %s attempt %s handed on to settle_attempt: %s", job_id, number, detail)
    return True


def _call(provider, request) -> ProviderResult:
    try:
        result = provider.summarise(request)
    except SoftTimeLimitExceeded:
        return ProviderResult(model=provider.model_id, error=TIMEOUT, error_detail="the task's soft time limit ran out")
    except Exception as exc:  # a provider bug is a provider error, recorded, not a crash
        logger.exception("provider %s raised", provider.name)
        return ProviderResult(model=provider.model_id, error=PROVIDER_ERROR,
                              error_detail=f"{type(exc).__name__}: {exc}")
    problem = _result_problem(result)
    if problem:
        return ProviderResult(model=provider.model_id, error=PROVIDER_ERROR, raw=ascii(result)[:4000],
                              error_detail=f"provider {provider.name} reported {problem}")
    return result


_RESULT_TYPES = {"text": (str, type(None)), "finish_reason": (str, type(None)), "tool_calls": (list, type(None)),
                 "model": (str, type(None)), "error": (str, type(None)), "error_detail": (str, type(None)),
                 "raw": (str, type(None))}


def _result_problem(result) -> str:
    """What makes a provider's report unusable for the contract, or ""."""
    if not isinstance(result, ProviderResult):
        return f"a {type(result).__name__}, not a ProviderResult"
    for name, kinds in _RESULT_TYPES.items():
        if not isinstance(getattr(result, name), kinds):
            return f"{name} as a {type(getattr(result, name)).__name__}"
    return ""


def _judge(binding, result: ProviderResult) -> ContractResult:
    try:
        return binding.judge(result)
    except SoftTimeLimitExceeded:
        return ContractResult(False, TIMEOUT, "the task's soft time limit ran out")
    except Exception as exc:  # noqa: BLE001 - a reply the contract cannot read still ends the attempt
        logger.exception("judging a reply of %s failed", binding.kind)
        return ContractResult(False, PROVIDER_ERROR, f"the reply could not be judged: {type(exc).__name__}: {exc}")


def _event_fields(job: CompactionJob, attempt: Attempt) -> dict:
    return {"job": job.pk, "conversation": job.conversation_id, "scope": job.scope,
            "range": [job.from_pair, job.to_pair], "attempt": attempt.number,
            "prompt_version": job.prompt_version.name, "model": job.model_id}
