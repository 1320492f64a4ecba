"""Leases, retries and the scan (SPEC §5: a running attempt whose lease
expires counts as a failed attempt, ``lease_expired``).

The periodic scan (``engine.scan``, one at a time, on the maintenance
queue) reaps expired leases, takes the jobs that are due again and has the
bindings plan what nobody planned; every write here is conditional, so two
scanners (or a scanner and a late worker) never both win.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from .. import bindings
from ..contract import LEASE_EXPIRED
from ..models import Attempt, AttemptOutcome, CompactionJob, JobState
from .attempts import attempts_left, state_after_failure
from .metrics import REAPED, attempt_observed, emit

logger = logging.getLogger(__name__)


# When a lease ends, judged the same way by every reader: the reaper here
# and the settle of a handed-on attempt (``finish.attempt_settle``). A lease
# is held while now is before its expiry; from the instant now reaches it,
# it has expired (it is not held, and the reaper may take it).


def lease_held(expires_at, *, now) -> bool:
    """Whether a lease that expires at ``expires_at`` (None: no lease) is
    still held at ``now``."""
    return expires_at is not None and now < expires_at


def lease_expired(now) -> Q:
    """The jobs whose lease has expired at ``now``: ``lease_held``'s
    complement, as a filter."""
    return Q(lease_expires_at__lte=now)


def jobs_reap_expired(*, now=None) -> list[int]:
    """Every running job whose lease ran out (its worker died or hung) loses
    its attempt as ``lease_expired``: the job becomes failed, or exhausted
    when that was its last attempt (stale if its binding stopped being
    current meanwhile). Conditional per job, so two reapers and a
    late-finishing worker cannot both win."""
    now = now or timezone.now()
    reaped = []
    # Oldest expiry first: the longest-dead worker's attempt is ended first.
    for job_id, owner, used, kind in CompactionJob.objects.filter(
        lease_expired(now), state=JobState.RUNNING
    ).order_by("lease_expires_at", "pk").values_list("pk", "lease_owner", "attempts_used", "kind"):
        try:
            binding = bindings.binding_for(kind)
        except LookupError:
            logger.warning("job %s: its lease expired, but no binding of kind %r is registered", job_id, kind)
            continue
        with transaction.atomic():
            expired = CompactionJob.objects.filter(lease_expired(now), pk=job_id, state=JobState.RUNNING,
                                                   lease_owner=owner, attempts_used=used)
            released = {"lease_owner": "", "lease_expires_at": None, "last_failure_code": LEASE_EXPIRED,
                        "updated_at": now}
            moved = expired.filter(binding.current()).update(state=state_after_failure(), **released)
            # A binding that stopped being current meanwhile: the job is
            # stale, as the ingest would have made it had it not been running.
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
        (Q(state=JobState.FAILED, updated_at__lte=retry_cut) & attempts_left())
        | Q(state=JobState.PENDING, updated_at__lte=orphan_cut)
    )
    # Only jobs this deployment can claim (another model's would be refused
    # and sent again at every scan), and only the job that counts for its
    # range (an older prompt version's failure is not retried).
    candidates = CompactionJob.objects.filter(due).filter(bindings.runnable_here()).not_superseded()
    taken = []
    for job_id, updated_at in candidates.order_by("updated_at").values_list("pk", "updated_at")[:limit]:
        if CompactionJob.objects.filter(pk=job_id, updated_at=updated_at).filter(due).update(updated_at=now):
            taken.append(job_id)
    return taken
