"""What an attempt's end writes (SPEC §5 "Attempts", "Immutable success";
engine.finish), field by field: the attempt's record of what the provider
sent, the job's move (only while its worker still holds that attempt, and
a success only while the binding is current, else ``source_changed`` and
``stale``), the generation that copies the whole binding in, and the ends
an outage leaves behind (issue 12): a release that gives the attempt back,
a settle, a finish tried again. Each end touches only its own job and its
own attempt. These run on PostgreSQL and on the SQLite default (the finish
has a branch per database)."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from compaction.contract import ContractResult, ProviderResult
from compaction.engine import finish
from compaction.engine.claim import job_claim
from compaction.engine.finish import LOST, RunOutcome, attempt_finish, attempt_release, attempt_settle
from compaction.engine.leases import jobs_reap_expired
from compaction.models import Attempt, AttemptOutcome, CompactionJob, JobState, SummaryGeneration
from tests.compaction.conftest import ingest, plan
from tests.factories import conversation_document

GOOD = ProviderResult(text="[a-0] The fee was 0.00 EUR.", finish_reason="stop", model="provider-model-7",
                      input_tokens=11, output_tokens=22, latency_ms=33, raw='{"choices": ["the reply as sent"]}')
OK = ContractResult(True)
BAD = ProviderResult(text="", finish_reason="stop", model="extractive-v2")
EMPTY = ContractResult(False, "empty", "blank")
DEFAULT_WHY = "the attempt could not be recorded before its lease passed"


def _claim(job, worker="w1"):
    claim = job_claim(job_id=job.pk, worker=worker, model_id=job.model_id)
    assert claim.attempt is not None, claim
    return claim.job, claim.attempt


def _claimed(make_conversation, name="conv-1", worker="w1"):
    (job, *_) = plan(make_conversation(30, external_id=name, prefix=f"{name}-"))
    return _claim(job, worker)


def _row(job):
    return CompactionJob.objects.values("state", "lease_owner", "lease_expires_at", "attempts_used", "max_attempts",
                                        "last_failure_code", "updated_at").get(pk=job.pk)


def _assert_ended(job, state, failure_code, *, before=None):
    """The job's row after an attempt's end: ``state`` and ``failure_code``,
    the lease released (no owner, no expiry) and, given the row ``before``
    the end, written since."""
    row = _row(job)
    assert (row["state"], row["last_failure_code"], row["lease_owner"], row["lease_expires_at"]) == (
        state, failure_code, "", None)
    if before is not None:
        assert row["updated_at"] > before["updated_at"]


def _edit_source(name="conv-1"):
    doc = conversation_document(30, external_id=name, prefix=f"{name}-")
    doc["messages"][1]["content"] = "Answer 0, edited while summarising."
    ingest(doc)


# --- a good attempt ------------------------------------------------------------------------


def test_a_good_attempt_records_what_the_provider_sent_and_its_generation_copies_the_whole_binding(
        make_conversation):
    """The second generation of a conversation is number 2, and a job that
    failed once ends succeeded with no failure code left on it."""
    first_job, second_job = plan(make_conversation(40))
    job, attempt = _claim(first_job)
    assert attempt_finish(job=job, attempt=attempt, worker="w1", result=GOOD, judged=OK).status == "succeeded"
    parent = SummaryGeneration.objects.get(job=first_job)
    assert parent.number == 1
    # A job bound to a parent generation (as a hand-off is) copies the parent in too.
    CompactionJob.objects.filter(pk=second_job.pk).update(parent_generation=parent, parent_digest="d" * 64)
    job, attempt = _claim(second_job)
    failed = attempt_finish(job=job, attempt=attempt, worker="w1", result=BAD, judged=EMPTY)
    assert (failed.status, _row(job)["last_failure_code"]) == (JobState.FAILED, "empty")
    job, attempt = _claim(job)
    before = _row(job)
    outcome = attempt_finish(job=job, attempt=attempt, worker="w1", result=GOOD, judged=OK)

    generation = SummaryGeneration.objects.get(job=job)
    assert outcome == RunOutcome(job.pk, JobState.SUCCEEDED, attempt=2, generation_id=generation.pk)
    assert job.state == JobState.SUCCEEDED
    _assert_ended(job, JobState.SUCCEEDED, "", before=before)
    recorded = Attempt.objects.get(pk=attempt.pk)
    assert recorded.finished_at is not None and recorded.finished_at >= before["updated_at"]
    assert (recorded.outcome, recorded.failure_code, recorded.failure_detail) == (AttemptOutcome.SUCCEEDED, "", "")
    assert (recorded.model, recorded.finish_reason, recorded.input_tokens, recorded.output_tokens,
            recorded.latency_ms) == ("provider-model-7", "stop", 11, 22, 33)
    assert (recorded.raw_output, recorded.raw_output_truncated, recorded.tool_calls) == (GOOD.raw, False, None)
    job.refresh_from_db()
    assert (generation.number, generation.text, generation.text_bytes) == (2, GOOD.text, len(GOOD.text.encode()))
    copied = ["conversation_id", "kind", "scope", "from_pair", "to_pair", "message_ids", "source_digest", "model_id",
              "prompt_version_id", "parent_digest"]
    assert {f: getattr(generation, f) for f in copied} == {f: getattr(job, f) for f in copied}
    assert (generation.parent_id, generation.parent_digest, generation.from_pair) == (parent.pk, "d" * 64, 10)
    assert Attempt.objects.get(job=job, number=1).outcome == AttemptOutcome.FAILED  # the first stays as it was


def test_a_good_attempt_without_a_model_name_records_the_jobs_model(make_conversation):
    job, attempt = _claimed(make_conversation)
    attempt_finish(job=job, attempt=attempt, worker="w1", result=ProviderResult(text=GOOD.text, finish_reason="stop"),
                   judged=OK)
    assert Attempt.objects.get(pk=attempt.pk).model == job.model_id


@pytest.mark.skipif("connection.vendor != 'postgresql'")
def test_on_postgresql_a_good_attempt_is_finished_by_its_one_statement_alone(make_conversation):
    """SPEC §5: the job's conditional move, the attempt's record and the
    generation in one statement; nothing else is written or read."""
    job, attempt = _claimed(make_conversation)
    with CaptureQueriesContext(connection) as queries:
        outcome = attempt_finish(job=job, attempt=attempt, worker="w1", result=GOOD, judged=OK)
    assert outcome.status == JobState.SUCCEEDED
    assert [q["sql"] for q in queries if not q["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT"))] == []
    assert SummaryGeneration.objects.filter(job=job).count() == 1


# --- a failed attempt ----------------------------------------------------------------------


def test_a_failed_attempt_records_what_arrived_and_why(make_conversation):
    job, attempt = _claimed(make_conversation)
    result = ProviderResult(text="It reads well.", finish_reason=None, model="", input_tokens=5, output_tokens=6,
                            latency_ms=7, tool_calls=[{"id": "call-1", "type": "function"}])
    judged = ContractResult(False, "tool_calls", "d" * 2500)
    before = _row(job)
    outcome = attempt_finish(job=job, attempt=attempt, worker="w1", result=result, judged=judged)
    assert outcome == RunOutcome(job.pk, JobState.FAILED, failure_code="tool_calls", attempt=1, detail="d" * 2500)
    assert job.state == JobState.FAILED
    _assert_ended(job, JobState.FAILED, "tool_calls", before=before)
    recorded = Attempt.objects.get(pk=attempt.pk)
    assert recorded.finished_at is not None
    assert (recorded.outcome, recorded.failure_code, recorded.failure_detail) == (
        AttemptOutcome.FAILED, "tool_calls", "d" * 2000)  # the detail is kept up to 2,000 characters
    assert (recorded.model, recorded.finish_reason, recorded.input_tokens, recorded.output_tokens,
            recorded.latency_ms) == (job.model_id, "", 5, 6, 7)
    assert (recorded.raw_output, recorded.tool_calls) == ("It reads well.", [{"id": "call-1", "type": "function"}])
    assert not SummaryGeneration.objects.filter(job=job).exists()


def test_a_failed_attempts_finish_reason_is_kept_up_to_50_characters(make_conversation):
    job, attempt = _claimed(make_conversation)
    reason = "content_filter:" + "x" * 60
    attempt_finish(job=job, attempt=attempt, worker="w1", result=ProviderResult(text="x", finish_reason=reason),
                   judged=ContractResult(False, "finish_reason", "not stop"))
    assert Attempt.objects.get(pk=attempt.pk).finish_reason == reason[:50]


@pytest.mark.parametrize("raw,text,kept", [("the raw reply", "its text", "the raw reply"),
                                           (None, "its text", "its text"), (None, None, "")],
                         ids=["raw", "text only", "nothing"])
def test_the_raw_output_is_the_reply_as_sent_else_its_text_else_empty(make_conversation, raw, text, kept):
    job, attempt = _claimed(make_conversation)
    attempt_finish(job=job, attempt=attempt, worker="w1",
                   result=ProviderResult(raw=raw, text=text, finish_reason="stop"), judged=EMPTY)
    assert Attempt.objects.get(pk=attempt.pk).raw_output == kept


def test_a_raw_output_over_the_cap_is_cut_and_marked_cut(make_conversation, settings):
    settings.COMPACTION_RAW_OUTPUT_CAP = 10
    job, attempt = _claimed(make_conversation)
    attempt_finish(job=job, attempt=attempt, worker="w1", result=ProviderResult(raw="r" * 25, finish_reason="stop"),
                   judged=EMPTY)
    recorded = Attempt.objects.get(pk=attempt.pk)
    assert (recorded.raw_output, recorded.raw_output_truncated) == ("r" * 10, True)


# --- the source changed while the attempt ran ----------------------------------------------


@pytest.mark.parametrize("answer", ["good", "failed"])
def test_an_attempt_whose_source_changed_while_it_ran_ends_stale(make_conversation, answer):
    job, attempt = _claimed(make_conversation)
    _edit_source()
    result, judged = (GOOD, OK) if answer == "good" else (BAD, EMPTY)
    outcome = attempt_finish(job=job, attempt=attempt, worker="w1", result=result, judged=judged)
    code, detail = ("source_changed", "the source changed while the attempt ran") if answer == "good" else (
        "empty", "blank")
    assert outcome == RunOutcome(job.pk, JobState.STALE, failure_code=code, attempt=1, detail=detail)
    _assert_ended(job, JobState.STALE, code)
    recorded = Attempt.objects.get(pk=attempt.pk)
    assert (recorded.outcome, recorded.failure_code, recorded.failure_detail) == (AttemptOutcome.FAILED, code, detail)
    assert not SummaryGeneration.objects.filter(job=job).exists()


@pytest.mark.parametrize("answer", ["good", "failed"])
def test_an_attempt_whose_source_changed_and_whose_worker_lost_the_job_is_dropped(make_conversation, answer):
    job, attempt = _claimed(make_conversation)
    _edit_source()
    CompactionJob.objects.filter(pk=job.pk).update(lease_owner="w2")
    before = _row(job)
    result, judged = (GOOD, OK) if answer == "good" else (BAD, EMPTY)
    outcome = attempt_finish(job=job, attempt=attempt, worker="w1", result=result, judged=judged)
    assert outcome == RunOutcome(job.pk, "lost", attempt=1, detail=LOST)
    assert _row(job) == before
    assert Attempt.objects.get(pk=attempt.pk).outcome == AttemptOutcome.RUNNING


def test_a_reaped_attempts_late_answer_is_dropped_not_reported_as_recorded(make_conversation):
    """The reaper's ``lease_expired`` is not this worker's record: its late
    answer is lost, not taken for an earlier try of its own finish."""
    (job,) = plan(make_conversation(30))
    claim = job_claim(job_id=job.pk, worker="w1", model_id=job.model_id, lease_seconds=0)
    assert jobs_reap_expired(now=timezone.now() + timedelta(seconds=1)) == [job.pk]
    for result, judged in ((GOOD, OK), (BAD, EMPTY)):
        outcome = attempt_finish(job=claim.job, attempt=claim.attempt, worker="w1", result=result, judged=judged)
        assert outcome == RunOutcome(job.pk, "lost", attempt=1, detail=LOST)
    assert not SummaryGeneration.objects.filter(job=job).exists()


@pytest.mark.parametrize("answer", ["good", "failed"])
def test_a_finish_tried_again_reports_exactly_the_outcome_it_recorded(make_conversation, answer):
    job, attempt = _claimed(make_conversation)
    result, judged = (GOOD, OK) if answer == "good" else (BAD, EMPTY)
    first = attempt_finish(job=job, attempt=attempt, worker="w1", result=result, judged=judged)
    job.state = JobState.RUNNING  # the caller's copy, as it was before the reply was lost
    again = attempt_finish(job=job, attempt=attempt, worker="w1", result=result, judged=judged)
    assert again == first
    assert again.attempt == 1 and again.job_id == job.pk
    assert job.state == first.status


# --- each end touches only its own job and attempt -----------------------------------------


def _two_held(make_conversation):
    """Two jobs ``w1`` holds, each at attempt 1; the ends below are of the second."""
    return _claimed(make_conversation, "conv-a"), _claimed(make_conversation, "conv-b")


def _untouched(job, attempt, before):
    assert _row(job) == before
    assert Attempt.objects.get(pk=attempt.pk).outcome == AttemptOutcome.RUNNING


def test_a_failed_end_moves_only_its_own_job(make_conversation):
    (other, other_attempt), (job, attempt) = _two_held(make_conversation)
    before = _row(other)
    assert attempt_finish(job=job, attempt=attempt, worker="w1", result=BAD, judged=EMPTY).status == JobState.FAILED
    _untouched(other, other_attempt, before)


def test_a_release_ends_only_its_own_job_and_attempt(make_conversation):
    (other, other_attempt), (job, attempt) = _two_held(make_conversation)
    before = _row(other)
    assert attempt_release(job_id=job.pk, number=1, worker="w1", detail="OperationalError")
    _untouched(other, other_attempt, before)
    assert Attempt.objects.get(pk=attempt.pk).outcome == AttemptOutcome.INFRASTRUCTURE


def test_a_settle_records_its_own_attempt(make_conversation):
    (other, other_attempt), (job, attempt) = _two_held(make_conversation)
    before = _row(other)
    outcome = attempt_settle(job_id=job.pk, number=1, worker="w1", result=GOOD, judged=OK)
    assert outcome.status == JobState.SUCCEEDED
    assert Attempt.objects.get(pk=attempt.pk).outcome == AttemptOutcome.SUCCEEDED
    _untouched(other, other_attempt, before)


# --- a release (issue 12) ------------------------------------------------------------------

LOST_HOLD = {
    "not_running": {"state": JobState.FAILED},
    "another_owner": {"lease_owner": "w2"},
    "a_later_attempt": {"attempts_used": 2},
}


@pytest.mark.parametrize("lost", LOST_HOLD, ids=list(LOST_HOLD))
def test_a_release_by_a_worker_that_no_longer_holds_the_attempt_changes_nothing(make_conversation, lost):
    job, attempt = _claimed(make_conversation)
    CompactionJob.objects.filter(pk=job.pk).update(**LOST_HOLD[lost])
    before = _row(job)
    assert not attempt_release(job_id=job.pk, number=1, worker="w1", detail="OperationalError")
    _untouched(job, attempt, before)


def test_a_release_gives_up_the_lease_and_ends_the_attempt_now_with_its_reason(make_conversation):
    job, attempt = _claimed(make_conversation)
    before = _row(job)
    assert attempt_release(job_id=job.pk, number=1, worker="w1", detail="x" * 2500)
    row = _row(job)
    assert (row["state"], row["lease_owner"], row["lease_expires_at"]) == (JobState.PENDING, "", None)
    assert row["updated_at"] > before["updated_at"]
    recorded = Attempt.objects.get(pk=attempt.pk)
    assert recorded.finished_at is not None and recorded.finished_at >= before["updated_at"]
    assert (recorded.outcome, recorded.failure_detail) == (AttemptOutcome.INFRASTRUCTURE, "x" * 2000)


# --- a settle (issue 12) -------------------------------------------------------------------


def test_a_settle_by_a_worker_that_no_longer_holds_the_attempt_is_skipped_and_says_so(make_conversation):
    job, attempt = _claimed(make_conversation)
    outcome = attempt_settle(job_id=job.pk, number=1, worker="another", result=GOOD, judged=OK)
    assert outcome == RunOutcome(job.pk, "skipped", attempt=1, detail="attempt 1 is no longer held by another")
    assert Attempt.objects.get(pk=attempt.pk).outcome == AttemptOutcome.RUNNING


@pytest.mark.parametrize("detail,why", [("", DEFAULT_WHY), ("OperationalError: gone", "OperationalError: gone")],
                         ids=["default reason", "given reason"])
def test_a_settle_after_the_lease_passed_releases_the_attempt_with_its_reason(make_conversation, detail, why):
    job, attempt = _claimed(make_conversation)
    CompactionJob.objects.filter(pk=job.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    outcome = attempt_settle(job_id=job.pk, number=1, worker="w1", result=GOOD, judged=OK, detail=detail)
    assert outcome == RunOutcome(job.pk, "released", attempt=1, detail=why)
    assert (Attempt.objects.get(pk=attempt.pk).outcome, Attempt.objects.get(pk=attempt.pk).failure_detail) == (
        AttemptOutcome.INFRASTRUCTURE, why)
    assert not SummaryGeneration.objects.filter(job=job).exists()


def test_a_settle_without_an_answer_releases_the_attempt_while_the_lease_lasts(make_conversation):
    job, attempt = _claimed(make_conversation)
    outcome = attempt_settle(job_id=job.pk, number=1, worker="w1", result=None, judged=None)
    assert outcome == RunOutcome(job.pk, "released", attempt=1, detail=DEFAULT_WHY)


def test_the_lease_has_passed_at_the_instant_it_expires(make_conversation, monkeypatch):
    job, attempt = _claimed(make_conversation)
    expiry = CompactionJob.objects.get(pk=job.pk).lease_expires_at
    monkeypatch.setattr(finish, "timezone", SimpleNamespace(now=lambda: expiry))
    outcome = attempt_settle(job_id=job.pk, number=1, worker="w1", result=GOOD, judged=OK)
    assert outcome.status == "released" and not SummaryGeneration.objects.filter(job=job).exists()


def test_a_settle_whose_attempt_the_reaper_ended_meanwhile_is_skipped_and_says_so(make_conversation, monkeypatch):
    """The reaper lands between the settle's read (the worker still held the
    attempt) and its release: the release is refused, the reaper's record stands."""
    job, attempt = _claimed(make_conversation)
    CompactionJob.objects.filter(pk=job.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    real_release = finish.attempt_release

    def reaped_first(**kwargs):
        assert jobs_reap_expired() == [job.pk]
        return real_release(**kwargs)

    monkeypatch.setattr(finish, "attempt_release", reaped_first)
    outcome = attempt_settle(job_id=job.pk, number=1, worker="w1", result=None, judged=None)
    assert outcome == RunOutcome(job.pk, "skipped", attempt=1, detail="the attempt ended meanwhile")
    recorded = Attempt.objects.get(pk=attempt.pk)
    assert (recorded.outcome, recorded.failure_code) == (AttemptOutcome.FAILED, "lease_expired")


def test_a_settle_records_the_attempt_it_names_not_an_earlier_one(make_conversation):
    job, first = _claimed(make_conversation)
    assert attempt_release(job_id=job.pk, number=1, worker="w1", detail="OperationalError")
    job, second = _claim(job)
    assert second.number == 2
    outcome = attempt_settle(job_id=job.pk, number=2, worker="w1", result=GOOD, judged=OK)
    assert (outcome.status, outcome.attempt) == (JobState.SUCCEEDED, 2)
    assert Attempt.objects.get(pk=second.pk).outcome == AttemptOutcome.SUCCEEDED
    assert Attempt.objects.get(pk=first.pk).outcome == AttemptOutcome.INFRASTRUCTURE


@pytest.mark.skipif("connection.vendor != 'postgresql'")
def test_a_generation_number_that_keeps_colliding_is_counted_again_20_times_then_the_attempt_ends_recorded(
        make_conversation):
    """Two finishes in one conversation can pick the same generation number;
    the loser counts again. One that loses every time (here a trigger makes
    every insert collide) stops after 20 tries and its attempt still ends
    with a record, instead of the worker spinning."""
    job, attempt = _claimed(make_conversation)
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMPORARY SEQUENCE finish_tries")
        cursor.execute("""
            CREATE FUNCTION pg_temp.always_taken() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                PERFORM nextval('finish_tries');
                RAISE unique_violation USING MESSAGE = 'that number was just taken';
            END $$""")
        cursor.execute("CREATE TRIGGER always_taken BEFORE INSERT ON compaction_summarygeneration "
                       "FOR EACH ROW EXECUTE FUNCTION pg_temp.always_taken()")
    outcome = attempt_finish(job=job, attempt=attempt, worker="w1", result=GOOD, judged=OK)
    with connection.cursor() as cursor:
        cursor.execute("SELECT last_value FROM finish_tries")
        (tries,) = cursor.fetchone()
    assert tries == 20
    assert (outcome.status, outcome.failure_code) == (JobState.FAILED, "unstorable_text")
    assert "after 20 tries" in outcome.detail
    assert Attempt.objects.get(pk=attempt.pk).outcome == AttemptOutcome.FAILED


def test_a_stale_end_whose_attempt_the_reaper_ended_since_it_was_checked_is_dropped(make_conversation, monkeypatch):
    """The stale move re-checks the hold in the database: a reaper that ends
    the attempt between the finish's check that its worker still holds the
    job and its stale write wins; the late answer is dropped, and the
    reaper's ``lease_expired`` record is not written over."""
    from django.db.models import QuerySet

    job, attempt = _claimed(make_conversation)
    _edit_source()
    real_exists, reaped = QuerySet.exists, []

    def exists_then_reaped(queryset):
        held = real_exists(queryset)
        if queryset.model is CompactionJob and held and not reaped:
            reaped.append(True)
            CompactionJob.objects.filter(pk=job.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
            assert jobs_reap_expired() == [job.pk]
            reaped.append(_row(job))  # as the reaper left it
        return held

    monkeypatch.setattr(QuerySet, "exists", exists_then_reaped)
    outcome = attempt_finish(job=job, attempt=attempt, worker="w1", result=GOOD, judged=OK)
    assert reaped and outcome == RunOutcome(job.pk, "lost", attempt=1, detail=LOST)
    recorded = Attempt.objects.get(pk=attempt.pk)
    assert (recorded.outcome, recorded.failure_code) == (AttemptOutcome.FAILED, "lease_expired")
    assert _row(job) == reaped[1] and reaped[1]["state"] != JobState.RUNNING
