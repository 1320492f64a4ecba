"""The Celery tasks, run through their real code in eager mode."""

from __future__ import annotations

import time

import pytest

from compaction import bindings
from compaction.bindings.segments import conversation_plan
from compaction.engine.claim import job_claim
from compaction.config.celery import app
from compaction.models import Attempt, CompactionJob, JobState
from compaction.tasks import reap_and_scan, run_job
from tests.compaction.conftest import ingest
from tests.factories import conversation_document


@pytest.fixture
def eager():
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = False


def test_the_scanner_reaps_an_expired_lease_retries_it_and_plans_new_ranges(
        db, eager, settings, django_capture_on_commit_callbacks):
    settings.COMPACTION_RETRY_DELAY_SECONDS = 0
    first = ingest(conversation_document(30, external_id="c1"))
    (job,) = conversation_plan(conversation=first)
    job_claim(job_id=job.pk, worker="dead", model_id=job.model_id, lease_seconds=0)
    second = ingest(conversation_document(30, external_id="c2", prefix="z"))
    time.sleep(0.01)
    with django_capture_on_commit_callbacks(execute=True):
        result = reap_and_scan()
    assert result["reaped"] == [job.pk] and result["enqueued"] == [job.pk]
    assert result["planned"] == [second.pk]
    job.refresh_from_db()
    assert (job.state, job.attempts_used) == (JobState.SUCCEEDED, 2)
    assert list(Attempt.objects.filter(job=job).values_list("failure_code", flat=True)) == ["lease_expired", ""]
    assert CompactionJob.objects.get(conversation=second).state == JobState.SUCCEEDED


def test_run_job_reports_its_outcome_and_is_a_no_op_when_redelivered(db):
    conv = ingest(conversation_document(30))
    (job,) = conversation_plan(conversation=conv)
    first = run_job(job.pk, 0)
    again = run_job(job.pk, 0)
    assert (first["status"], first["attempt"]) == ("succeeded", 1) and first["generation"]
    assert (again["status"], again["detail"]) == ("skipped", "job is succeeded")
    assert Attempt.objects.filter(job=job).count() == 1


def test_planning_many_conversations_plans_each_and_one_failure_holds_up_no_other(db, monkeypatch):
    from compaction.tasks import plan_conversations

    convs = [ingest(conversation_document(30, external_id=f"p{i}", prefix=f"p{i}")) for i in range(3)]
    real = bindings.conversation_plan_and_enqueue

    def flaky(*, conversation):
        if conversation.pk == convs[1].pk:
            raise RuntimeError("database hiccup")
        return real(conversation=conversation)

    monkeypatch.setattr(bindings, "conversation_plan_and_enqueue", flaky)
    planned = plan_conversations([c.pk for c in convs] + [999_999])
    assert set(planned) == {convs[0].pk, convs[2].pk, 999_999} and planned[999_999] == []
    assert set(CompactionJob.objects.values_list("conversation_id", flat=True)) == {convs[0].pk, convs[2].pk}
