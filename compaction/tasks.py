"""Celery tasks: thin interfaces that call services and own nothing else.

All tasks are idempotent: a redelivered message (``acks_late`` with
``reject_on_worker_lost``) finds its job no longer claimable and does
nothing, so it never makes a second attempt or a second generation. Work is
sent to them by name (``compaction.engine.dispatch``).
"""

from __future__ import annotations

import logging

from celery import shared_task

from conversations.models import Conversation

from . import bindings
from .engine import dispatch, leases
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
    outcome = job_run(job_id=job_id, expected_attempts_used=attempts_used)
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


@shared_task(name="compaction.reap_and_scan", acks_late=True, reject_on_worker_lost=True)
def reap_and_scan() -> dict:
    """Periodic: reap expired leases, retry due failures, rescue lost pending
    jobs, and plan conversations whose new ranges have no job yet."""
    reaped = leases.jobs_reap_expired()
    due = leases.jobs_take_due()
    dispatch.jobs_enqueue(due)
    unplanned = bindings.conversations_unplanned()
    dispatch.conversations_plan(unplanned)
    if reaped or due or unplanned:
        logger.info("scan reaped=%s enqueued=%s planned=%s", reaped, due, unplanned)
    return {"reaped": reaped, "enqueued": due, "planned": unplanned}
