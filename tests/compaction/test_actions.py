"""Human actions (``compaction.actions``): each writes an AuditEvent with the
actor and a required reason and queues work after commit (issue 3 §7,
issue 10: one reason rule and one set of action names for all of them)."""

from __future__ import annotations

import pytest

from compaction import actions
from compaction.bindings.segments import conversation_plan
from compaction.config.celery import app
from compaction.engine.run import job_run
from compaction.models import AuditEvent, CompactionJob, JobState, PromptVersion, SummaryGeneration
from tests.compaction.conftest import RecordingProvider, ingest
from tests.factories import conversation_document, make_user

BAD = {"text": "", "finish_reason": "stop", "model": "extractive-v2"}


@pytest.fixture
def eager():
    """Tasks sent after commit run in this process, through the real task code."""
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = False


@pytest.fixture
def operator(db):
    return make_user("op", role="operator")


def exhausted_job():
    conv = ingest(conversation_document(30))
    (job,) = conversation_plan(conversation=conv)
    bad = RecordingProvider(result=BAD)
    job_run(job_id=job.pk, provider=bad)
    job_run(job_id=job.pk, provider=bad)
    job.refresh_from_db()
    assert job.state == JobState.EXHAUSTED
    return job


def test_rerun_of_an_exhausted_job_grants_one_attempt_audits_and_runs_after_commit(
        operator, eager, django_capture_on_commit_callbacks):
    job = exhausted_job()
    with django_capture_on_commit_callbacks(execute=True):
        actions.do_job_rerun(job=job, actor=operator, reason="model was down")
    job.refresh_from_db()
    assert (job.state, job.attempts_used, job.max_attempts) == (JobState.SUCCEEDED, 3, 3)
    event = AuditEvent.objects.get(action="job.rerun")
    assert (event.actor, event.reason, event.before["state"], event.after["max_attempts"]) == (
        operator, "model was down", "exhausted", 3)


def failed_job(external_id):
    conv = ingest(conversation_document(30, external_id=external_id, prefix=external_id))
    (job,) = conversation_plan(conversation=conv)
    job_run(job_id=job.pk, provider=RecordingProvider(result=BAD))
    job.refresh_from_db()
    assert (job.state, job.attempts_used, job.max_attempts) == (JobState.FAILED, 1, 2)
    return job


def test_rerun_of_a_failed_job_runs_its_attempt_left_and_a_grant_adds_one(operator):
    rerun, granted = failed_job("rerun"), failed_job("grant")
    actions.do_job_rerun(job=rerun, actor=operator, reason="retry now")
    actions.do_job_grant_attempt(job=granted, actor=operator, reason="one more")
    rerun.refresh_from_db()
    granted.refresh_from_db()
    assert (rerun.state, rerun.max_attempts) == (JobState.PENDING, 2)
    assert (granted.state, granted.max_attempts) == (JobState.PENDING, 3)


def test_rerun_needs_a_reason_and_a_rerunnable_job(operator):
    job = exhausted_job()
    with pytest.raises(actions.ActionRefused, match="reason"):
        actions.do_job_rerun(job=job, actor=operator, reason="  ")
    CompactionJob.objects.filter(pk=job.pk).update(state=JobState.SUCCEEDED)
    with pytest.raises(actions.ActionRefused) as refused:
        actions.do_job_rerun(job=job, actor=operator, reason="again")
    assert refused.value.code == "not_rerunnable"
    assert not AuditEvent.objects.exists()


def test_rerun_under_a_newer_prompt_makes_a_new_job_and_leaves_the_old_generation(
        operator, eager, django_capture_on_commit_callbacks):
    conv = ingest(conversation_document(30))
    v2 = PromptVersion.objects.get(name="conversation-compaction@2")
    (old,) = conversation_plan(conversation=conv, prompt_version=v2)
    job_run(job_id=old.pk, provider=RecordingProvider())
    old_gen = SummaryGeneration.objects.get(job=old)
    v3 = PromptVersion.objects.get(name="conversation-compaction@3")
    with django_capture_on_commit_callbacks(execute=True):
        new = actions.do_job_rerun_with_prompt(job=old, prompt_version=v3, actor=operator, reason="prompt v3")
    new.refresh_from_db()
    assert new.pk != old.pk and new.state == JobState.SUCCEEDED and new.prompt_version == v3
    assert SummaryGeneration.objects.get(pk=old_gen.pk).text == old_gen.text
    assert SummaryGeneration.objects.filter(conversation=conv).count() == 2
    with pytest.raises(actions.ActionRefused):
        actions.do_job_rerun_with_prompt(job=new, prompt_version=v2, actor=operator, reason="older")


