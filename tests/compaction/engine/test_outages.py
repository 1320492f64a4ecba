"""Database and broker outages during an attempt (issue 12 item 1): an
outage never spends an attempt and never discards a valid model answer.

Each test owns the server it breaks — a throwaway PostgreSQL cluster and a
Redis on their own ports (``tests.faults``), never the shared ones — and
stops and starts it while an attempt is out. The engine runs as it does in
production: in its own process (a script, or a real Celery worker), against
a real model endpoint on a socket (``openai_server``, the only thing
scripted) that holds its answer until the test has broken the database.
"""

from __future__ import annotations

import json
import time
import uuid

import pytest

from tests.compaction.conftest import live_database_url, live_db
from tests.compaction.providers.openai_server import SCRIPTS, ScriptedServer
from tests.faults import PrivatePostgres, PrivateRedis, django_env, postgres_bin, run_django, start_django
from tests.workers import celery_worker

pytestmark = pytest.mark.skipif(postgres_bin() is None, reason="needs PostgreSQL's server binaries to run a cluster")

GATED_TEXT = SCRIPTS["gated"][1]["choices"][0]["message"]["content"]


@pytest.fixture(scope="module")
def cluster():
    pg = PrivatePostgres()
    pg.sql("CREATE DATABASE template_engine")
    run_django("from django.core.management import call_command\ncall_command('migrate', verbosity=0)",
               django_env(pg.url("template_engine")), timeout=300)
    yield pg
    pg.close()


@pytest.fixture
def database(cluster):
    """A fresh, migrated database on the private cluster."""
    name = f"faults_{uuid.uuid4().hex[:10]}"
    cluster.sql(f"CREATE DATABASE {name} TEMPLATE template_engine")
    return cluster.url(name)


@pytest.fixture(scope="module")
def broker():
    redis = PrivateRedis()
    yield redis
    redis.close()


@pytest.fixture
def endpoint():
    server = ScriptedServer()
    yield server
    server.gate.set()
    server.close()


def engine_env(database_url, endpoint, tmp_path, **extra):
    return django_env(database_url, COMPACTION_PROVIDER="openai", COMPACTION_MODEL="test-model",
                      OPENAI_BASE_URL=endpoint.base_url, OPENAI_API_KEY="sk-test", OPENAI_TIMEOUT_SECONDS=120,
                      COMPACTION_VAR_DIR=tmp_path, COMPACTION_OUTAGE_BACKOFF_MAX_SECONDS=1, **extra)


def plan_jobs(env, n_pairs=30) -> list[int]:
    out = run_django(f"""
from compaction.bindings.segments import conversation_plan
from conversations.documents import validate_document
from conversations.services.ingest import conversation_ingest
from tests.factories import conversation_document
conv = conversation_ingest(document=validate_document(conversation_document({n_pairs})), actor="tests").conversation
print(" ".join(str(job.pk) for job in conversation_plan(conversation=conv)))
""", env)
    return [int(x) for x in out.split()]


RUN_ONE = """
import dataclasses, json
from compaction.engine.run import job_run
print(json.dumps(dataclasses.asdict(job_run(job_id={job}))))
"""


def rows(url, sql, *params):
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(sql, params)
        return cursor.fetchall() if cursor.description else None


def job_state(url, job_id):
    return rows(url, "SELECT state, attempts_used, max_attempts FROM compaction_compactionjob WHERE id = %s",
                job_id)[0]


def attempts(url, job_id):
    return rows(url, "SELECT number, outcome, failure_code FROM compaction_attempt WHERE job_id = %s ORDER BY number",
                job_id)


def generations(url, job_id):
    return [text for (text,) in rows(url, "SELECT text FROM compaction_summarygeneration WHERE job_id = %s", job_id)]


def wait_for(predicate, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return True
        except Exception:  # noqa: BLE001 - the database may be coming back
            pass
        time.sleep(0.2)
    return False


def send(task_name, *args, broker_url, queue, **options):
    from compaction.config.celery import app

    with app.connection_for_write(broker_url) as conn:
        app.tasks[task_name].apply_async(args=args, connection=conn, queue=queue, **options)


def test_a_postgres_restart_during_the_model_call_costs_no_attempt_and_the_answer_is_stored(
        cluster, database, endpoint, tmp_path):
    env = engine_env(database, endpoint, tmp_path)
    (job_id,) = plan_jobs(env)
    endpoint.default = "gated"
    proc = start_django(RUN_ONE.format(job=job_id), env)
    assert endpoint.arrived.wait(60), "the attempt never called the model"
    cluster.stop()  # every session ends and new ones are refused: the restart's first half
    endpoint.gate.set()  # the model answers while the database is away
    time.sleep(3)
    cluster.start()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-3000:]
    outcome = json.loads(out.strip().splitlines()[-1])
    assert (outcome["status"], outcome["attempt"], outcome["failure_code"]) == ("succeeded", 1, "")
    assert f"recording attempt 1 of job {job_id} failed" in err  # the outage was met, and waited out
    assert job_state(database, job_id) == ("succeeded", 1, 2)
    assert attempts(database, job_id) == [(1, "succeeded", "")]
    assert generations(database, job_id) == [GATED_TEXT]


