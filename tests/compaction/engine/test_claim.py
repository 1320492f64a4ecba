"""The atomic claim (SPEC §5): one conditional UPDATE, and why a refused
claim was refused; a prompt version freezes on first use."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from compaction.bindings.segments import SEGMENTS
from compaction.engine.claim import job_claim
from compaction.engine.run import job_run
from compaction.models import Attempt, CompactionJob, FrozenPromptError, JobState, PromptVersion
from tests.compaction.conftest import FAIL_EMPTY, RecordingProvider, plan


def refusal(job, *, model_id=None):
    """Why a claim of ``job`` was refused, and the state and attempts it left."""
    claim = job_claim(job_id=job.pk, worker="w", model_id=model_id or job.model_id)
    assert claim.attempt is None and claim.job.pk == job.pk
    job.refresh_from_db()
    return claim.refused, job.state, job.attempts_used


def test_claim_compares_the_current_digest_and_makes_a_mismatch_stale(make_conversation):
    from conversations.models import Segment

    conv = make_conversation(30)
    (job,) = plan(conv)
    # A digest that moved without the ingest hook (e.g. a bulk repair).
    Segment.objects.filter(conversation=conv).update(digest="0" * 64)
    assert refusal(job) == ("source_changed", JobState.STALE, 0)


def test_claim_refuses_another_model(make_conversation):
    conv = make_conversation(30)
    (job,) = plan(conv)
    assert refusal(job, model_id="gpt-other") == ("model_mismatch", JobState.PENDING, 0)


def test_claim_refuses_a_binding_without_twenty_distinct_ids(make_conversation):
    conv = make_conversation(30)
    (job,) = plan(conv)
    CompactionJob.objects.filter(pk=job.pk).update(message_ids=job.message_ids[:19] + [job.message_ids[0]])
    claim = job_claim(job_id=job.pk, worker="w", model_id=job.model_id)
    assert claim.attempt is None and claim.refused == "invalid_binding"
    assert CompactionJob.objects.get(pk=job.pk).state == JobState.STALE


def test_claim_refuses_a_running_job(make_conversation):
    conv = make_conversation(30)
    (job,) = plan(conv)
    first = job_claim(job_id=job.pk, worker="w1", model_id=job.model_id)
    second = job_claim(job_id=job.pk, worker="w2", model_id=job.model_id)
    assert first.attempt.number == 1 and second.attempt is None and second.refused == "state_running"


def test_first_use_freezes_the_prompt_version_and_the_orm_refuses_template_edits(make_conversation,
                                                                                   recording_provider):
    conv = make_conversation(30)
    (job,) = plan(conv)
    pv = PromptVersion.objects.get(pk=job.prompt_version_id)
    assert pv.frozen_at is None
    pv.description = "still editable"
    pv.save()
    job_run(job_id=job.pk, provider=recording_provider)
    pv = PromptVersion.objects.get(pk=job.prompt_version_id)
    assert pv.frozen_at is not None
    pv.user_template = "something else {answers}"
    with pytest.raises(FrozenPromptError):
        pv.save()
    pv = PromptVersion.objects.get(pk=job.prompt_version_id)
    pv.accepted_for_projection = pv.accepted_for_projection  # non-template fields stay editable
    pv.description = "a note"
    pv.save()


def test_postgres_refuses_raw_sql_edits_of_a_frozen_prompt(make_conversation, recording_provider):
    from django.db import DatabaseError

    if connection.vendor != "postgresql":
        pytest.skip("the trigger exists on PostgreSQL")
    conv = make_conversation(30)
    (job,) = plan(conv)
    job_run(job_id=job.pk, provider=recording_provider)
    with pytest.raises(DatabaseError, match="frozen"), transaction.atomic(), connection.cursor() as cur:
        cur.execute("UPDATE compaction_promptversion SET user_template = 'x' WHERE id = %s", [job.prompt_version_id])


def test_a_duplicated_message_for_the_first_attempt_cannot_become_the_second(make_conversation):
    conv = make_conversation(30)
    (job,) = plan(conv)
    bad = RecordingProvider(result=FAIL_EMPTY)
    first = job_run(job_id=job.pk, provider=bad, expected_attempts_used=0)
    assert (first.status, first.attempt) == ("failed", 1)
    duplicate = job_run(job_id=job.pk, provider=bad, expected_attempts_used=0)
    assert (duplicate.status, duplicate.detail) == ("skipped", "attempt_already_made")
    claim = job_claim(job_id=job.pk, worker="w", model_id=job.model_id, expected_attempts_used=0)
    assert claim.attempt is None and claim.refused == "attempt_already_made"
    assert Attempt.objects.filter(job=job).count() == 1 and len(bad.requests) == 1
    retry = job_run(job_id=job.pk, provider=bad, expected_attempts_used=1)
    assert (retry.status, retry.attempt) == ("exhausted", 2)


@pytest.mark.parametrize("ids", [
    lambda ids: ids[:19] + [ids[0]],  # a duplicate
    lambda ids: ids[:19] + [""],  # an empty id
    lambda ids: ids[:19],  # 19 ids
])
def test_the_claim_statement_itself_refuses_a_broken_id_list(make_conversation, ids, monkeypatch):
    conv = make_conversation(30)
    (job,) = plan(conv)
    CompactionJob.objects.filter(pk=job.pk).update(message_ids=ids(job.message_ids))
    job.refresh_from_db()
    # Without the Python pre-check, the conditional UPDATE must refuse alone.
    monkeypatch.setattr(SEGMENTS, "shape_problem", lambda job: "")
    claim = job_claim(job=job, worker="w", model_id=job.model_id)
    assert claim.attempt is None
    assert Attempt.objects.filter(job=job).count() == 0


def test_a_claim_of_a_failed_job_without_attempts_left_exhausts_it_and_only_it(make_conversation):
    conv = make_conversation(40)
    job, other = plan(conv)
    CompactionJob.objects.filter(pk__in=[job.pk, other.pk]).update(state=JobState.FAILED, attempts_used=2)
    assert refusal(job) == ("no_attempts_left", JobState.EXHAUSTED, 2)
    assert CompactionJob.objects.get(pk=other.pk).state == JobState.FAILED


def test_a_pending_job_without_attempts_left_is_refused_and_left_pending(make_conversation):
    # Only a failure exhausts a job; a pending one waits for what made it pending.
    (job,) = plan(make_conversation(30))
    CompactionJob.objects.filter(pk=job.pk).update(attempts_used=2)
    assert refusal(job) == ("no_attempts_left", JobState.PENDING, 2)


def test_a_binding_that_can_never_be_claimed_makes_only_its_own_job_stale(make_conversation):
    conv = make_conversation(40)
    job, other = plan(conv)
    CompactionJob.objects.filter(pk=job.pk).update(message_ids=job.message_ids[:19])
    before = CompactionJob.objects.get(pk=job.pk).updated_at
    claim = job_claim(job_id=job.pk, worker="w", model_id=job.model_id)
    assert claim.refused == "invalid_binding" and claim.job.pk == job.pk and claim.attempt is None
    job.refresh_from_db()
    assert (job.state, job.lease_owner, job.lease_expires_at) == (JobState.STALE, "", None)
    assert job.updated_at > before
    assert CompactionJob.objects.get(pk=other.pk).state == JobState.PENDING


def test_a_binding_that_can_never_be_claimed_does_not_stale_a_job_that_is_not_claimable(make_conversation):
    (job,) = plan(make_conversation(30))
    CompactionJob.objects.filter(pk=job.pk).update(message_ids=job.message_ids[:19], state=JobState.SUCCEEDED)
    assert job_claim(job_id=job.pk, worker="w", model_id=job.model_id).refused == "invalid_binding"
    assert CompactionJob.objects.get(pk=job.pk).state == JobState.SUCCEEDED


def test_the_claim_returns_the_attempt_it_wrote_and_a_lease_of_the_asked_length(make_conversation):
    from datetime import timedelta

    from django.utils import timezone

    (job,) = plan(make_conversation(30))
    before = timezone.now()
    claim = job_claim(job_id=job.pk, worker="w-7", model_id=job.model_id, lease_seconds=90)
    stored = Attempt.objects.get(job=job)
    got = claim.attempt
    assert (got.pk, got.job_id, got.number, got.worker, got.model) == (stored.pk, job.pk, 1, "w-7", job.model_id)
    assert got.started_at == stored.started_at and not got._state.adding
    row = CompactionJob.objects.get(pk=job.pk)
    assert (claim.job.state, claim.job.attempts_used, claim.job.lease_owner) == (JobState.RUNNING, 1, "w-7")
    assert claim.job.lease_expires_at == row.lease_expires_at
    assert before + timedelta(seconds=90) <= row.lease_expires_at <= timezone.now() + timedelta(seconds=90)
    assert stored.started_at >= before and claim.refused == ""


def test_a_claim_freezes_only_the_prompt_version_it_claims_under(make_conversation):
    (job,) = plan(make_conversation(30))
    others = set(PromptVersion.objects.filter(frozen_at__isnull=True).exclude(pk=job.prompt_version_id)
                 .values_list("pk", flat=True))
    job_claim(job_id=job.pk, worker="w", model_id=job.model_id)
    assert PromptVersion.objects.get(pk=job.prompt_version_id).frozen_at is not None
    assert set(PromptVersion.objects.filter(pk__in=others, frozen_at__isnull=True).values_list("pk", flat=True)) == others


def test_a_claim_refused_because_the_source_moved_makes_only_that_job_stale(make_conversation):
    from conversations.models import Segment

    conv = make_conversation(40)
    job, other = plan(conv)
    Segment.objects.filter(conversation=conv).update(digest="0" * 64)  # both ranges moved
    before = CompactionJob.objects.get(pk=job.pk).updated_at
    assert refusal(job) == ("source_changed", JobState.STALE, 0)
    assert CompactionJob.objects.get(pk=job.pk).updated_at > before
    assert CompactionJob.objects.get(pk=other.pk).state == JobState.PENDING


def test_a_second_claim_under_a_frozen_prompt_version_keeps_when_it_was_frozen(make_conversation):
    conv = make_conversation(40)
    first, second = plan(conv)
    second = CompactionJob.objects.select_related("prompt_version").get(pk=second.pk)  # read before the freeze
    job_claim(job_id=first.pk, worker="w", model_id=first.model_id)
    frozen_at = PromptVersion.objects.get(pk=first.prompt_version_id).frozen_at
    assert frozen_at is not None and second.prompt_version.frozen_at is None
    assert job_claim(job=second, worker="w", model_id=second.model_id).attempt is not None
    assert PromptVersion.objects.get(pk=first.prompt_version_id).frozen_at == frozen_at


def test_claims_are_counted_by_their_result_and_a_stale_binding_is_logged(make_conversation, caplog):
    import logging

    from compaction.engine.metrics import CLAIMS

    def count(result):
        return CLAIMS.labels(result=result)._value.get()

    conv = make_conversation(40)
    good, bad = plan(conv)
    CompactionJob.objects.filter(pk=bad.pk).update(message_ids=bad.message_ids[:19])
    before = {r: count(r) for r in ("claimed", "invalid_binding", "model_mismatch")}
    job_claim(job_id=good.pk, worker="w", model_id=good.model_id)
    with caplog.at_level(logging.WARNING, logger="compaction.engine.claim"):
        job_claim(job_id=bad.pk, worker="w", model_id=bad.model_id)
    (other,) = plan(make_conversation(30, external_id="conv-2"))
    job_claim(job_id=other.pk, worker="w", model_id="another-model")
    assert {r: count(r) - before[r] for r in before} == {"claimed": 1, "invalid_binding": 1, "model_mismatch": 1}
    assert [r.getMessage() for r in caplog.records] == [
        f"job {bad.pk} made stale: the binding does not list 20 distinct, non-empty message ids"]


def test_a_refusal_for_no_attempts_left_leaves_a_job_granted_an_attempt_since_it_was_read(make_conversation):
    """The refusal's write re-checks in the database what it read: an
    operator's grant that lands between the refused claim's read and its
    write keeps the job failed (claimable), not exhausted."""
    from compaction.engine.claim import Claimant, _refusal

    (job,) = plan(make_conversation(30))
    CompactionJob.objects.filter(pk=job.pk).update(state=JobState.FAILED, attempts_used=2, max_attempts=2)
    job.refresh_from_db()  # what the refused claim read: failed, 2 of 2
    CompactionJob.objects.filter(pk=job.pk).update(max_attempts=3)  # the grant, in between
    assert _refusal(job, Claimant("w", job.model_id, job.prompt_version_id), SEGMENTS) == "no_attempts_left"
    assert CompactionJob.objects.get(pk=job.pk).state == JobState.FAILED


def test_a_refusal_for_a_moved_source_leaves_a_job_another_worker_claimed_since_it_was_read(make_conversation):
    """Likewise the stale write: only a job still claimable is made stale,
    never one that another worker is running by now."""
    from compaction.engine.claim import Claimant, _refusal
    from conversations.models import Segment

    conv = make_conversation(30)
    (job,) = plan(conv)  # the refused claim's read: pending
    assert job_claim(job_id=job.pk, worker="w2", model_id=job.model_id).attempt is not None
    Segment.objects.filter(conversation=conv).update(digest="0" * 64)  # and then the source moved
    assert _refusal(job, Claimant("w", job.model_id, job.prompt_version_id), SEGMENTS) == "source_changed"
    assert CompactionJob.objects.values_list("state", "lease_owner").get(pk=job.pk) == (JobState.RUNNING, "w2")
