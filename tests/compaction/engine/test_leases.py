"""Leases, retries and the scanner (SPEC §5): an expired lease is a failed
attempt; what is due again."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from compaction.contract import ProviderResult
from compaction.engine.claim import job_claim
from compaction.engine.finish import attempt_finish
from compaction.engine.leases import jobs_reap_expired, jobs_take_due
from compaction.engine.run import job_run
from compaction.models import Attempt, CompactionJob, JobState, PromptVersion, SummaryGeneration
from tests.compaction.conftest import FAIL_EMPTY, RecordingProvider, ingest, plan, plan_with
from tests.factories import conversation_document


def test_an_expired_lease_is_reaped_as_a_failed_attempt(make_conversation):
    conv = make_conversation(30)
    (job,) = plan(conv)
    claim = job_claim(job_id=job.pk, worker="dead-worker", model_id=job.model_id, lease_seconds=0)
    assert claim.attempt
    reaped = jobs_reap_expired(now=timezone.now() + timedelta(seconds=1))
    assert reaped == [job.pk]
    job.refresh_from_db()
    attempt = Attempt.objects.get(job=job)
    assert (job.state, job.last_failure_code, job.attempts_used) == (JobState.FAILED, "lease_expired", 1)
    assert (attempt.outcome, attempt.failure_code) == ("failed", "lease_expired")
    # A late answer from the dead worker is dropped, not written.
    from compaction.contract import ContractResult, ProviderResult

    late = attempt_finish(job=job, attempt=attempt, worker="dead-worker",
                                   result=ProviderResult(text="late", finish_reason="stop"), judged=ContractResult(True))
    assert late.status == "lost" and not SummaryGeneration.objects.filter(job=job).exists()


def test_reaping_the_last_attempt_exhausts_the_job(make_conversation):
    conv = make_conversation(30)
    (job,) = plan(conv)
    CompactionJob.objects.filter(pk=job.pk).update(max_attempts=1)
    job_claim(job_id=job.pk, worker="dead", model_id=job.model_id, lease_seconds=0)
    jobs_reap_expired(now=timezone.now() + timedelta(seconds=1))
    assert CompactionJob.objects.get(pk=job.pk).state == JobState.EXHAUSTED


def test_failed_jobs_are_due_for_retry_only_after_the_delay(make_conversation):
    conv = make_conversation(30)
    (job,) = plan(conv)
    job_run(job_id=job.pk, provider=RecordingProvider(result=FAIL_EMPTY))
    assert jobs_take_due(retry_delay=60) == []
    later = timezone.now() + timedelta(seconds=61)
    assert jobs_take_due(now=later, retry_delay=60) == [job.pk]
    assert jobs_take_due(now=later, retry_delay=60) == []  # taken once per delay


def test_the_scanner_retries_neither_another_models_job_nor_one_a_newer_job_replaced(make_conversation):
    from compaction.models import PromptVersion

    conv = make_conversation(40)
    v2 = PromptVersion.objects.get(name="conversation-compaction@2")
    (old_prompt, other_range) = plan_with(conv, prompt_version=v2)
    (other_model, _) = plan_with(conv, model_id="a-model-no-longer-configured")
    for job in (old_prompt, other_range, other_model):
        CompactionJob.objects.filter(pk=job.pk).update(state=JobState.FAILED, attempts_used=1)
    plan(conv)  # @3 jobs for both ranges: they replace the @2 ones
    later = timezone.now() + timedelta(seconds=61)
    due = jobs_take_due(now=later, retry_delay=60)
    assert old_prompt.pk not in due and other_range.pk not in due and other_model.pk not in due


@pytest.mark.parametrize("max_attempts", [2, 1])
def test_a_reaped_job_whose_source_changed_meanwhile_ends_stale(make_conversation, max_attempts):
    conv = make_conversation(30)
    (job,) = plan(conv)
    CompactionJob.objects.filter(pk=job.pk).update(max_attempts=max_attempts)
    job_claim(job_id=job.pk, worker="dead", model_id=job.model_id, lease_seconds=0)
    doc = conversation_document(30)
    doc["messages"][1]["content"] = "Answer 0, edited while the worker hung."
    ingest(doc)
    assert jobs_reap_expired(now=timezone.now() + timedelta(seconds=1)) == [job.pk]
    job.refresh_from_db()
    attempt = Attempt.objects.get(job=job)
    assert (attempt.outcome, attempt.failure_code) == ("failed", "lease_expired")
    assert (job.state, job.last_failure_code) == (JobState.STALE, "lease_expired")
