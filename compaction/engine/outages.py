"""Infrastructure faults (issue 12): a database or broker outage is not the
model's fault and must never cost a range an attempt or lose an answer.

The one home of: which errors are an outage (``INFRASTRUCTURE``: Django's
``OperationalError`` and ``InterfaceError`` — a lost or refused connection,
a server restart, a deadlock or serialization failure, SQLite's "database is
locked"), how Django's connection is made usable again (``reconnect``), and
the bounded backoff every write that must survive an outage retries with
(``retrying``).

Django only replaces a broken connection between requests (and Celery's
Django fixup between tasks); within one task a broken connection stays
broken, so each retry here closes it first and the next query opens a new
one. The engine's server-side prepared statements (``engine.prepared``) and
the admission slots' session advisory locks belong to the old connection:
the statements are prepared again on the new one the first time they run,
and the locks were freed by the server when the old session ended.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import InterfaceError, OperationalError, connection

logger = logging.getLogger(__name__)

INFRASTRUCTURE = (OperationalError, InterfaceError)

T = TypeVar("T")


class Outage(Exception):
    """An infrastructure fault that outlasted its deadline; ``what`` was not done."""

    def __init__(self, what: str, cause: BaseException):
        super().__init__(f"{what}: {type(cause).__name__}: {cause}".strip())
        self.what = what
        self.cause = cause


def is_infrastructure(exc: BaseException) -> bool:
    return isinstance(exc, INFRASTRUCTURE)


def reconnect() -> None:
    """Drop Django's connection after an infrastructure error, so the next
    query opens a new one instead of failing on the broken one again.
    Closing also ends the session, and with it any session advisory lock it
    held (an admission slot, the scan lock), so nothing stays held by a
    connection nobody uses."""
    try:
        connection.close()
    except Exception:  # noqa: BLE001 - a broken connection may fail to close; Django drops it anyway
        logger.debug("closing the broken database connection failed", exc_info=True)


def backoff_delay(retry: int, *, first: float | None = None, longest: float | None = None) -> float:
    """The pause before retry number ``retry`` (0 first): doubling from
    ``first`` (``COMPACTION_OUTAGE_BACKOFF_FIRST_SECONDS``) up to ``longest``
    (``COMPACTION_OUTAGE_BACKOFF_MAX_SECONDS``)."""
    first = settings.COMPACTION_OUTAGE_BACKOFF_FIRST_SECONDS if first is None else first
    longest = settings.COMPACTION_OUTAGE_BACKOFF_MAX_SECONDS if longest is None else longest
    return min(longest, first * 2 ** min(retry, 30))


def message_retry_delay(retries: int) -> float:
    """How long a task message that met an outage before doing anything
    waits before it is delivered again: from 1 s, doubling, at most a
    minute, so a long outage does not churn the broker."""
    return backoff_delay(retries, first=1.0, longest=60.0)


def retrying(operation: Callable[[], T], *, what: str, deadline: float | None) -> T:
    """``operation()``, tried again after each infrastructure error — the
    connection closed, then a bounded, doubling pause — until it succeeds or
    the next try would start after ``deadline`` (``time.monotonic()``; None:
    no deadline), when ``Outage`` is raised. It always runs at least once.

    Inside a transaction nothing can be retried (the transaction is lost
    with its connection): the error is raised as it is. A soft time limit
    that strikes meanwhile ends the retries too: the task is about to be
    stopped, and its caller must hand the work on.
    """
    retry = 0
    while True:
        try:
            return operation()
        except INFRASTRUCTURE as exc:
            if connection.in_atomic_block:
                raise
            reconnect()
            delay = backoff_delay(retry)
            retry += 1
            if deadline is not None and time.monotonic() + delay >= deadline:
                raise Outage(what, exc) from exc
            logger.warning("%s failed (%s: %s); retry %d in %.1fs", what, type(exc).__name__, exc, retry, delay)
            try:
                time.sleep(delay)
            except SoftTimeLimitExceeded as stopped:
                raise Outage(what, stopped) from exc
        except SoftTimeLimitExceeded as exc:
            # The limit struck inside the operation: the connection may be
            # half way through a statement.
            reconnect()
            raise Outage(what, exc) from exc
