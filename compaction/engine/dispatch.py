"""The one way work reaches the workers (issue 10): Celery tasks sent by
name, and never before the transaction that asked for them commits.

A job row a worker cannot see yet (its transaction still open), or one a
rollback removed, must never be sent: everything that plans, re-runs or
revives a job asks here, and ``after_commit`` is the only place that waits
for the commit (at once when no transaction is open; a rolled-back
transaction sends nothing). Tasks are looked up by name in the Celery app
(``compaction.tasks`` registers them when Django starts), so nothing here
imports the task module and the engine never imports its own callers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from django.db import transaction

from ..config.celery import app
from ..models import CompactionJob

RUN_JOB = "compaction.run_job"
PLAN_CONVERSATIONS = "compaction.plan_conversations"
REAP_AND_SCAN = "compaction.reap_and_scan"
SETTLE_ATTEMPT = "compaction.settle_attempt"


def after_commit(send: Callable[[], None]) -> None:
    """Run ``send`` once the current transaction commits."""
    transaction.on_commit(send, robust=True)


def send(task_name: str, *args) -> None:
    """Send one task now, by name (``delay``: eager mode runs it here)."""
    app.tasks[task_name].delay(*args)


def jobs_enqueue(job_ids: Iterable[int]) -> None:
    """Send one ``run_job`` message per job now, each naming the attempt it
    is for (the job's attempts used at sending), so duplicates are harmless."""
    job_ids = list(job_ids)
    used = dict(CompactionJob.objects.filter(pk__in=job_ids).values_list("pk", "attempts_used"))
    for job_id in job_ids:
        if job_id in used:
            send(RUN_JOB, job_id, used[job_id])


def jobs_enqueue_after_commit(job_ids: Iterable[int]) -> None:
    job_ids = list(job_ids)
    if job_ids:
        after_commit(lambda: jobs_enqueue(job_ids))


def conversations_plan(conversation_ids: Iterable[int]) -> None:
    """One background message that plans all these conversations, now."""
    conversation_ids = list(conversation_ids)
    if conversation_ids:
        send(PLAN_CONVERSATIONS, conversation_ids)


def conversations_plan_after_commit(conversation_ids: Iterable[int]) -> None:
    conversation_ids = list(conversation_ids)
    if conversation_ids:
        after_commit(lambda: conversations_plan(conversation_ids))