def test_replan_binds_only_that_range_to_its_current_source(operator, eager, django_capture_on_commit_callbacks):
    conv = ingest(conversation_document(40))
    first, second = conversation_plan(conversation=conv)
    job_run(job_id=first.pk, provider=RecordingProvider())
    bad = RecordingProvider(result=BAD)
    job_run(job_id=second.pk, provider=bad)
    job_run(job_id=second.pk, provider=bad)
    doc = conversation_document(40)
    doc["messages"][3]["content"] = "Answer 1, corrected."
    ingest(doc)
    first.refresh_from_db()
    assert first.state == JobState.SUCCEEDED and first.source_changed_at is not None
    with django_capture_on_commit_callbacks(execute=True):
        new = actions.do_job_replan(job=first, actor=operator, reason="answer 1 corrected")
    new.refresh_from_db()
    assert (new.from_pair, new.state) == (0, JobState.SUCCEEDED)
    assert new.source_digest == conv.segments.get(from_pair=0).digest != first.source_digest
    assert CompactionJob.objects.get(pk=second.pk).state == JobState.EXHAUSTED  # the other range untouched
    event = AuditEvent.objects.get(action="job.replan")
    assert (event.reason, event.before["job"], event.after["job"]) == ("answer 1 corrected", first.pk, new.pk)
    with pytest.raises(actions.ActionRefused) as refused:
        actions.do_job_replan(job=first, actor=operator, reason="again")
    assert refused.value.code == "superseded" and str(new.pk) in refused.value.message


def test_replan_is_refused_for_a_job_whose_source_did_not_change(operator):
    job = exhausted_job()
    with pytest.raises(actions.ActionRefused) as refused:
        actions.do_job_replan(job=job, actor=operator, reason="why not")
    assert refused.value.code == "source_unchanged" and not AuditEvent.objects.exists()


def test_bulk_rerun_reports_what_it_skipped(operator):
    job = exhausted_job()
    conv2 = ingest(conversation_document(30, external_id="c2", prefix="x"))
    (done,) = conversation_plan(conversation=conv2)
    job_run(job_id=done.pk, provider=RecordingProvider())
    result = actions.do_jobs_bulk_rerun(jobs=CompactionJob.objects.all(), actor=operator, reason="bulk")
    assert [j.pk for j in result.rerun] == [job.pk] and [s[0] for s in result.skipped] == [done.pk]
    assert result.replanned == []
    assert AuditEvent.objects.filter(action="job.rerun", reason="bulk").count() == 1


def test_an_ingest_that_adds_ranges_plans_and_runs_them_after_commit(db, eager, django_capture_on_commit_callbacks,
                                                                    settings):
    settings.COMPACTION_AUTO_PLAN = True
    with django_capture_on_commit_callbacks(execute=True):
        conv = ingest(conversation_document(40))
    assert CompactionJob.objects.filter(conversation=conv, state=JobState.SUCCEEDED).count() == 2


def test_rerunning_a_conversation_leaves_replaced_and_other_model_jobs_as_the_record(operator):
    conv = ingest(conversation_document(40))
    v2 = PromptVersion.objects.get(name="conversation-compaction@2")
    old_prompt, _ = conversation_plan(conversation=conv, prompt_version=v2)
    other_model, _ = conversation_plan(conversation=conv, model_id="a-model-no-longer-configured")
    current, _ = conversation_plan(conversation=conv)
    for job in (old_prompt, other_model, current):
        CompactionJob.objects.filter(pk=job.pk).update(state=JobState.EXHAUSTED, attempts_used=2)
    jobs = actions.do_conversation_rerun(conversation=conv, actor=operator, reason="provider back")
    assert current.pk in {j.pk for j in jobs}
    states = dict(CompactionJob.objects.filter(pk__in=[old_prompt.pk, other_model.pk]).values_list("pk", "state"))
    assert states == {old_prompt.pk: JobState.EXHAUSTED, other_model.pk: JobState.EXHAUSTED}


@pytest.mark.parametrize("note", ["", "  \n "])
def test_a_verdict_needs_a_note_as_every_action_needs_a_reason(operator, note):
    (job,) = conversation_plan(conversation=ingest(conversation_document(30)))
    with pytest.raises(actions.ActionRefused) as refused:
        actions.do_review_record(job=job, reviewer=operator, verdict="approved", note=note)
    assert refused.value.code == "reason_required" and not AuditEvent.objects.exists()


def test_every_action_refuses_a_reason_over_the_one_limit(operator):
    job = exhausted_job()
    too_long = "x" * (actions.REASON_MAX_CHARS + 1)
    for act in (lambda: actions.do_job_rerun(job=job, actor=operator, reason=too_long),
                lambda: actions.do_review_record(job=job, reviewer=operator, verdict="approved", note=too_long)):
        with pytest.raises(actions.ActionRefused) as refused:
            act()
        assert refused.value.code == "reason_too_long"
    assert actions.do_job_rerun(job=job, actor=operator, reason="x" * actions.REASON_MAX_CHARS).state == "pending"


def test_the_activity_log_records_only_the_named_actions(operator):
    assert {e.value for e in actions.AuditAction} == {"job.rerun", "job.grant_attempt", "job.replan",
                                                       "job.rerun_with_prompt", "conversation.rerun", "review.record",
                                                       "scope.policy_set"}
    with pytest.raises(ValueError):
        actions.activity_log(actor=operator, action="job.delete", target_type="job", target_id=1)
    assert not AuditEvent.objects.exists()

