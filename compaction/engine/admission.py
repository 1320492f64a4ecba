"""Admission for model calls (SPEC §5, seed 000 §5 "进程内并发名额以及 PostgreSQL 共享准入").

Two bounds, both held only around the model call, never inside a database
transaction:

* per worker process: a semaphore of ``COMPACTION_LOCAL_CONCURRENCY``;
* across all workers: ``COMPACTION_GLOBAL_CONCURRENCY`` slots held in the
  database. On PostgreSQL a slot is a session advisory lock
  ``(ADVISORY_KEY, n)``: taking one is a single ``pg_try_advisory_lock``
  with no write and no commit, and a worker that dies frees its slot at once
  because its connection closes. (Session locks need a direct connection or
  session pooling, not a transaction-pooling proxy.) On other databases a
  slot is a row of ``AdmissionSlot`` taken by one conditional UPDATE (free,
  or its holder's lease ran out); SQLite's single writer makes that safe,
  and a dead holder's row frees itself when its expiry passes.
"""

from __future__ import annotations

import contextlib
import os
import random
import threading
import time
import uuid
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from ..models import AdmissionSlot
from .outages import INFRASTRUCTURE, reconnect
from .prepared import execute_prepared

# 'comp' as a 32-bit integer: the advisory-lock namespace of admission slots.
ADVISORY_KEY = 0x636F6D70

_local_lock = threading.Lock()
_local: threading.BoundedSemaphore | None = None
_local_size = 0
_slots_ready = 0


class AdmissionTimeout(Exception):
    """No admission within the wait; the job was not claimed and can wait."""


def _local_semaphore() -> threading.BoundedSemaphore:
    global _local, _local_size
    with _local_lock:
        size = max(1, settings.COMPACTION_LOCAL_CONCURRENCY)
        if _local is None or _local_size != size:
            _local, _local_size = threading.BoundedSemaphore(size), size
        return _local


def _ensure_slots(n: int, *, force: bool = False) -> None:
    global _slots_ready
    if _slots_ready >= n and not force:
        return
    AdmissionSlot.objects.bulk_create([AdmissionSlot(number=i) for i in range(n)], ignore_conflicts=True)
    _slots_ready = n


@contextlib.contextmanager
def _ephemeral_write():
    """Slot writes need not wait for the disk: a slot lost in a database
    crash is only a slot, and its expiry frees it anyway. On PostgreSQL the
    commit is made asynchronous for this transaction alone."""
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL synchronous_commit = off")
        yield


def _uses_advisory_locks() -> bool:
    return connection.vendor == "postgresql"


def slot_acquire(*, holder: str, lease_seconds: int) -> int | None:
    """Take one free global slot; returns its number, or None when all are held."""
    n = max(1, settings.COMPACTION_GLOBAL_CONCURRENCY)
    if _uses_advisory_locks():
        start = random.randrange(n)
        for i in range(n):
            number = (start + i) % n
            # Once per job: a prepared statement on a plain cursor (engine.prepared).
            if execute_prepared("SELECT pg_try_advisory_lock(%s, %s)", [ADVISORY_KEY, number])[0]:
                return number
        return None
    _ensure_slots(n)
    now = timezone.now()
    # Start at a random slot so workers do not all fight over slot 0.
    start = random.randrange(n)
    for i in range(n):
        number = (start + i) % n
        with _ephemeral_write():
            taken = (
                AdmissionSlot.objects.filter(number=number)
                .filter(Q(holder="") | Q(expires_at__lt=now))
                .update(holder=holder, expires_at=now + timedelta(seconds=lease_seconds))
            )
        if taken:
            return number
    if AdmissionSlot.objects.filter(number__lt=n).count() < n:
        # The rows went missing (a fresh database under a long-lived process).
        _ensure_slots(n, force=True)
        return slot_acquire(holder=holder, lease_seconds=lease_seconds)
    return None


def slot_release(*, number: int, holder: str) -> None:
    if _uses_advisory_locks():
        execute_prepared("SELECT pg_advisory_unlock(%s, %s)", [ADVISORY_KEY, number])
        return
    with _ephemeral_write():
        AdmissionSlot.objects.filter(number=number, holder=holder).update(holder="", expires_at=None)


def slots_in_use() -> int:
    if _uses_advisory_locks():
        with connection.cursor() as cursor:
            # Advisory locks belong to one database; pg_locks shows the
            # whole server's, including other deployments' slots.
            cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = %s "
                           "AND objsubid = 2 AND granted "
                           "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                           [ADVISORY_KEY])
            return cursor.fetchone()[0]
    return AdmissionSlot.objects.exclude(holder="").filter(expires_at__gte=timezone.now()).count()


@contextlib.contextmanager
def admitted(*, wait_seconds: float | None = None, lease_seconds: int | None = None):
    """Hold one local and one global place for the duration of a model call.
    Raises ``AdmissionTimeout`` if none frees up within ``wait_seconds``."""
    wait_seconds = settings.COMPACTION_ADMISSION_WAIT_SECONDS if wait_seconds is None else wait_seconds
    lease_seconds = lease_seconds or settings.COMPACTION_LEASE_SECONDS
    deadline = time.monotonic() + wait_seconds
    semaphore = _local_semaphore()
    if not semaphore.acquire(timeout=max(0.0, wait_seconds)):
        raise AdmissionTimeout("no local admission within the wait")
    try:
        holder = f"{os.getpid()}:{uuid.uuid4().hex[:12]}"
        delay = 0.01
        while True:
            number = slot_acquire(holder=holder, lease_seconds=lease_seconds)
            if number is not None:
                break
            if time.monotonic() >= deadline:
                raise AdmissionTimeout("no global admission slot within the wait")
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 0.5)
        try:
            yield number
        finally:
            try:
                slot_release(number=number, holder=holder)
            except INFRASTRUCTURE:
                # The connection broke while the model was called (issue 12):
                # on PostgreSQL the slot's session lock ended with it, and
                # closing the connection ends it for sure; elsewhere the
                # slot's row frees itself at its expiry. Either way the
                # attempt goes on to be recorded.
                reconnect()
    finally:
        semaphore.release()
