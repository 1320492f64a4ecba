"""End to end with a real Celery worker (prefork) on the Redis broker: an
ingest's planning task creates the jobs, the worker runs them, redelivered
messages make no second attempt."""

from __future__ import annotations

import subprocess
import time
import uuid

import pytest
from django.db import connection

from compaction.config.celery import app
from compaction.models import Attempt, CompactionJob, JobState, SummaryGeneration
from compaction.tasks import plan_conversation, run_job
from tests.compaction.conftest import ingest, live_db, subprocess_env
from tests.workers import celery_worker
from tests.factories import conversation_document

REDIS_URL = "redis://127.0.0.1:6379/1"

pytestmark = live_db


def redis_up() -> bool:
    import redis

    try:
        return redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping()
    except Exception:
        return False


@pytest.fixture
def worker():
    if connection.vendor != "postgresql" or not redis_up():
        pytest.skip("needs PostgreSQL and Redis")
    queue = f"engine-test-{uuid.uuid4().hex[:8]}"
    env = subprocess_env(CELERY_BROKER_URL=REDIS_URL, CELERY_TASK_DEFAULT_QUEUE=queue)
    with celery_worker(queue=queue, env=env, redis_url=REDIS_URL, stderr=subprocess.PIPE):
        yield queue


def send(task, *args, queue):
    with app.connection_for_write(REDIS_URL) as conn:
        task.apply_async(args=args, connection=conn, queue=queue)


def wait_for(predicate, timeout=90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def test_a_real_worker_plans_and_runs_the_jobs_once_each(worker, settings):
    conv = ingest(conversation_document(50))
    send(plan_conversation, conv.pk, queue=worker)
    assert wait_for(lambda: CompactionJob.objects.filter(conversation=conv, state=JobState.SUCCEEDED).count() == 3)
    jobs = list(CompactionJob.objects.filter(conversation=conv).order_by("from_pair"))
    assert [(j.from_pair, j.to_pair) for j in jobs] == [(0, 9), (10, 19), (20, 29)]
    # Redelivered messages for done jobs change nothing.
    for job in jobs:
        send(run_job, job.pk, queue=worker)
    send(plan_conversation, conv.pk, queue=worker)
    # Wait for the worker to drain instead of sleeping: it has one process
    # and takes its queue in order, so once a marker sent last (planning a
    # conversation of its own) has run, every redelivery before it has too.
    marker = ingest(conversation_document(30, external_id="drain-marker"))
    send(plan_conversation, marker.pk, queue=worker)
    assert wait_for(lambda: CompactionJob.objects.filter(conversation=marker, state=JobState.SUCCEEDED).exists())
    assert Attempt.objects.filter(job__conversation=conv).count() == 3
    assert SummaryGeneration.objects.filter(conversation=conv).count() == 3
    assert sorted(SummaryGeneration.objects.filter(conversation=conv).values_list("number", flat=True)) == [1, 2, 3]
