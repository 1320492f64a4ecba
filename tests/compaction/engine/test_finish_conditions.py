"""An attempt's end moves the job only while its worker still holds it
(SPEC §5; engine.finish): state running, the same lease owner, the same
attempt number. Each condition is broken alone here, for a good answer (the
one statement that finishes it on PostgreSQL) and for a failure (the
general path), and the late answer is dropped: no generation, no recorded
outcome, the job as it was."""

from __future__ import annotations

import pytest

from compaction.contract import ContractResult, ProviderResult
from compaction.engine.claim import job_claim
from compaction.engine.finish import attempt_finish
from compaction.models import Attempt, AttemptOutcome, CompactionJob, JobState, SummaryGeneration
from tests.compaction.conftest import plan

GOOD = (ProviderResult(text="[a-0] The fee was 0.00 EUR.", finish_reason="stop", model="extractive-v2"),
        ContractResult(True))
BAD = (ProviderResult(text="", finish_reason="stop", model="extractive-v2"), ContractResult(False, "empty", "empty"))

# Each breaks one condition of "this worker still holds this attempt".
LOST_HOLD = {
    "not_running": {"state": JobState.FAILED},
    "another_owner": {"lease_owner": "w2"},
    "a_later_attempt": {"attempts_used": 2},
}


def _claimed(make_conversation):
    (job,) = plan(make_conversation(30))
    claim = job_claim(job_id=job.pk, worker="w1", model_id=job.model_id)
    return claim.job, claim.attempt


@pytest.mark.parametrize("answer", [GOOD, BAD], ids=["good", "failed"])
@pytest.mark.parametrize("lost", LOST_HOLD, ids=list(LOST_HOLD))
def test_an_attempt_whose_worker_no_longer_holds_the_job_is_dropped(make_conversation, answer, lost):
    job, attempt = _claimed(make_conversation)
    CompactionJob.objects.filter(pk=job.pk).update(**LOST_HOLD[lost])
    before = CompactionJob.objects.values("state", "lease_owner", "attempts_used", "last_failure_code").get(pk=job.pk)
    outcome = attempt_finish(job=job, attempt=attempt, worker="w1", result=answer[0], judged=answer[1])
    assert outcome.status == "lost" and outcome.generation_id is None
    assert not SummaryGeneration.objects.filter(job=job).exists()
    assert Attempt.objects.get(pk=attempt.pk).outcome == AttemptOutcome.RUNNING
    assert CompactionJob.objects.values("state", "lease_owner", "attempts_used",
                                        "last_failure_code").get(pk=job.pk) == before


@pytest.mark.parametrize("answer", [GOOD, BAD], ids=["good", "failed"])
def test_an_attempt_its_worker_still_holds_is_recorded(make_conversation, answer):
    job, attempt = _claimed(make_conversation)
    outcome = attempt_finish(job=job, attempt=attempt, worker="w1", result=answer[0], judged=answer[1])
    job.refresh_from_db()
    recorded = Attempt.objects.get(pk=attempt.pk)
    if answer is GOOD:
        assert outcome.status == job.state == JobState.SUCCEEDED
        assert recorded.outcome == AttemptOutcome.SUCCEEDED
        assert SummaryGeneration.objects.get(job=job).text == answer[0].text
    else:
        assert outcome.status == job.state == JobState.FAILED
        assert (recorded.outcome, recorded.failure_code) == (AttemptOutcome.FAILED, "empty")
        assert not SummaryGeneration.objects.filter(job=job).exists()
    assert (job.lease_owner, job.lease_expires_at) == ("", None)
