"""Celery tasks: thin interfaces that call services and own nothing else.

All tasks are idempotent: a redelivered message (``acks_late`` with
``reject_on_worker_lost``) finds its job no longer claimable and does
nothing, so it never makes a second attempt or a second generation. Work is
sent to them by name (``compaction.engine.dispatch``).

A message is acknowledged only once what it asked for is durable (issue
12): a task that meets a database outage before it did anything has its
message delivered again after a pause (``engine.outages``) instead of
being acknowledged as done; an attempt's end that the outage kept from the
database goes on as a ``settle_attempt`` message. ``reap_and_scan`` and
``settle_attempt`` run on the maintenance queue (``CELERY_TASK_ROUTES``).
"""

from __future__ import annotations

import logging
import time

from celery import shared_task

from conversations.models import Conversation

from . import bindings
from .engine import dispatch, outages, scan
from .engine.finish import attempt_settle, ending_from_message
from .engine.run import job_run

logger = logging.getLogger(__name__)


@shared_task(name="compaction.plan_conversation", acks_late=True, reject_on_worker_lost=True)
def plan_conversation(conversation_id: int) -> list[int]:
    """Create jobs for what the conversation needs now and enqueue them."""
    conversation = Conversation.objects.filter(pk=conversation_id).first()
    if conversation is None:
        return []
    return [job.pk for job in bindings.conversation_plan_and_enqueue(conversation=conversation)]


@shared_task(name=dispatch.PLAN_CONVERSATIONS, acks_late=True, reject_on_worker_lost=True)
def plan_conversations(conversation_ids: list[int]) -> dict[int, list[int]]:
    """``plan_conversation`` for each of many conversations, in turn. One
    that fails is logged and left to the periodic scan, which plans every
    conversation whose ranges have no job; the others still get planned."""
    planned = {}
    for conversation_id in conversation_ids:
        try:
            planned[conversation_id] = plan_conversation(conversation_id)
        except Exception:  # noqa: BLE001 - the scan retries it; the rest must not wait
            logger.exception("planning conversation %s failed; the periodic scan will retry it", conversation_id)
    return planned


@shared_task(name=dispatch.RUN_JOB, bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None)
def run_job(self, job_id: int, attempts_used: int | None = None) -> dict:
    """One attempt at a job. ``attempts_used`` is the count when the message
    was sent: the message is only good for the next attempt after that."""
    try:
        outcome = job_run(job_id=job_id, expected_attempts_used=attempts_used, deadline=_deadline(self))
    except outages.INFRASTRUCTURE as exc:
        _again_after_outage(self, exc)
    if outcome.status == "deferred" and not self.request.is_eager and self.request.id:
        # No admission slot: nothing was claimed, try again shortly.
        raise self.retry(countdown=5)
    if outcome.generation_id is not None:
        # What follows a written generation (a rolling chain's next round);
        # if this fails or is lost, the periodic scan plans it.
        try:
            bindings.generation_written_and_enqueue(job_id=job_id)
        except Exception:  # noqa: BLE001 - the generation is written; the scan retries the planning
            logger.exception("planning after job %s's generation failed; the periodic scan will retry it", job_id)
    return {"job": outcome.job_id, "status": outcome.status, "failure_code": outcome.failure_code,
            "attempt": outcome.attempt, "generation": outcome.generation_id, "detail": outcome.detail,
            "overhead_ms": outcome.overhead_ms}


@shared_task(name=dispatch.SETTLE_ATTEMPT, bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None)
def settle_attempt(self, job_id: int, number: int, worker: str, result: dict | None = None,
                   judged: dict | None = None, detail: str = "") -> dict:
    """The end of an attempt its worker could not record during an outage
    (``engine.finish.attempt_settle``); tried again until the database is back."""
    result, judged = ending_from_message(result, judged)
    try:
        outcome = attempt_settle(job_id=job_id, number=number, worker=worker, result=result, judged=judged,
                                 detail=detail)
    except outages.INFRASTRUCTURE as exc:
        _again_after_outage(self, exc)
    return {"job": outcome.job_id, "status": outcome.status, "failure_code": outcome.failure_code,
            "attempt": outcome.attempt, "detail": outcome.detail}


@shared_task(name=dispatch.REAP_AND_SCAN, acks_late=True, reject_on_worker_lost=True)
def reap_and_scan() -> dict:
    """Periodic: reap expired leases, retry due failures, rescue lost pending
    jobs, and plan conversations whose new ranges have no job yet — one scan
    at a time (``engine.scan``)."""
    return scan.scan_run()


def _deadline(task) -> float | None:
    """When this task's soft time limit strikes (``time.monotonic()``)."""
    if task.request.is_eager:
        return None
    soft = (task.request.timelimit or (None, None))[1] or task.soft_time_limit or task.app.conf.task_soft_time_limit
    return time.monotonic() + float(soft) - 1.0 if soft else None


def _again_after_outage(task, exc: BaseException):
    """Deliver this message again after a pause: the database was away
    before the task did anything that lasts."""
    if task.request.is_eager or not task.request.id:
        raise exc
    outages.reconnect()
    delay = outages.message_retry_delay(task.request.retries)
    logger.warning("%s[%s] met an outage (%s: %s); delivered again in %.0fs", task.name, task.request.id,
                   type(exc).__name__, exc, delay)
    raise task.retry(exc=exc, countdown=delay)