def test_a_claim_whose_reply_an_outage_swallowed_is_found_and_released_without_counting(
        cluster, database, endpoint, tmp_path):
    """The claim commits and the connection dies before its reply (here: the
    prompt version's freeze, right after the claim, ends the session). The
    worker finds its attempt once it reconnects and releases it: outcome
    ``infrastructure``, the job pending again with the attempt given back."""
    env = engine_env(database, endpoint, tmp_path)
    (job_id,) = plan_jobs(env)
    rows(database, """CREATE FUNCTION end_session() RETURNS trigger AS $$
        BEGIN PERFORM pg_terminate_backend(pg_backend_pid()); RETURN NEW; END $$ LANGUAGE plpgsql""")
    rows(database, "CREATE TRIGGER end_session BEFORE UPDATE OF frozen_at ON compaction_promptversion "
                   "FOR EACH ROW EXECUTE FUNCTION end_session()")
    outcome = json.loads(run_django(RUN_ONE.format(job=job_id), env).strip().splitlines()[-1])
    assert outcome["status"] == "released" and "terminating connection" in outcome["detail"]
    assert endpoint.requests == []  # nothing was sent to the model
    assert job_state(database, job_id) == ("pending", 1, 3)  # two attempts left, as before
    assert attempts(database, job_id) == [(1, "infrastructure", "")]
    rows(database, "DROP TRIGGER end_session ON compaction_promptversion")
    again = json.loads(run_django(RUN_ONE.format(job=job_id), env).strip().splitlines()[-1])
    assert (again["status"], again["attempt"]) == ("succeeded", 2)
    assert attempts(database, job_id) == [(1, "infrastructure", ""), (2, "succeeded", "")]


def test_messages_a_worker_takes_while_postgres_is_down_are_delivered_again_not_dropped(
        cluster, database, broker, endpoint, tmp_path):
    """Before it claims, a task that meets the outage has its message
    delivered again after a pause, instead of acknowledging it as done —
    so the jobs run as soon as the database is back, not a lease later."""
    queue = f"faults-{uuid.uuid4().hex[:8]}"
    env = engine_env(database, endpoint, tmp_path, CELERY_BROKER_URL=broker.url, CELERY_TASK_DEFAULT_QUEUE=queue,
                     COMPACTION_MAINTENANCE_QUEUE=f"{queue}-m", COMPACTION_SCAN_INTERVAL_SECONDS=3600)
    jobs = plan_jobs(env, 70)
    assert len(jobs) == 5
    with celery_worker(queue=queue, env=env, redis_url=broker.url, processes=2, maintenance=f"{queue}-m"):
        cluster.stop()
        for job_id in jobs:
            send("compaction.run_job", job_id, 0, broker_url=broker.url, queue=queue)
        time.sleep(4)  # the worker takes every message while the database is away
        cluster.start()
        # Well within the lease (300 s), after which the orphan scan would have sent them again.
        assert wait_for(lambda: all(job_state(database, j)[0] == "succeeded" for j in jobs), 60)
    for job_id in jobs:
        assert job_state(database, job_id) == ("succeeded", 1, 2)
        assert attempts(database, job_id) == [(1, "succeeded", "")]


def test_an_answer_the_worker_cannot_write_before_its_time_runs_out_is_settled_once_the_database_is_back(
        cluster, database, broker, endpoint, tmp_path):
    """The database stays away longer than the task may run: the worker
    hands the answer to ``settle_attempt`` on the maintenance queue, which
    records it when the database is back — the answer is kept until it is
    written or the lease passes."""
    queue = f"faults-{uuid.uuid4().hex[:8]}"
    log = tmp_path / "worker.log"
    env = engine_env(database, endpoint, tmp_path, CELERY_BROKER_URL=broker.url, CELERY_TASK_DEFAULT_QUEUE=queue,
                     COMPACTION_MAINTENANCE_QUEUE=f"{queue}-m", COMPACTION_SCAN_INTERVAL_SECONDS=3600,
                     COMPACTION_LEASE_SECONDS=120)
    (job_id,) = plan_jobs(env)
    endpoint.default = "gated"
    with open(log, "w") as stderr, celery_worker(queue=queue, env=env, redis_url=broker.url,
                                                 maintenance=f"{queue}-m", stderr=stderr):
        # The sender stamps the time limits on the message; the worker keeps to them.
        send("compaction.run_job", job_id, 0, broker_url=broker.url, queue=queue, soft_time_limit=6, time_limit=15)
        assert endpoint.arrived.wait(60)
        cluster.stop()
        endpoint.gate.set()
        time.sleep(10)  # past the task's soft time limit
        cluster.start()
        assert wait_for(lambda: job_state(database, job_id)[0] == "succeeded", 60), log.read_text()[-3000:]
    assert "handed on to settle_attempt" in log.read_text()
    assert job_state(database, job_id) == ("succeeded", 1, 2)
    assert attempts(database, job_id) == [(1, "succeeded", "")]
    assert generations(database, job_id) == [GATED_TEXT]
    assert len(endpoint.requests) == 1


