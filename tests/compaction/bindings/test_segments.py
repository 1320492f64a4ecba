"""The segment binding (SPEC §5): planning jobs for planned ranges, what the
summariser sees, and how an ingest that moves a range's digest reaches its jobs."""

from __future__ import annotations

from compaction.engine.run import job_run
from compaction.models import CompactionJob, JobState
from tests.compaction.conftest import FAIL_EMPTY, RecordingProvider, ingest, plan
from tests.factories import conversation_document, pair_messages


def test_thirty_pairs_plan_one_job_bound_to_its_source(make_conversation):
    conv = make_conversation(30)
    (job,) = plan(conv)
    assert (job.from_pair, job.to_pair, job.state) == (0, 9, JobState.PENDING)
    assert len(job.message_ids) == 20 and job.message_ids[:2] == ["u-0", "a-0"]
    assert job.source_digest == conv.segments.get().digest
    assert job.prompt_version.name == "conversation-compaction@3" and job.model_id == "extractive-v2"
    assert plan(conv) == []  # idempotent


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


def test_an_edited_message_makes_the_job_stale_and_it_never_runs(make_conversation, recording_provider):
    conv = make_conversation(30)
    (job,) = plan(conv)
    ingest(answer_2_corrected(30))
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
    ingest(answer_2_corrected(40))
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
    ingest(answer_2_corrected(30))
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


def answer_2_corrected(n_pairs: int) -> dict:
    """The conversation with pair 2's answer edited (it lies in range 0-9)."""
    doc = conversation_document(n_pairs)
    doc["messages"][5]["content"] = "Answer 2, corrected."
    return doc


def _cancel_last_run(doc):
    doc["runs"][-1]["status"] = "cancelled"
    return doc


def _planned_again():
    """The 30-pair conversation with its newest run cancelled, then one more
    run: range 0-9 is planned again, with exactly its old source."""
    doc = _cancel_last_run(conversation_document(30))
    run, messages = pair_messages(30)
    doc["runs"].append(run)
    doc["messages"].extend(messages)
    return doc


def test_a_range_planned_again_with_its_old_source_revives_its_stale_job(make_conversation):
    """The newest run of a 30-pair conversation is cancelled: range 0-9 is no
    longer planned (29 pairs), so its pending job goes stale. The next run
    completes: the range is planned again with exactly the source the job is
    bound to. The job must be usable again, not stuck stale forever (its
    binding is unique, so planning can never bind another job to it)."""
    conv = make_conversation(30)
    (job,) = plan(conv)
    ingest(_cancel_last_run(conversation_document(30)))
    job.refresh_from_db()
    assert job.state == JobState.STALE and job.source_changed_at is not None
    ingest(_planned_again())
    assert conv.segments.get().digest == job.source_digest
    job.refresh_from_db()
    assert (job.state, job.source_changed_at) == (JobState.PENDING, None)
    outcome = job_run(job_id=job.pk, provider=RecordingProvider())
    assert outcome.status == "succeeded"


def test_a_succeeded_range_planned_again_with_its_old_source_is_not_marked_changed(
        make_conversation, recording_provider):
    conv = make_conversation(30)
    (job,) = plan(conv)
    job_run(job_id=job.pk, provider=recording_provider)
    ingest(_cancel_last_run(conversation_document(30)))
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED and job.source_changed_at is not None
    ingest(_planned_again())
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


def test_a_conversation_with_several_unplanned_ranges_is_listed_once(db):
    from compaction.bindings import conversations_unplanned

    first = ingest(conversation_document(60, external_id="many"))  # four unplanned ranges
    second = ingest(conversation_document(40, external_id="two", prefix="t"))  # two
    assert first.segments.count() == 4 and second.segments.count() == 2
    assert sorted(conversations_unplanned()) == sorted([first.pk, second.pk])
    assert conversations_unplanned(limit=1) == [min(first.pk, second.pk)]


def test_undoing_an_edit_revives_a_job_without_attempts_left_as_exhausted(make_conversation):
    # Revived, the job is as it was: with no attempt left it waits for an
    # operator's grant again, it does not get a third attempt by the undo.
    conv = make_conversation(30)
    (job,) = plan(conv)
    CompactionJob.objects.filter(pk=job.pk).update(state=JobState.EXHAUSTED, attempts_used=2)
    ingest(answer_2_corrected(30))
    job.refresh_from_db()
    assert job.state == JobState.STALE
    ingest(conversation_document(30))
    job.refresh_from_db()
    assert (job.state, job.source_changed_at, job.attempts_used, job.max_attempts) == (
        JobState.EXHAUSTED, None, 2, 2)
