"""The periodic scan (issue 12 item 4): one at a time, on its own queue,
asked for by the workers themselves, and so within its bound however long
the job queue is."""

from __future__ import annotations

import subprocess
import time
import uuid

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from compaction.config.celery import app
from compaction.engine.claim import job_claim
from compaction.engine.scan import SCAN_LOCK_KEY, scan_lock, scan_run
from compaction.models import CompactionJob, JobState
from tests.compaction.conftest import ingest, live_database_url, live_db, plan_with, run_on_sqlite, subprocess_env
from tests.compaction.providers.openai_server import SCRIPTS, ScriptedServer, completion
from tests.factories import conversation_document
from tests.workers import celery_worker

REDIS_URL = "redis://127.0.0.1:6379/1"


def test_the_scan_and_the_settling_of_attempts_go_to_the_maintenance_queue():
    for task in ("compaction.reap_and_scan", "compaction.settle_attempt"):
        assert app.amqp.router.route({}, task)["queue"].name == settings.COMPACTION_MAINTENANCE_QUEUE
    assert app.amqp.router.route({}, "compaction.run_job")["queue"].name == settings.CELERY_TASK_DEFAULT_QUEUE
    # A worker started without -Q consumes both queues.
    assert {q.name for q in settings.CELERY_TASK_QUEUES} == {"celery", "maintenance"}


def test_a_scheduled_scan_expires_after_one_interval_so_scans_never_pile_up():
    from compaction.config.celery import SCAN_INTERVAL

    entry = app.conf.beat_schedule["compaction-reap-and-scan"]
    assert entry["task"] == "compaction.reap_and_scan" and entry["options"]["expires"] == max(SCAN_INTERVAL, 1.0)


def test_a_scan_finding_another_at_work_does_nothing(make_conversation):
    import psycopg

    if connection.vendor != "postgresql":
        pytest.skip("the scan lock is an advisory lock on PostgreSQL")
    (job,) = plan_with(make_conversation(30))
    job_claim(job_id=job.pk, worker="dead", model_id=job.model_id, lease_seconds=0)
    time.sleep(0.01)
    with psycopg.connect(live_database_url(), autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s, 0)", [SCAN_LOCK_KEY])  # another scan at work
        assert scan_run() == {"skipped": "another scan holds the scan lock"}
        assert CompactionJob.objects.get(pk=job.pk).state == JobState.RUNNING
        other.execute("SELECT pg_advisory_unlock(%s, 0)", [SCAN_LOCK_KEY])
    assert scan_run()["reaped"] == [job.pk]
    with scan_lock() as held:  # and the finished scan gave the lock back
        assert held


def test_on_sqlite_the_scan_lock_is_a_file_lock_held_once(tmp_path):
    out = run_on_sqlite("""
import django; django.setup()
from compaction.engine.scan import scan_lock
with scan_lock() as first:
    with scan_lock() as second:
        print(first, second)
with scan_lock() as again:
    print(again)
""", tmp_path)
    assert out.split() == ["True", "False", "True"]


@pytest.fixture
def busy_endpoint(monkeypatch):
    """A model endpoint that takes 0.2 s per call, as a small real model would."""
    monkeypatch.setitem(SCRIPTS, "busy", (200, completion("[a-0] The fee was 0.00 EUR."), 0.2))
    server = ScriptedServer()
    server.default = "busy"
    yield server
    server.close()


def redis_up() -> bool:
    import redis

    try:
        return redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping()
    except Exception:
        return False


@live_db
def test_the_reaper_reaps_within_its_bound_while_500_jobs_are_queued(busy_endpoint):
    """500 jobs wait in the job queue and no scheduler runs; a lease expires.
    The worker's own scan, on the maintenance queue, reaps it within the
    scan interval of its expiry, long before the backlog is through, and
    its scans never pile up."""
    import redis

    if connection.vendor != "postgresql" or not redis_up():
        pytest.skip("needs PostgreSQL and Redis")
    interval, lease = 1.0, 3
    queue = f"scan-test-{uuid.uuid4().hex[:8]}"
    maintenance = f"{queue}-m"
    backlog = [job.pk for i in range(10)
               for job in plan_with(ingest(conversation_document(520, external_id=f"b{i}", prefix=f"b{i}-")),
                                    model_id="test-model")]
    assert len(backlog) == 500
    (dead,) = plan_with(ingest(conversation_document(30, external_id="dead", prefix="dead-")), model_id="test-model")
    env = subprocess_env(CELERY_BROKER_URL=REDIS_URL, CELERY_TASK_DEFAULT_QUEUE=queue,
                         COMPACTION_MAINTENANCE_QUEUE=maintenance, COMPACTION_SCAN_INTERVAL_SECONDS=interval,
                         COMPACTION_PROVIDER="openai", COMPACTION_MODEL="test-model",
                         OPENAI_BASE_URL=busy_endpoint.base_url, OPENAI_TIMEOUT_SECONDS=30)
    broker = redis.Redis.from_url(REDIS_URL)
    with celery_worker(queue=queue, env=env, redis_url=REDIS_URL, processes=2, maintenance=maintenance,
                       stderr=subprocess.DEVNULL):
        with app.connection_for_write(REDIS_URL) as conn:
            for job_id in backlog:
                app.tasks["compaction.run_job"].apply_async(args=(job_id, 0), connection=conn, queue=queue)
        deadline = time.monotonic() + 60
        while not CompactionJob.objects.filter(pk__in=backlog, state=JobState.SUCCEEDED).exists():
            assert time.monotonic() < deadline, "the worker never ran a job"
            time.sleep(0.1)
        claim = job_claim(job_id=dead.pk, worker="a-worker-that-died", model_id="test-model", lease_seconds=lease)
        expires = claim.job.lease_expires_at
        most_scans_waiting = 0
        while CompactionJob.objects.get(pk=dead.pk).state == JobState.RUNNING:
            most_scans_waiting = max(most_scans_waiting, broker.llen(maintenance))
            assert time.monotonic() < deadline + lease, "the expired lease was never reaped"
            time.sleep(0.05)
        reaped_after = (timezone.now() - expires).total_seconds()
        still_queued = CompactionJob.objects.filter(pk__in=backlog, state=JobState.PENDING).count()
    dead.refresh_from_db()
    assert (dead.state, dead.last_failure_code) == (JobState.FAILED, "lease_expired")
    # Within the scan interval of the expiry (plus a little for a loaded machine),
    # while most of the backlog still waits: the scan did not queue behind it.
    assert reaped_after <= interval + 3, reaped_after
    assert still_queued >= 300, still_queued
    assert most_scans_waiting <= 2
