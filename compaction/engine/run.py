"""One attempt at one job, end to end (SPEC §5): load, admission, claim,
the binding's request, the model call (outside any database transaction),
the binding's contract, finish.

Idempotent: a job that is not claimable (running elsewhere, done, stale,
out of attempts) is left alone, so a redelivered task never makes a second
attempt or a second generation.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time

from celery.exceptions import SoftTimeLimitExceeded
from django.db import connection

from conversations.models import Message

from .. import bindings
from ..contract import PROVIDER_ERROR, SOURCE_CHANGED, TIMEOUT, ContractResult, ProviderResult
from ..models import Attempt, CompactionJob, PromptVersion
from .admission import AdmissionTimeout, admitted
from .claim import CLAIMABLE, INVALID_BINDING, job_claim
from .finish import RunOutcome, attempt_finish
from .metrics import OVERHEAD, attempt_observed, emit
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


def job_run(*, job_id: int, provider=None, worker: str | None = None,
            expected_attempts_used: int | None = None) -> RunOutcome:
    """One attempt at one job (see the module docstring)."""
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
    try:
        with admitted():
            claim = job_claim(job=job, worker=worker, model_id=provider.model_id,
                              prompt_version_id=job.prompt_version_id,
                              expected_attempts_used=expected_attempts_used)
            if claim.attempt is None:
                status = "stale" if claim.refused in (SOURCE_CHANGED, INVALID_BINDING) else "skipped"
                return RunOutcome(job_id, status, detail=claim.refused)
            job, attempt = claim.job, claim.attempt
            fields = _event_fields(job, attempt)
            emit("compacting", **fields)
            request, problem = binding.request(job=job, attempt=attempt, stored=bound_messages(job))
            if request is None:
                result = ProviderResult(model=provider.model_id)
                judged = ContractResult(False, SOURCE_CHANGED, problem)
            else:
                t = time.perf_counter()
                result = _call(provider, request)
                provider_seconds = time.perf_counter() - t
                judged = binding.judge(result)
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
