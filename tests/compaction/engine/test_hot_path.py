"""The engine's per-job hot path reads and writes without the ORM's query
compiler (issue 3 "Measured": orchestration overhead per job), and must
still give exactly what the ORM would."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from compaction.bindings.segments import conversation_plan
from compaction.engine.claim import job_claim
from compaction.engine.prepared import execute_prepared
from compaction.engine.run import job_load, job_run
from compaction.models import CompactionJob, JobState
from conversations.models import Message


def plan(conv):
    return conversation_plan(conversation=conv)


def test_job_load_gives_the_same_job_and_prompt_version_as_the_orm(make_conversation):
    (planned,) = plan(make_conversation(30))
    job_claim(job_id=planned.pk, worker="w1", model_id=planned.model_id)  # sets a lease time
    loaded = job_load(planned.pk)
    orm = CompactionJob.objects.select_related("prompt_version").get(pk=planned.pk)
    for field in CompactionJob._meta.concrete_fields:
        assert getattr(loaded, field.attname) == getattr(orm, field.attname), field.name
    assert isinstance(loaded.message_ids, list) and len(loaded.message_ids) == 20
    assert loaded.lease_expires_at is not None and loaded.lease_expires_at.tzinfo is not None
    for field in type(orm.prompt_version)._meta.concrete_fields:
        assert getattr(loaded.prompt_version, field.attname) == getattr(orm.prompt_version, field.attname)
    assert loaded.prompt_version.frozen_at is not None
    assert not loaded._state.adding and loaded.state == JobState.RUNNING


def test_job_load_of_a_missing_job_is_none(db):
    assert job_load(987654321) is None


needs_pg = pytest.mark.skipif("connection.vendor != 'postgresql'")


def _prepared():
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement, generic_plans + custom_plans FROM pg_prepared_statements")
        return cursor.fetchall()


def _runs(prepared, marker):
    return sum(n for sql, n in prepared if marker in sql)


@needs_pg
def test_the_claim_and_the_finish_are_prepared_once_per_connection(make_conversation, recording_provider):
    jobs = plan(make_conversation(40))
    before = _prepared()
    for job in jobs:
        assert job_run(job_id=job.pk, provider=recording_provider).status == "succeeded"
    after = _prepared()
    for marker in ("WITH claimed AS", "WITH moved AS"):
        assert len([sql for sql, _ in after if marker in sql]) == 1  # one prepared statement each
        assert _runs(after, marker) - _runs(before, marker) == 2  # executed once per job
    assert _runs(after, "json_agg") - _runs(before, "json_agg") == 2  # the job load, once per job
    for marker in ("pg_try_advisory_lock", "pg_advisory_unlock"):  # admission's slot, once per job
        assert _runs(after, marker) - _runs(before, marker) >= 2
    # Nothing else on Django's connection is prepared behind its back.
    assert len(after) == 5


@needs_pg
def test_a_prepared_statement_joins_the_open_transaction_and_its_errors_are_djangos(make_conversation):
    (job,) = plan(make_conversation(30))
    with pytest.raises(IntegrityError):  # django.db's, so callers' handlers still work
        with transaction.atomic():
            execute_prepared(
                "UPDATE compaction_compactionjob SET state = 'running' WHERE id = %s RETURNING id", [job.pk])
            assert CompactionJob.objects.get(pk=job.pk).state == JobState.RUNNING  # same transaction
            execute_prepared(
                "UPDATE compaction_compactionjob SET from_pair = NULL WHERE id = %s RETURNING id", [job.pk])
    assert CompactionJob.objects.get(pk=job.pk).state == JobState.PENDING  # rolled back with it


@needs_pg
def test_a_claimable_job_loads_with_its_bound_messages_and_a_finished_one_without(make_conversation,
                                                                                 recording_provider):
    (job,) = plan(make_conversation(30))
    loaded = job_load(job.pk)
    stored = dict(Message.objects.filter(conversation_id=job.conversation_id).values_list("external_id", "content"))
    assert loaded.bound_messages == {i: stored[i] for i in job.message_ids}
    job_run(job_id=job.pk, provider=recording_provider)
    assert not hasattr(job_load(job.pk), "bound_messages")  # a no-op redelivery reads no messages


def test_a_bound_message_edited_behind_the_ingest_is_never_summarised(make_conversation, recording_provider):
    conv = make_conversation(30)
    (job,) = plan(conv)
    Message.objects.filter(conversation=conv, external_id="a-3").update(content="not what was bound")
    outcome = job_run(job_id=job.pk, provider=recording_provider)
    assert (outcome.status, outcome.failure_code) == ("stale", "source_changed")
    assert recording_provider.requests == []


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_prepared_statements_survive_a_killed_connection_prepared_again_on_the_new_one(make_conversation):
    """Issue 12: after ``pg_terminate_backend`` the engine's retry closes the
    broken connection and the hot statements run — and are prepared — on the
    new one; no statement of the dead session is ever used."""
    import psycopg

    from compaction.engine.outages import retrying
    from tests.compaction.conftest import live_database_url

    if connection.vendor != "postgresql":
        pytest.skip("prepared statements and pg_terminate_backend are PostgreSQL's")
    (planned,) = plan(make_conversation(30))
    assert job_load(planned.pk).pk == planned.pk
    old_backend = connection.connection.info.backend_pid
    with psycopg.connect(live_database_url(), autocommit=True) as killer:
        assert killer.execute("SELECT pg_terminate_backend(%s)", [old_backend]).fetchone()[0]
    loaded = retrying(lambda: job_load(planned.pk), what="loading the job", deadline=None)
    assert loaded.pk == planned.pk and connection.connection.info.backend_pid != old_backend
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s",
                       ["%FROM \"compaction_compactionjob\" j JOIN%"])
        assert cursor.fetchone()[0] == 1
    claim = retrying(lambda: job_claim(job=loaded, worker="w1", model_id=loaded.model_id), what="claiming",
                     deadline=None)
    assert claim.attempt is not None and claim.attempt.number == 1
