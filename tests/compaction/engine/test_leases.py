"""Leases, retries and the scanner (SPEC §5): an expired lease is a failed
attempt; what is due again."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from compaction.contract import ProviderResult
from compaction.engine.claim import job_claim
from compaction.engine.finish import attempt_finish
from compaction.engine.leases import jobs_reap_expired, jobs_take_due, lease_held
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


# --- the reaper's condition, clause by clause (issue 18) ------------------------------------

def _claimed(make_conversation, *, lease_seconds=0, worker="w1"):
    (job,) = plan(make_conversation(30))
    assert job_claim(job_id=job.pk, worker=worker, model_id=job.model_id, lease_seconds=lease_seconds).attempt
    return CompactionJob.objects.get(pk=job.pk)


def test_a_lease_is_held_until_the_instant_it_expires_and_expired_from_that_instant():
    expires = timezone.now()
    assert lease_held(expires, now=expires - timedelta(microseconds=1))
    assert not lease_held(expires, now=expires)
    assert not lease_held(expires, now=expires + timedelta(microseconds=1))
    assert not lease_held(None, now=expires)  # no lease is not a lease held


def test_a_live_lease_is_never_reaped(make_conversation):
    job = _claimed(make_conversation, lease_seconds=60)
    assert jobs_reap_expired() == []
    assert jobs_reap_expired(now=job.lease_expires_at - timedelta(microseconds=1)) == []  # held until it expires
    job.refresh_from_db()
    assert (job.state, job.lease_owner) == (JobState.RUNNING, "w1")
    assert Attempt.objects.get(job=job).outcome == "running"


def test_a_lease_is_reaped_at_the_instant_it_expires(make_conversation):
    """The instant the settle of a handed-on answer no longer counts as the
    lease's (``test_the_lease_has_passed_at_the_instant_it_expires``) is the
    instant the reaper takes it: no instant where both or neither may act."""
    job = _claimed(make_conversation, lease_seconds=60)
    assert jobs_reap_expired(now=job.lease_expires_at) == [job.pk]
    job.refresh_from_db()
    assert (job.state, job.lease_owner, job.last_failure_code) == (JobState.FAILED, "", "lease_expired")
    assert Attempt.objects.get(job=job).outcome == "failed"


# What another process may do between the reaper's read of the expired
# leases and its conditional write; each breaks one clause of that write.
MEANWHILE = {
    "lease_renewed": lambda job: {"lease_expires_at": timezone.now() + timedelta(minutes=5)},
    "finished": lambda job: {"state": JobState.SUCCEEDED},
    "taken_by_another_worker": lambda job: {"lease_owner": "w2"},
    "a_later_attempt": lambda job: {"attempts_used": job.attempts_used + 1},
}


@pytest.mark.parametrize("change", MEANWHILE, ids=list(MEANWHILE))
def test_a_job_that_changed_after_the_reaper_read_it_is_not_reaped(make_conversation, monkeypatch, change):
    from compaction import bindings

    job = _claimed(make_conversation)
    real = bindings.binding_for

    def binding_for_after_a_change(kind):  # runs between the read and the conditional write
        CompactionJob.objects.filter(pk=job.pk).update(**MEANWHILE[change](job))
        return real(kind)

    monkeypatch.setattr(bindings, "binding_for", binding_for_after_a_change)
    assert jobs_reap_expired(now=timezone.now() + timedelta(seconds=1)) == []
    after = CompactionJob.objects.values("state", "lease_owner", "attempts_used", "last_failure_code").get(pk=job.pk)
    assert after["last_failure_code"] == "" and after["state"] != JobState.FAILED
    assert Attempt.objects.get(job=job).outcome == "running"


def test_reaping_ends_only_the_attempt_whose_lease_expired(make_conversation):
    job = _claimed(make_conversation)
    # A stray earlier attempt still marked running must keep its own record.
    CompactionJob.objects.filter(pk=job.pk).update(attempts_used=2)
    Attempt.objects.filter(job=job).update(number=2)
    stray = Attempt.objects.create(job=job, number=1, worker="w0", started_at=timezone.now(), model=job.model_id)
    assert jobs_reap_expired(now=timezone.now() + timedelta(seconds=1)) == [job.pk]
    assert Attempt.objects.get(job=job, number=2).failure_code == "lease_expired"
    stray.refresh_from_db()
    assert (stray.outcome, stray.failure_code) == ("running", "")


def test_every_expired_lease_of_one_dead_worker_is_reaped_each_with_its_own_attempt(make_conversation):
    first = _claimed(make_conversation, worker="dead")
    (second,) = plan(make_conversation(30, external_id="conv-2"))
    job_claim(job_id=second.pk, worker="dead", model_id=second.model_id, lease_seconds=0)
    live = _claimed(lambda n: make_conversation(n, external_id="conv-3"), lease_seconds=600, worker="alive")
    now = timezone.now() + timedelta(seconds=1)
    assert sorted(jobs_reap_expired(now=now)) == sorted([first.pk, second.pk])
    for job in (first, second):
        job.refresh_from_db()
        attempt = Attempt.objects.get(job=job)
        assert (job.state, job.lease_owner, job.lease_expires_at) == (JobState.FAILED, "", None)
        assert (attempt.outcome, attempt.failure_code, attempt.finished_at) == ("failed", "lease_expired", now)
        assert attempt.failure_detail == "the lease held by dead expired before the attempt finished"
    assert Attempt.objects.get(job=live).outcome == "running"
    assert CompactionJob.objects.get(pk=live.pk).state == JobState.RUNNING


def test_a_job_that_changed_meanwhile_does_not_stop_the_reaper_at_the_next(make_conversation, monkeypatch):
    from compaction import bindings

    # Created in the other order than they expired, so the order is the expiry's, not the ids'.
    other = _claimed(make_conversation)
    (changed,) = plan(make_conversation(30, external_id="conv-2"))
    job_claim(job_id=changed.pk, worker="w1", model_id=changed.model_id, lease_seconds=0)
    real, seen = bindings.binding_for, []

    def binding_for(kind):  # the first job read is renewed before its write
        if not seen:
            seen.append(True)
            CompactionJob.objects.filter(pk=changed.pk).update(lease_expires_at=timezone.now() + timedelta(hours=1))
        return real(kind)

    monkeypatch.setattr(bindings, "binding_for", binding_for)
    # The reaper ends the oldest expiry first: the changed job is read first.
    CompactionJob.objects.filter(pk=changed.pk).update(lease_expires_at=timezone.now() - timedelta(minutes=5))
    assert jobs_reap_expired(now=timezone.now() + timedelta(seconds=1)) == [other.pk]
    assert CompactionJob.objects.get(pk=changed.pk).state == JobState.RUNNING


def test_a_job_of_an_unknown_kind_is_left_running_logged_and_does_not_stop_the_reaper(make_conversation, caplog):
    import logging

    odd = _claimed(make_conversation)
    CompactionJob.objects.filter(pk=odd.pk).update(kind="no-such-kind")
    (job,) = plan(make_conversation(30, external_id="conv-2"))
    job_claim(job_id=job.pk, worker="w1", model_id=job.model_id, lease_seconds=0)
    with caplog.at_level(logging.WARNING, logger="compaction.engine.leases"):
        reaped = jobs_reap_expired(now=timezone.now() + timedelta(seconds=1))
    assert reaped == [job.pk]
    assert CompactionJob.objects.get(pk=odd.pk).state == JobState.RUNNING
    assert f"job {odd.pk}: its lease expired, but no binding of kind 'no-such-kind' is registered" in [
        r.getMessage() for r in caplog.records]


def test_a_reaped_lease_is_counted_and_sent_as_a_failed_attempt_event(make_conversation, caplog):
    import logging

    from compaction.engine.metrics import ATTEMPTS, REAPED, compaction_event

    job = _claimed(make_conversation, worker="dead")
    received = []

    def listener(sender, event, fields, **kw):
        received.append((event, fields))

    reaped_before = REAPED._value.get()
    failed_before = ATTEMPTS.labels(outcome="failed", failure_code="lease_expired")._value.get()
    compaction_event.connect(listener)
    try:
        with caplog.at_level(logging.INFO, logger="compaction.events"):
            jobs_reap_expired(now=timezone.now() + timedelta(seconds=1))
    finally:
        compaction_event.disconnect(listener)
    assert REAPED._value.get() == reaped_before + 1
    assert ATTEMPTS.labels(outcome="failed", failure_code="lease_expired")._value.get() == failed_before + 1
    assert [(e, f) for e, f in received] == [
        ("compaction_failed", {"job": job.pk, "attempt": 1, "failure_code": "lease_expired", "worker": "dead"})]


def test_the_reaper_ends_the_oldest_expiry_first(make_conversation):
    newer = _claimed(make_conversation)
    (older,) = plan(make_conversation(30, external_id="conv-2"))  # created later, expired earlier
    job_claim(job_id=older.pk, worker="w1", model_id=older.model_id, lease_seconds=0)
    CompactionJob.objects.filter(pk=older.pk).update(lease_expires_at=timezone.now() - timedelta(minutes=5))
    assert jobs_reap_expired(now=timezone.now() + timedelta(seconds=1)) == [older.pk, newer.pk]