def test_an_attempt_an_outage_outlasting_its_lease_kept_unrecorded_is_released_without_counting(
        cluster, database, broker, endpoint, tmp_path):
    """Past the lease the answer is given up, and the attempt does not count:
    outcome ``infrastructure``, the job pending with its attempt given back,
    run again — the second attempt succeeds and the range still has as many
    attempts left as after one."""
    queue = f"faults-{uuid.uuid4().hex[:8]}"
    env = engine_env(database, endpoint, tmp_path, CELERY_BROKER_URL=broker.url, CELERY_TASK_DEFAULT_QUEUE=queue,
                     COMPACTION_MAINTENANCE_QUEUE=f"{queue}-m", COMPACTION_SCAN_INTERVAL_SECONDS=3600,
                     COMPACTION_LEASE_SECONDS=6)
    (job_id,) = plan_jobs(env)
    endpoint.queue("gated")  # the first call is held; any later one answers at once
    with celery_worker(queue=queue, env=env, redis_url=broker.url, maintenance=f"{queue}-m"):
        send("compaction.run_job", job_id, 0, broker_url=broker.url, queue=queue)
        assert endpoint.arrived.wait(60)
        cluster.stop()
        endpoint.gate.set()
        time.sleep(10)  # past the lease
        cluster.start()
        assert wait_for(lambda: job_state(database, job_id)[0] == "succeeded", 90)
    assert attempts(database, job_id) == [(1, "infrastructure", ""), (2, "succeeded", "")]
    assert job_state(database, job_id) == ("succeeded", 2, 3)
    assert len(endpoint.requests) == 2


@live_db
def test_a_redis_restart_loses_no_attempt_and_every_lost_message_is_sent_again_within_interval_and_lease(
        broker, endpoint, tmp_path):
    """The broker restarts (without persistence: every queued message is
    gone) while an attempt is out and four more jobs wait in the queue. The
    running attempt is recorded once, its lost acknowledgement costs
    nothing, and the worker — no scheduler running — asks for a scan when it
    reconnects and every interval, which sends the lost jobs again once
    they have waited a lease."""
    queue = f"faults-{uuid.uuid4().hex[:8]}"
    interval, lease = 1, 4
    env = engine_env(live_database_url(), endpoint, tmp_path, CELERY_BROKER_URL=broker.url,
                     CELERY_TASK_DEFAULT_QUEUE=queue, COMPACTION_MAINTENANCE_QUEUE=f"{queue}-m",
                     COMPACTION_SCAN_INTERVAL_SECONDS=interval, COMPACTION_LEASE_SECONDS=lease)
    from compaction.models import Attempt, CompactionJob, JobState
    from tests.compaction.conftest import ingest, plan_with
    from tests.factories import conversation_document

    jobs = [j.pk for j in plan_with(ingest(conversation_document(70)), model_id="test-model")]
    endpoint.queue("gated")
    with celery_worker(queue=queue, env=env, redis_url=broker.url, maintenance=f"{queue}-m"):
        for job_id in jobs:
            send("compaction.run_job", job_id, 0, broker_url=broker.url, queue=queue)
        assert endpoint.arrived.wait(60)
        broker.stop()
        broker.start()  # empty: the four waiting messages are lost
        restarted = time.monotonic()
        endpoint.gate.set()
        assert wait_for(lambda: CompactionJob.objects.filter(pk__in=jobs, state=JobState.SUCCEEDED).count() == 5,
                        60)
        took = time.monotonic() - restarted
    assert took <= interval + lease + 10  # slack: worker reconnect and a loaded machine
    assert sorted(Attempt.objects.filter(job_id__in=jobs).values_list("job_id", "number", "outcome")) == [
        (j, 1, "succeeded") for j in sorted(jobs)]
