"""Bounded attempts (SPEC §5, seed 000 §5): at most ``COMPACTION_MAX_ATTEMPTS``
(2) attempts per range and prompt version; then the job is ``exhausted``
until an operator grants another. An attempt an outage ate (outcome
``infrastructure``) gives its attempt back (``limit_given_back``).

The one home of the rule. A new job's limit is the field's default
(``models.jobs.attempt_limit``); the claim, the finish, the reaper, the
scanner, the ingest that revives a job and the operator's grant all read
the rest from here, in SQL where they write in SQL and as ORM expressions
where they use the ORM.
"""

from __future__ import annotations

from django.db.models import Case, F, Q, Value, When

from ..models import CompactionJob, JobState

# In the claim statement (``{job}`` is the job row's alias).
ATTEMPTS_LEFT_SQL = "{job}.attempts_used < {job}.max_attempts"


def attempts_left() -> Q:
    return Q(attempts_used__lt=F("max_attempts"))


def has_attempts_left(job: CompactionJob) -> bool:
    return job.attempts_used < job.max_attempts


def failure_state(*, attempt_number: int, max_attempts: int) -> JobState:
    """What a job becomes when attempt ``attempt_number`` failed."""
    return JobState.FAILED if attempt_number < max_attempts else JobState.EXHAUSTED


def state_after_failure() -> Case:
    """``failure_state`` as an expression over the row being updated."""
    return Case(When(attempts_left(), then=Value(JobState.FAILED.value)), default=Value(JobState.EXHAUSTED.value))


def state_when_revived() -> Case:
    """A job that can run again (its source came back): pending while it has
    an attempt left, else exhausted."""
    return Case(When(attempts_left(), then=Value(JobState.PENDING.value)), default=Value(JobState.EXHAUSTED.value))


def limit_given_back() -> F:
    """The limit once an attempt is released because of infrastructure
    (outcome ``infrastructure``, issue 12): one higher, so the attempts left
    are what they were before it. ``attempts_used`` keeps numbering every
    attempt made, released ones too, so each keeps its own row."""
    return F("max_attempts") + 1


def limit_after_grant(job: CompactionJob, *, always_extra: bool) -> int:
    """The limit once an operator lets a failed or exhausted job run again:
    a job with an attempt left simply uses it; one without (or, with
    ``always_extra``, any) gets one more."""
    if always_extra or not has_attempts_left(job):
        return max(job.max_attempts, job.attempts_used) + 1
    return job.max_attempts
