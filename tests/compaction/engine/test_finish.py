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
