"""An attempt's end (SPEC §5): a source that moved while it ran, immutable
generations."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from compaction.contract import ProviderResult
from compaction.engine.run import job_run
from compaction.models import Attempt, CompactionJob, ImmutableGenerationError, JobState, SummaryGeneration
from tests.compaction.conftest import FAIL_EMPTY, RecordingProvider, ingest, plan
from tests.factories import conversation_document


def test_source_changing_during_the_attempt_fails_it_as_source_changed(make_conversation):
    conv = make_conversation(30)
    (job,) = plan(conv)

    class EditingProvider(RecordingProvider):
        def summarise(self, request):
            doc = conversation_document(30)
            doc["messages"][1]["content"] = "Answer 0, edited while summarising."
            ingest(doc)
            return super().summarise(request)

    outcome = job_run(job_id=job.pk, provider=EditingProvider())
    assert (outcome.status, outcome.failure_code) == ("stale", "source_changed")
    assert not SummaryGeneration.objects.filter(job=job).exists()


def test_generations_are_immutable_in_the_orm(make_conversation, recording_provider):
    conv = make_conversation(30)
    (job,) = plan(conv)
    job_run(job_id=job.pk, provider=recording_provider)
    gen = SummaryGeneration.objects.get(job=job)
    gen.text = "rewritten"
    with pytest.raises(ImmutableGenerationError):
        gen.save()
    with pytest.raises(ImmutableGenerationError):
        gen.delete()
    with pytest.raises(ImmutableGenerationError):
        SummaryGeneration.objects.filter(pk=gen.pk).update(text="x")


@pytest.mark.parametrize("statement", [
    "UPDATE compaction_summarygeneration SET text = 'rewritten' WHERE id = %s",
    "DELETE FROM compaction_summarygeneration WHERE id = %s",
])
def test_postgres_trigger_refuses_raw_sql_on_a_generation(make_conversation, recording_provider, statement):
    from django.db import DatabaseError

    if connection.vendor != "postgresql":
        pytest.skip("the trigger exists on PostgreSQL")
    conv = make_conversation(30)
    (job,) = plan(conv)
    job_run(job_id=job.pk, provider=recording_provider)
    gen = SummaryGeneration.objects.get(job=job)
    with pytest.raises(DatabaseError, match="immutable"), transaction.atomic(), connection.cursor() as cur:
        cur.execute(statement, [gen.pk])
    assert SummaryGeneration.objects.get(pk=gen.pk).text == gen.text


class _EditThenFail(RecordingProvider):
    """Edits answer 0 while the model call is out, then the model fails."""

    def summarise(self, request):
        doc = conversation_document(30)
        doc["messages"][1]["content"] = "Answer 0, edited while summarising."
        ingest(doc)
        return ProviderResult(**FAIL_EMPTY)


@pytest.mark.parametrize("max_attempts", [2, 1])
def test_a_job_whose_source_changed_while_its_attempt_failed_ends_stale(make_conversation, max_attempts):
    """README: an ingest that moves a range's digest makes its unfinished jobs
    stale. A running job cannot be stopped, but once its attempt ends it must
    not be left failed (retried only to be refused) or exhausted (asking an
    operator for an attempt at a source that is gone)."""
    conv = make_conversation(30)
    (job,) = plan(conv)
    CompactionJob.objects.filter(pk=job.pk).update(max_attempts=max_attempts)
    outcome = job_run(job_id=job.pk, provider=_EditThenFail())
    job.refresh_from_db()
    attempt = Attempt.objects.get(job=job)
    assert (attempt.outcome, attempt.failure_code) == ("failed", "empty")  # what really happened
    assert (outcome.status, outcome.failure_code) == ("stale", "empty")
    assert job.state == JobState.STALE and job.source_changed_at is not None
    assert job.lease_owner == "" and job.lease_expires_at is None


# --- outages (issue 12): a finish tried again, a release, a settle -----------------

def _claimed(make_conversation):
    from compaction.engine.claim import job_claim

    (job,) = plan(make_conversation(30))
    claim = job_claim(job_id=job.pk, worker="w1", model_id=job.model_id)
    return claim.job, claim.attempt


GOOD = ProviderResult(text="[a-0] The fee was 0.00 EUR.", finish_reason="stop", model="extractive-v2")


@pytest.mark.parametrize("judged_ok", [True, False])
def test_a_finish_tried_again_after_its_commit_went_through_reports_what_it_recorded(make_conversation, judged_ok):
    """An outage can swallow the reply to a commit that went through: the
    retry must report that record, not "lost"."""
    from compaction.contract import ContractResult
    from compaction.engine.finish import attempt_finish

    job, attempt = _claimed(make_conversation)
    judged = ContractResult(True) if judged_ok else ContractResult(False, "empty", "blank")
    first = attempt_finish(job=job, attempt=attempt, worker="w1", result=GOOD, judged=judged)
    again = attempt_finish(job=job, attempt=attempt, worker="w1", result=GOOD, judged=judged)
    assert (again.status, again.failure_code, again.generation_id) == (first.status, first.failure_code,
                                                                       first.generation_id)
    assert again.status == ("succeeded" if judged_ok else "failed")
    assert SummaryGeneration.objects.filter(job=job).count() == (1 if judged_ok else 0)


def test_a_released_attempt_is_logged_as_infrastructure_and_gives_its_attempt_back(
        make_conversation, django_capture_on_commit_callbacks, monkeypatch):
    from compaction.engine import dispatch
    from compaction.engine.finish import attempt_release

    sent = []
    monkeypatch.setattr(dispatch, "send", lambda name, *args: sent.append((name, *args)))
    job, attempt = _claimed(make_conversation)
    with django_capture_on_commit_callbacks(execute=True):
        assert attempt_release(job_id=job.pk, number=1, worker="w1", detail="OperationalError: server closed")
    job.refresh_from_db()
    attempt.refresh_from_db()
    assert (job.state, job.attempts_used, job.max_attempts, job.lease_owner) == (JobState.PENDING, 1, 3, "")
    assert (attempt.outcome, attempt.failure_code, attempt.failure_detail) == (
        "infrastructure", "", "OperationalError: server closed")
    assert sent == [("compaction.run_job", job.pk, 1)]  # enqueued again, for the next attempt
    assert not attempt_release(job_id=job.pk, number=1, worker="w1", detail="again")  # only once
    # The next attempt is number 2, and the range still has two.
    from compaction.engine.run import job_run

    outcome = job_run(job_id=job.pk, provider=RecordingProvider(), expected_attempts_used=1)
    assert (outcome.status, outcome.attempt) == ("succeeded", 2)


def test_settling_records_the_answer_while_the_lease_lasts_and_releases_it_after(make_conversation, monkeypatch):
    from datetime import timedelta

    from django.utils import timezone

    from compaction.contract import ContractResult
    from compaction.engine.finish import attempt_settle, ending_from_message, ending_to_message

    job, attempt = _claimed(make_conversation)
    result, judged = ending_from_message(*ending_to_message(GOOD, ContractResult(True)))
    assert attempt_settle(job_id=job.pk, number=1, worker="another", result=result, judged=judged).status == "skipped"
    outcome = attempt_settle(job_id=job.pk, number=1, worker="w1", result=result, judged=judged)
    assert outcome.status == "succeeded" and SummaryGeneration.objects.get(job=job).text == GOOD.text

    late_job, late = _claimed(lambda n: make_conversation(n, external_id="late", prefix="late-"))
    CompactionJob.objects.filter(pk=late_job.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    outcome = attempt_settle(job_id=late_job.pk, number=1, worker="w1", result=result, judged=judged)
    assert outcome.status == "released" and not SummaryGeneration.objects.filter(job=late_job).exists()
    assert Attempt.objects.get(pk=late.pk).outcome == "infrastructure"
