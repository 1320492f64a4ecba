"""The engine's services: planning, one attempt end to end, bounded attempts,
stale sources, leases, immutability (SPEC §5)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from compaction.bindings.segments import SEGMENTS, conversation_plan
from compaction.engine.claim import job_claim
from compaction.engine.finish import attempt_finish
from compaction.engine.leases import jobs_reap_expired, jobs_take_due
from compaction.engine.run import job_run
from compaction.contract import ProviderResult
from compaction.models import (Attempt, CompactionJob, FrozenPromptError, ImmutableGenerationError, JobState,
                               PromptVersion, SummaryGeneration)
from tests.compaction.conftest import RecordingProvider, ingest, live_db
from tests.factories import conversation_document

FAIL_EMPTY = {"text": "", "finish_reason": "stop", "model": "extractive-v1"}


def plan(conv):
    return conversation_plan(conversation=conv)


def plan_with(conv, **binding):
    return conversation_plan(conversation=conv, **binding)


def test_thirty_pairs_plan_one_job_bound_to_its_source(make_conversation):
    conv = make_conversation(30)
    (job,) = plan(conv)
    assert (job.from_pair, job.to_pair, job.state) == (0, 9, JobState.PENDING)
    assert len(job.message_ids) == 20 and job.message_ids[:2] == ["u-0", "a-0"]
    assert job.source_digest == conv.segments.get().digest
    assert job.prompt_version.name == "conversation-compaction@3" and job.model_id == "extractive-v1"
    assert plan(conv) == []  # idempotent


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


def test_the_summariser_receives_only_the_ten_assistant_answers_never_user_text(db, recording_provider):
    doc = conversation_document(30)
    for m in doc["messages"]:
        if m["role"] == "user":
            m["content"] = f"USER-SECRET-{m['id']} please remember my passport number X99"
    conv = ingest(doc)
    (job,) = plan(conv)
    outcome = job_run(job_id=job.pk, provider=recording_provider)
    assert outcome.status == "succeeded", outcome
    (request,) = recording_provider.requests
    assert [a.message_id for a in request.answers] == [f"a-{i}" for i in range(10)]
    sent = request.system + request.user + "".join(a.text for a in request.answers)
    assert "USER-SECRET" not in sent and "X99" not in sent
    assert all(f"[a-{i}]" in request.user for i in range(10))


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


def test_an_edited_message_makes_the_job_stale_and_it_never_runs(make_conversation, recording_provider):
    conv = make_conversation(30)
    (job,) = plan(conv)
    doc = conversation_document(30)
    doc["messages"][5]["content"] = "Answer 2, corrected."
    ingest(doc)
    job.refresh_from_db()
    assert job.state == JobState.STALE  # the ingest transaction marked it
    outcome = job_run(job_id=job.pk, provider=recording_provider)
    assert outcome.status == "skipped" and recording_provider.requests == []
    (new_job,) = plan(conv)
    assert new_job.source_digest != job.source_digest


def test_a_succeeded_job_records_when_its_source_changed_and_an_undo_clears_it(
        make_conversation, recording_provider):
    conv = make_conversation(40)
    first, second = plan(conv)
    for job in (first, second):
        job_run(job_id=job.pk, provider=recording_provider)
    doc = conversation_document(40)
    doc["messages"][5]["content"] = "Answer 2, corrected."
    ingest(doc)
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.state == JobState.SUCCEEDED and first.source_changed_at is not None
    assert second.source_changed_at is None  # its range did not change
    ingest(conversation_document(40))  # the correction taken back
    first.refresh_from_db()
    assert first.state == JobState.SUCCEEDED and first.source_changed_at is None


def test_undoing_an_edit_revives_the_job_it_made_stale_and_runs_it(
        make_conversation, django_capture_on_commit_callbacks):
    from compaction.config.celery import app

    conv = make_conversation(30)
    (job,) = plan(conv)
    doc = conversation_document(30)
    doc["messages"][5]["content"] = "Answer 2, corrected."
    ingest(doc)
    job.refresh_from_db()
    assert job.state == JobState.STALE and job.source_changed_at is not None
    app.conf.task_always_eager = True  # the enqueued run_job runs here, for real
    try:
        with django_capture_on_commit_callbacks(execute=True):
            ingest(conversation_document(30))
    finally:
        app.conf.task_always_eager = False
    job.refresh_from_db()
    # Its binding is unique, so planning could never bind a new job to it:
    # the job itself is pending again, enqueued once the undo committed.
    assert (job.state, job.source_changed_at, job.attempts_used) == (JobState.SUCCEEDED, None, 1)
    assert CompactionJob.objects.filter(conversation=conv).count() == 1


def test_claim_compares_the_current_digest_and_makes_a_mismatch_stale(make_conversation):
    from conversations.models import Segment

    conv = make_conversation(30)
    (job,) = plan(conv)
    # A digest that moved without the ingest hook (e.g. a bulk repair).
    Segment.objects.filter(conversation=conv).update(digest="0" * 64)
    claim = job_claim(job_id=job.pk, worker="w", model_id=job.model_id)
    assert claim.attempt is None and claim.refused == "source_changed"
    job.refresh_from_db()
    assert job.state == JobState.STALE and job.attempts_used == 0


def test_claim_refuses_another_model(make_conversation):
    conv = make_conversation(30)
    (job,) = plan(conv)
    claim = job_claim(job_id=job.pk, worker="w", model_id="gpt-other")
    assert claim.attempt is None and claim.refused == "model_mismatch"
    job.refresh_from_db()
    assert job.state == JobState.PENDING and job.attempts_used == 0


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


@live_db
def test_the_model_call_runs_outside_any_transaction(recording_provider):
    conv = ingest(conversation_document(30))
    (job,) = plan(conv)
    job_run(job_id=job.pk, provider=recording_provider)
    assert recording_provider.in_transaction == [False]
    assert not connection.in_atomic_block


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


def _cancel_last_run(doc):
    doc["runs"][-1]["status"] = "cancelled"
    return doc


def test_a_range_planned_again_with_its_old_source_revives_its_stale_job(make_conversation):
    """The newest run of a 30-pair conversation is cancelled: range 0-9 is no
    longer planned (29 pairs), so its pending job goes stale. The next run
    completes: the range is planned again with exactly the source the job is
    bound to. The job must be usable again, not stuck stale forever (its
    binding is unique, so planning can never bind another job to it)."""
    from tests.factories import pair_messages

    conv = make_conversation(30)
    (job,) = plan(conv)
    ingest(_cancel_last_run(conversation_document(30)))
    job.refresh_from_db()
    assert job.state == JobState.STALE and job.source_changed_at is not None
    doc = _cancel_last_run(conversation_document(30))
    run, messages = pair_messages(30)
    doc["runs"].append(run)
    doc["messages"].extend(messages)
    ingest(doc)
    assert conv.segments.get().digest == job.source_digest
    job.refresh_from_db()
    assert (job.state, job.source_changed_at) == (JobState.PENDING, None)
    outcome = job_run(job_id=job.pk, provider=RecordingProvider())
    assert outcome.status == "succeeded"


def test_a_succeeded_range_planned_again_with_its_old_source_is_not_marked_changed(
        make_conversation, recording_provider):
    from tests.factories import pair_messages

    conv = make_conversation(30)
    (job,) = plan(conv)
    job_run(job_id=job.pk, provider=recording_provider)
    ingest(_cancel_last_run(conversation_document(30)))
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED and job.source_changed_at is not None
    doc = _cancel_last_run(conversation_document(30))
    run, messages = pair_messages(30)
    doc["runs"].append(run)
    doc["messages"].extend(messages)
    ingest(doc)
    job.refresh_from_db()
    assert (job.state, job.source_changed_at) == (JobState.SUCCEEDED, None)


def test_the_configured_attempt_limit_binds_new_jobs(make_conversation, settings):
    """README: COMPACTION_MAX_ATTEMPTS is the attempts per range and prompt
    version before ``exhausted``."""
    settings.COMPACTION_MAX_ATTEMPTS = 3
    conv = make_conversation(30)
    (job,) = plan(conv)
    assert job.max_attempts == 3
    bad = RecordingProvider(result=FAIL_EMPTY)
    outcomes = [job_run(job_id=job.pk, provider=bad).status for _ in range(4)]
    assert outcomes == ["failed", "failed", "exhausted", "skipped"]


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
