"""Races on PostgreSQL with real connections: many claimers, one attempt;
a killed worker's lease is reaped and counted (SPEC §5)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.utils import timezone

from compaction.bindings.segments import conversation_plan
from compaction.engine.claim import job_claim
from compaction.engine.leases import jobs_reap_expired
from compaction.engine.run import job_run
from compaction.models import Attempt, CompactionJob, JobState, SummaryGeneration
from tests.compaction.conftest import RecordingProvider, ingest, live_db, subprocess_env
from tests.compaction.providers.openai_server import ScriptedServer
from tests.factories import conversation_document

pytestmark = live_db


def run_threads(n, target):
    barrier = threading.Barrier(n)
    results, errors = [], []

    def body(i):
        try:
            barrier.wait()
            results.append(target(i))
        except Exception as exc:  # surfaced below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    return results


def require_postgres():
    if connection.vendor != "postgresql":
        pytest.skip("concurrency is checked on PostgreSQL")


def test_many_threads_claiming_one_job_make_exactly_one_attempt():
    require_postgres()
    conv = ingest(conversation_document(60))
    jobs = conversation_plan(conversation=conv)
    assert len(jobs) == 4
    for job in jobs:
        claims = run_threads(8, lambda i, job=job: job_claim(job_id=job.pk, worker=f"w{i}",
                                                                       model_id=job.model_id))
        winners = [c for c in claims if c.attempt is not None]
        assert len(winners) == 1
        assert {c.refused for c in claims if c.attempt is None} == {"state_running"}
        assert Attempt.objects.filter(job=job).count() == 1
        assert CompactionJob.objects.get(pk=job.pk).attempts_used == 1


def test_redelivered_runs_of_one_job_make_one_attempt_and_one_generation():
    require_postgres()
    conv = ingest(conversation_document(30))
    (job,) = conversation_plan(conversation=conv)
    provider = RecordingProvider()
    outcomes = run_threads(6, lambda i: job_run(job_id=job.pk, provider=provider, worker=f"w{i}"))
    assert sorted(o.status for o in outcomes).count("succeeded") == 1
    assert Attempt.objects.filter(job=job).count() == 1
    assert SummaryGeneration.objects.filter(job=job).count() == 1
    assert len(provider.requests) == 1


def test_two_failed_attempts_under_concurrency_then_exhausted():
    require_postgres()
    conv = ingest(conversation_document(30))
    (job,) = conversation_plan(conversation=conv)
    bad = RecordingProvider(result={"text": "", "finish_reason": "length"})
    for _ in range(3):
        run_threads(4, lambda i: job_run(job_id=job.pk, provider=bad, worker=f"w{i}"))
    job.refresh_from_db()
    assert job.state == JobState.EXHAUSTED and job.attempts_used == 2
    assert list(Attempt.objects.filter(job=job).values_list("failure_code", flat=True)) == ["finish_reason"] * 2


def test_the_global_admission_bound_holds_across_threads(settings):
    from compaction.engine.admission import admitted

    settings.COMPACTION_GLOBAL_CONCURRENCY = 2
    settings.COMPACTION_LOCAL_CONCURRENCY = 8
    inside, peak, lock = [0], [0], threading.Lock()

    def body(i):
        with admitted(wait_seconds=10):
            with lock:
                inside[0] += 1
                peak[0] = max(peak[0], inside[0])
            time.sleep(0.05)
            with lock:
                inside[0] -= 1

    run_threads(6, body)
    assert peak[0] == 2
    from compaction.engine.admission import slots_in_use

    assert slots_in_use() == 0


def test_a_killed_workers_lease_is_reaped_and_counted():
    require_postgres()
    server = ScriptedServer()
    server.default = "hang"
    try:
        conv = ingest(conversation_document(30))
        (job,) = conversation_plan(conversation=conv, model_id="test-model")
        code = ("import django; django.setup(); from compaction.engine.run import job_run; "
                f"job_run(job_id={job.pk})")
        worker = subprocess.Popen(
            [sys.executable, "-c", code],
            env=subprocess_env(COMPACTION_PROVIDER="openai", COMPACTION_MODEL="test-model",
                               OPENAI_BASE_URL=server.base_url, OPENAI_TIMEOUT_SECONDS=600,
                               COMPACTION_LEASE_SECONDS=1),
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 30
        while not server.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.requests, worker.stderr.read().decode() if worker.poll() is not None else "no request"
        job.refresh_from_db()
        assert job.state == JobState.RUNNING and job.attempts_used == 1
        worker.kill()  # SIGKILL: the worker dies mid-call
        worker.wait()
    finally:
        server.close()
    reaped = jobs_reap_expired(now=timezone.now() + timedelta(seconds=2))
    assert reaped == [job.pk]
    job.refresh_from_db()
    attempt = Attempt.objects.get(job=job)
    assert (job.state, job.last_failure_code) == (JobState.FAILED, "lease_expired")
    assert (attempt.outcome, attempt.failure_code, attempt.finished_at is not None) == ("failed", "lease_expired", True)
    # The dead worker's admission slot frees itself when its lease passes.
    time.sleep(1.1)
    from compaction.engine.admission import slots_in_use

    assert slots_in_use() == 0


def test_concurrent_finishes_in_one_conversation_number_generations_without_gaps():
    require_postgres()
    conv = ingest(conversation_document(100))
    jobs = conversation_plan(conversation=conv)
    assert len(jobs) == 8
    provider = RecordingProvider()
    outcomes = run_threads(8, lambda i: job_run(job_id=jobs[i].pk, provider=provider, worker=f"w{i}"))
    assert [o.status for o in outcomes] == ["succeeded"] * 8
    numbers = sorted(SummaryGeneration.objects.filter(conversation=conv).values_list("number", flat=True))
    assert numbers == list(range(1, 9))
