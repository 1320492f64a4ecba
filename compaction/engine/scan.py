"""The periodic scan (SPEC §5; issue 12): reap expired leases, re-send due
retries and lost pending jobs, plan what nobody planned — one scan at a
time, on its own queue, whether or not the scheduler runs.

* **One at a time.** A scan holds the scan lock for its whole run; a scan
  that finds it taken does nothing (another is at work, and the next
  period comes soon). On PostgreSQL the lock is a session advisory lock
  (freed by the server if its holder dies, as the admission slots are);
  on SQLite, which only serves one machine, an exclusive ``flock`` on a file
  under ``COMPACTION_VAR_DIR`` (freed by the kernel if its holder dies).
* **Its own queue.** ``compaction.reap_and_scan`` is routed to
  ``COMPACTION_MAINTENANCE_QUEUE`` (settings: ``CELERY_TASK_ROUTES``), so a
  scan never waits behind the job backlog; a worker must consume it.
* **Without the scheduler.** Every worker that consumes the maintenance
  queue sends a scan when it connects to the broker (at start and after
  every reconnect) and every ``COMPACTION_SCAN_INTERVAL_SECONDS``
  (``compaction.config.celery.ScanTimer``); beat is optional. Each scan
  message expires after one interval, so scans never pile up in a queue
  nobody reads.

So an expired lease is reaped within the interval of its expiry, and a job
whose message was lost is sent again within the interval plus the lease
(``leases.jobs_take_due``: pending and untouched for a lease).
"""

from __future__ import annotations

import contextlib
import logging

from django.conf import settings
from django.db import connection

from .. import bindings
from . import dispatch, leases
from .outages import INFRASTRUCTURE, reconnect
from .prepared import execute_prepared

logger = logging.getLogger(__name__)

# 'scan' as a 32-bit integer: the advisory-lock namespace of the scan lock
# (the admission slots use 'comp').
SCAN_LOCK_KEY = 0x7363616E


@contextlib.contextmanager
def scan_lock():
    """Hold the scan lock for the block; yields False (and holds nothing)
    when another scan holds it."""
    if connection.vendor == "postgresql":
        held = execute_prepared("SELECT pg_try_advisory_lock(%s, %s)", [SCAN_LOCK_KEY, 0])[0]
        try:
            yield held
        finally:
            if held:
                try:
                    execute_prepared("SELECT pg_advisory_unlock(%s, %s)", [SCAN_LOCK_KEY, 0])
                except INFRASTRUCTURE:
                    reconnect()  # the session, and its lock, are gone with the connection
        return
    import fcntl

    with open(settings.VAR_DIR / "scan.lock", "a+b") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def scan_run() -> dict:
    """One scan under the scan lock (see the module docstring): what it
    reaped, enqueued and planned, or ``{"skipped": ...}`` when another scan
    was at work."""
    with scan_lock() as held:
        if not held:
            return {"skipped": "another scan holds the scan lock"}
        reaped = leases.jobs_reap_expired()
        due = leases.jobs_take_due()
        dispatch.jobs_enqueue(due)
        unplanned = bindings.conversations_unplanned()
        dispatch.conversations_plan(unplanned)
    if reaped or due or unplanned:
        logger.info("scan reaped=%s enqueued=%s planned=%s", reaped, due, unplanned)
    return {"reaped": reaped, "enqueued": due, "planned": unplanned}


def scan_send(*, expires: float | None = None) -> None:
    """Ask for one scan now, on the maintenance queue; the message is
    dropped unread once ``expires`` seconds (default: one scan interval)
    have passed, since a newer scan will have been asked for by then."""
    from ..config.celery import app

    interval = settings.COMPACTION_SCAN_INTERVAL_SECONDS
    app.send_task(dispatch.REAP_AND_SCAN, expires=expires if expires is not None else max(interval, 1.0))
