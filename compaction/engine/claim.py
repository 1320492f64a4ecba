"""The atomic claim (SPEC §5, seed 000 §5): one conditional write in the
database, never a check in Python followed by a write.

A job is claimed for one attempt by ONE conditional UPDATE that succeeds
only if, at that instant, every part of the claim condition holds: the
generic part below (state, the attempt the caller expects, attempts left,
model, prompt version) and the job's binding's (its shape and whether it is
still current, ``compaction.bindings``). Two workers racing for one job:
exactly one sees a row. On PostgreSQL the attempt row is written by the
same statement; elsewhere in the same transaction (SQLite's single writer
makes the pair atomic).

Each generic condition is written once, with its SQL and the refusal that
names it, so a refused claim says why from the same list. A binding whose
shape is wrong, or whose source moved, makes the job ``stale``; a failed
job without attempts left becomes ``exhausted``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from .. import bindings
from ..bindings.base import Binding
from ..contract import SOURCE_CHANGED
from ..models import Attempt, CompactionJob, JobState, PromptVersion
from .attempts import ATTEMPTS_LEFT_SQL, has_attempts_left
from .metrics import CLAIMS
from .prepared import execute_prepared

logger = logging.getLogger(__name__)

CLAIMABLE = (JobState.PENDING, JobState.FAILED)

INVALID_BINDING = "invalid_binding"
NO_ATTEMPTS_LEFT = "no_attempts_left"
LOST_RACE = "lost_race"


@dataclass
class Claim:
    job: CompactionJob
    attempt: Attempt | None
    refused: str = ""  # why not, when attempt is None


@dataclass(frozen=True)
class Claimant:
    worker: str
    model_id: str
    prompt_version_id: int
    expected_attempts_used: int | None = None


@dataclass(frozen=True)
class Condition:
    """One generic part of the claim condition."""

    sql: str  # ``{job}`` is the job row; ``%s`` parameters come from ``params``
    holds: Callable[[CompactionJob, Claimant], bool]
    refusal: Callable[[CompactionJob], str]
    params: Callable[[Claimant], list] = lambda claimant: []


# In the order a refusal names them.
CONDITIONS = (
    Condition("{job}.state IN ('pending', 'failed')", lambda job, c: job.state in CLAIMABLE,
              lambda job: f"state_{job.state}"),
    Condition("(CAST(%s AS integer) IS NULL OR {job}.attempts_used = CAST(%s AS integer))",
              lambda job, c: c.expected_attempts_used is None or job.attempts_used == c.expected_attempts_used,
              lambda job: "attempt_already_made", lambda c: [c.expected_attempts_used, c.expected_attempts_used]),
    Condition(ATTEMPTS_LEFT_SQL, lambda job, c: has_attempts_left(job), lambda job: NO_ATTEMPTS_LEFT),
    Condition("{job}.model_id = %s", lambda job, c: job.model_id == c.model_id, lambda job: "model_mismatch",
              lambda c: [c.model_id]),
    Condition("{job}.prompt_version_id = %s", lambda job, c: job.prompt_version_id == c.prompt_version_id,
              lambda job: "prompt_version_mismatch", lambda c: [c.prompt_version_id]),
)


def claim_where(binding: Binding, *, job: str, vendor: str) -> tuple[str, Callable[[Claimant], list]]:
    """The whole claim condition for ``binding``'s jobs as SQL, and how to
    get its parameters for one claimant (the job's id comes first)."""
    shape, shape_params = binding.shape_sql(job=job, vendor=vendor)
    current, current_params = binding.current_sql(job=job)
    sql = " AND ".join([f"{job}.id = %s", *(c.sql.format(job=job) for c in CONDITIONS), f"({shape})",
                        f"({current})"])

    def params(claimant: Claimant) -> list:
        return [p for c in CONDITIONS for p in c.params(claimant)] + shape_params + current_params

    return sql, params


_SET = ("SET state = 'running', attempts_used = j.attempts_used + 1, lease_owner = %s, lease_expires_at = %s, "
        "updated_at = %s")
_statements: dict = {}


def _statement(binding: Binding):
    """The claim statement of ``binding``'s kind on this database, built once."""
    key = (binding, connection.vendor)
    if key not in _statements:
        where, params = claim_where(binding, job="j", vendor=connection.vendor)
        if connection.vendor == "postgresql":
            # The claim and its attempt row are one statement.
            sql = f"""
WITH claimed AS (
    UPDATE compaction_compactionjob AS j {_SET}
    WHERE {where}
    RETURNING j.id, j.attempts_used
)
INSERT INTO compaction_attempt (job_id, number, worker, started_at, outcome, failure_code, failure_detail,
                                model, finish_reason, raw_output, raw_output_truncated)
SELECT id, attempts_used, %s, %s, 'running', '', '', %s, '', '', false FROM claimed
RETURNING id, number
"""
        else:
            sql = f"UPDATE compaction_compactionjob AS j {_SET} WHERE {where} RETURNING attempts_used"
        _statements[key] = (sql, params)
    return _statements[key]


def mark_stale(job_id: int, *, from_states=CLAIMABLE) -> bool:
    return bool(
        CompactionJob.objects.filter(pk=job_id, state__in=from_states)
        .update(state=JobState.STALE, lease_owner="", lease_expires_at=None, updated_at=timezone.now())
    )


def job_claim(*, job_id: int | None = None, job: CompactionJob | None = None, worker: str, model_id: str,
              prompt_version_id: int | None = None, lease_seconds: int | None = None,
              expected_attempts_used: int | None = None) -> Claim:
    """Claim a job for one attempt with ONE conditional UPDATE (see the
    module docstring). A refused claim says why. The binding's shape is
    checked before the statement too: it never changes after a job is
    created, so that check cannot race, and a job that can never be claimed
    is made stale at once."""
    if job is None:
        job = CompactionJob.objects.select_related("prompt_version").get(pk=job_id)
    binding = bindings.binding_for(job.kind)
    claimant = Claimant(worker, model_id, prompt_version_id or job.prompt_version_id, expected_attempts_used)
    problem = binding.shape_problem(job)
    if problem:
        if mark_stale(job.pk):
            logger.warning("job %s made stale: %s", job.pk, problem)
        CLAIMS.labels(result=INVALID_BINDING).inc()
        return Claim(job, None, INVALID_BINDING)
    lease = lease_seconds if lease_seconds is not None else settings.COMPACTION_LEASE_SECONDS
    now = timezone.now()
    expires = now + timedelta(seconds=lease)
    sql, params = _statement(binding)
    where = [job.pk, *params(claimant)]
    if connection.vendor == "postgresql":
        # One statement, so autocommit makes it its own transaction.
        row = execute_prepared(sql, [worker, expires, now, *where, worker, now, model_id])
        attempt = Attempt(pk=row[0], job=job, number=row[1], worker=worker, started_at=now,
                          model=model_id) if row else None
        if attempt is not None:
            attempt._state.adding = False
    else:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, [worker, expires, now, *where])
            row = cursor.fetchone()
            attempt = Attempt.objects.create(job=job, number=row[0], worker=worker, started_at=now,
                                             model=model_id) if row else None
    if attempt is not None:
        job.state, job.attempts_used, job.lease_owner, job.lease_expires_at = (
            JobState.RUNNING, attempt.number, worker, expires)
        # A prompt version is frozen the first time a job uses it.
        if job.prompt_version_id != claimant.prompt_version_id or job.prompt_version.frozen_at is None:
            PromptVersion.objects.filter(pk=claimant.prompt_version_id, frozen_at__isnull=True).update(frozen_at=now)
        CLAIMS.labels(result="claimed").inc()
        return Claim(job, attempt)
    job.refresh_from_db()
    refused = _refusal(job, claimant, binding)
    CLAIMS.labels(result=refused).inc()
    return Claim(job, None, refused)


def _refusal(job: CompactionJob, claimant: Claimant, binding: Binding) -> str:
    """Why the claim statement found no row: the first condition that does
    not hold now (``lost_race`` if all do: another worker was first)."""
    for condition in CONDITIONS:
        if not condition.holds(job, claimant):
            refused = condition.refusal(job)
            if refused == NO_ATTEMPTS_LEFT:
                CompactionJob.objects.filter(pk=job.pk, state=JobState.FAILED,
                                             attempts_used__gte=F("max_attempts")).update(state=JobState.EXHAUSTED)
            return refused
    if not binding.is_current(job):
        # Conditional too: only a claimable job whose binding still differs.
        CompactionJob.objects.filter(pk=job.pk, state__in=CLAIMABLE).filter(~Q(binding.current())).update(
            state=JobState.STALE, updated_at=timezone.now())
        return SOURCE_CHANGED
    return LOST_RACE
