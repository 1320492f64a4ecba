"""One attempt end to end (SPEC §5): a generation with the binding copied
in, bounded attempts, the model call outside any transaction."""

from __future__ import annotations

from django.db import connection

from compaction.engine.run import job_run
from compaction.models import Attempt, CompactionJob, JobState, SummaryGeneration
from tests.compaction.conftest import FAIL_EMPTY, RecordingProvider, ingest, live_db, plan
from tests.factories import conversation_document


def test_a_good_attempt_writes_one_generation_with_the_binding_copied_in(make_conversation, recording_provider):
    conv = make_conversation(40)
    jobs = plan(conv)
    outcomes = [job_run(job_id=j.pk, provider=recording_provider) for j in jobs]
    assert [o.status for o in outcomes] == ["succeeded", "succeeded"]
    gens = list(SummaryGeneration.objects.filter(conversation=conv).order_by("number"))
    assert [g.number for g in gens] == [1, 2]
    job = CompactionJob.objects.get(pk=jobs[0].pk)
    assert job.state == JobState.SUCCEEDED and job.attempts_used == 1 and job.lease_owner == ""
    g = gens[0]
    assert (g.from_pair, g.to_pair, g.source_digest, g.message_ids, g.model_id, g.prompt_version_id) == (
        job.from_pair, job.to_pair, job.source_digest, job.message_ids, job.model_id, job.prompt_version_id)
    assert "[a-0]" in g.text and g.text_bytes == len(g.text.encode())
    attempt = job.attempts.get()
    assert attempt.outcome == "succeeded" and attempt.finish_reason == "stop"
    assert attempt.input_tokens > 0 and attempt.output_tokens > 0 and attempt.raw_output == g.text


def test_two_failed_attempts_exhaust_the_job(make_conversation):
    conv = make_conversation(30)
    (job,) = plan(conv)
    bad = RecordingProvider(result=FAIL_EMPTY)
    first = job_run(job_id=job.pk, provider=bad)
    assert (first.status, first.failure_code, first.attempt) == ("failed", "empty", 1)
    second = job_run(job_id=job.pk, provider=bad)
    assert (second.status, second.failure_code, second.attempt) == ("exhausted", "empty", 2)
    third = job_run(job_id=job.pk, provider=bad)
    assert third.status == "skipped"
    assert Attempt.objects.filter(job=job).count() == 2
    assert len(bad.requests) == 2


def test_a_failed_attempt_keeps_what_the_model_returned_up_to_the_cap(make_conversation, settings):
    settings.COMPACTION_RAW_OUTPUT_CAP = 100
    conv = make_conversation(30)
    (job,) = plan(conv)
    long = RecordingProvider(result={"text": "y" * 6001, "finish_reason": "stop", "raw": "y" * 6001})
    outcome = job_run(job_id=job.pk, provider=long)
    attempt = Attempt.objects.get(job=job)
    assert outcome.failure_code == attempt.failure_code == "too_long"
    assert attempt.raw_output == "y" * 100 and attempt.raw_output_truncated


@live_db
def test_the_model_call_runs_outside_any_transaction(recording_provider):
    conv = ingest(conversation_document(30))
    (job,) = plan(conv)
    job_run(job_id=job.pk, provider=recording_provider)
    assert recording_provider.in_transaction == [False]
    assert not connection.in_atomic_block
