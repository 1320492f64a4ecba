"""An attempt's end (SPEC §5): recorded, and the job moved on, in one
transaction; a good answer becomes an immutable generation.

The job moves only if this worker still holds it (state running, same lease
owner, same attempt number): a reaped attempt's late answer is dropped. A
good answer becomes a generation only if the job's binding is still current
(``Binding.current_sql``) — checked in the same conditional UPDATE —
otherwise the attempt fails ``source_changed`` and the job is ``stale``.
The generation copies the whole binding in, so it stands on its own.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Max
from django.utils import timezone

from conversations.models import Conversation

from .. import bindings
from ..bindings.base import Binding
from ..contract import SOURCE_CHANGED, ContractResult, ProviderResult
from ..models import Attempt, AttemptOutcome, CompactionJob, JobState, SummaryGeneration
from .attempts import failure_state, state_after_failure
from .prepared import execute_prepared


@dataclass
class RunOutcome:
    job_id: int
    status: str  # succeeded / failed / exhausted / stale / skipped / deferred / lost
    failure_code: str = ""
    attempt: int | None = None
    generation_id: int | None = None
    detail: str = ""
    overhead_ms: float | None = None


LOST = "the lease was lost before the attempt finished; its result is dropped"


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
    """Record an attempt's end and move the job on, in one transaction (see
    the module docstring)."""
    binding = bindings.binding_for(job.kind)
    now = timezone.now()
    result = _storable(result)
    raw, truncated = _cap(result.raw or result.text or "")
    code, detail = judged.failure_code, judged.detail.replace("\x00", "\ufffd")
    text = binding.summary_text(result) if not code else None
    if not code and connection.vendor == "postgresql":
        fast = _finish_success_pg(job=job, attempt=attempt, worker=worker, result=result, text=text, raw=raw,
                                  truncated=truncated, now=now, binding=binding)
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
            return RunOutcome(job.pk, "lost", attempt=attempt.number, detail=LOST)
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


def _finish_success_pg(*, job, attempt, worker, result, text, raw, truncated, now, binding) -> RunOutcome | None:
    """PostgreSQL: a good attempt's whole finish — the job's conditional move
    (still ours, binding still current), the attempt's record and the
    generation — as ONE statement, hence one transaction. Two finishes in one
    conversation that pick the same generation number collide on the unique
    constraint and the loser retries. None when nothing moved."""
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
    atomic = transaction.atomic if connection.in_atomic_block else contextlib.nullcontext
    for _ in range(20):
        try:
            with atomic():
                row = execute_prepared(sql, params)
        except IntegrityError:
            continue  # a concurrent finish took that number; count again
        if row is None:
            return None
        job.state = JobState.SUCCEEDED
        return RunOutcome(job.pk, JobState.SUCCEEDED, attempt=attempt.number, generation_id=row[0])
    raise RuntimeError(f"job {job.pk}: could not number its generation after 20 tries")
