"""Any provider reply — any bytes, any field lengths, any JSON shape — ends
the attempt with a recorded outcome, never an exception that leaves the job
running (issue 12 item 2). Each reply comes from a real local endpoint
(``openai_server``) and goes through the whole engine; the attempt's record
is read back from PostgreSQL."""

from __future__ import annotations

import json

import pytest

from compaction.contract import ProviderResult
from compaction.engine.run import job_run
from compaction.models import Attempt, JobState, SummaryGeneration
from tests.compaction.conftest import RecordingProvider, plan
from tests.compaction.providers.conftest import run_once_against
from tests.compaction.providers.openai_server import completion, odd_completion

LONE_SURROGATE = "Summary \ud800 of the fees."


def assert_ended(job, attempt, code):
    """The attempt is over and recorded; the job is no longer running."""
    assert attempt.outcome == ("succeeded" if code == "" else "failed")
    assert attempt.failure_code == code and attempt.finished_at is not None
    assert job.state != JobState.RUNNING and job.lease_owner == ""
    assert SummaryGeneration.objects.filter(job=job).exists() == (code == "")


def test_a_lone_surrogate_is_unstorable_text_and_the_reply_stays_readable(
        openai_settings, server, make_conversation, monkeypatch):
    job, outcome, attempt = run_once_against(odd_completion(choices__0__message__content=LONE_SURROGATE),
                                             server, make_conversation, monkeypatch)
    assert_ended(job, attempt, "unstorable_text")
    assert outcome.failure_code == "unstorable_text" and job.state == JobState.FAILED
    assert attempt.raw_output == "Summary \\ud800 of the fees."  # the escape, as it arrived
    assert "U+D800" in attempt.failure_detail and "position 8" in attempt.failure_detail


def test_a_nul_is_unstorable_text_and_the_reply_stays_readable(openai_settings, server, make_conversation,
                                                                monkeypatch):
    job, outcome, attempt = run_once_against(odd_completion(choices__0__message__content="Fee \u0000 0.00 EUR."),
                                             server, make_conversation, monkeypatch)
    assert_ended(job, attempt, "unstorable_text")
    assert attempt.raw_output == "Fee \\u0000 0.00 EUR." and "a NUL" in attempt.failure_detail


@pytest.mark.parametrize("length", [300, 10_000])
def test_an_over_long_model_name_is_cut_where_it_is_stored_and_says_so(
        openai_settings, server, make_conversation, monkeypatch, length):
    """The model field is the endpoint's say, not part of the contract: a
    good answer is not thrown away for it, and the record says it was cut."""
    job, outcome, attempt = run_once_against(odd_completion(model="m" * length), server, make_conversation,
                                             monkeypatch)
    assert_ended(job, attempt, "")
    assert len(attempt.model) <= 200 and attempt.model.startswith("mmm")
    assert attempt.model.endswith(f"({length:,} characters, cut)")
    assert SummaryGeneration.objects.get(job=job).model_id == "test-model"  # the binding's, not the reply's


def test_an_over_long_model_name_with_a_failing_answer_still_ends_with_its_code(
        openai_settings, server, make_conversation, monkeypatch):
    reply = odd_completion(model="\ud800" * 10_000, choices__0__message__content="Fee \u0000")
    job, outcome, attempt = run_once_against(reply, server, make_conversation, monkeypatch)
    assert_ended(job, attempt, "unstorable_text")
    assert len(attempt.model) <= 200 and attempt.model.startswith("\\ud800")


@pytest.mark.parametrize("body, detail", [
    (b"<html><body>502 Bad Gateway</body></html>", "not JSON"),
    (b"", "not JSON"),
    (b'{"choices": [{"message": {"content": "caf\xe9"}}]}', "not UTF-8"),
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    (b'{"choices": [], "usage": {"prompt_tokens": ' + b"9" * 5000 + b"}}", "not JSON"),
    (json.dumps([completion("A fine summary.")]).encode(), "the body is an array, not an object"),
    (b'"just a string"', "the body is a string, not an object"),
    (b'{"choices": {"0": {}}}', "choices is an object, not an array"),
    (b'{"choices": []}', "choices is empty"),
    (b'{"choices": ["stop"]}', "choices[0] is a string, not an object"),
    (b'{"choices": [{"message": ["A fine summary."]}]}', "choices[0].message is an array"),
    (b'{"choices": [{"message": {"content": ["A fine", "summary."]}, "finish_reason": "stop"}]}',
     "choices[0].message.content is an array, not a string or null"),
    (b'{"choices": [{"message": {"content": 42}, "finish_reason": "stop"}]}',
     "choices[0].message.content is a number"),
    (b'{"choices": [{"message": {"content": "ok", "tool_calls": {"id": 1}}, "finish_reason": "stop"}]}',
     "choices[0].message.tool_calls is an object, not an array"),
    (json.dumps({**completion("A fine summary."), "usage": [1, 2]}).encode(), "usage is an array, not an object"),
])
def test_a_body_that_is_not_a_chat_completion_is_a_provider_error_with_detail(
        openai_settings, server, make_conversation, monkeypatch, body, detail):
    job, outcome, attempt = run_once_against((200, body, 0), server, make_conversation, monkeypatch)
    assert_ended(job, attempt, "provider_error")
    assert detail in attempt.failure_detail, attempt.failure_detail
    assert attempt.raw_output == body[:4000].decode("utf-8", errors="replace")


def test_a_body_past_the_size_limit_is_not_read_and_is_a_provider_error(
        openai_settings, server, make_conversation, monkeypatch):
    from compaction.providers import openai

    monkeypatch.setattr(openai, "MAX_BODY_BYTES", 10_000)
    reply = (200, completion("x" * 50_000), 0)
    job, outcome, attempt = run_once_against(reply, server, make_conversation, monkeypatch)
    assert_ended(job, attempt, "provider_error")
    assert "over 10,000 bytes" in attempt.failure_detail


def test_unstorable_text_in_tool_calls_is_kept_escaped_in_their_json(openai_settings, server, make_conversation,
                                                                     monkeypatch):
    calls = [{"id": "call\u0000", "type": "function",
              "function": {"name": "lookup\ud800", "arguments": "{\"k\ud800\": \"\u0000\"}"}, "x\u0000": 1}]
    reply = odd_completion(choices__0__message__tool_calls=calls, choices__0__finish_reason="tool_calls",
                           model="gpt\ud800")
    job, outcome, attempt = run_once_against(reply, server, make_conversation, monkeypatch)
    assert_ended(job, attempt, "tool_calls")
    (call,) = attempt.tool_calls
    assert call["id"] == "call\\u0000" and call["function"]["name"] == "lookup\\ud800" and "x\\u0000" in call
    assert attempt.model == "gpt\\ud800"


def test_a_provider_that_reports_nonsense_types_ends_with_a_provider_error(make_conversation):
    """A provider plugged in by dotted path may hand back anything; the
    attempt still ends recorded."""
    (job,) = plan(make_conversation(30))
    weird = RecordingProvider()
    weird.summarise = lambda request: ProviderResult(text=b"bytes, not text", finish_reason=["stop"],
                                                     tool_calls={"a": 1}, model=42)
    outcome = job_run(job_id=job.pk, provider=weird)
    job.refresh_from_db()
    attempt = Attempt.objects.get(job=job)
    assert_ended(job, attempt, "provider_error")
    assert outcome.failure_code == "provider_error" and "text as a bytes" in attempt.failure_detail


def test_a_reply_the_database_refuses_anyway_is_still_recorded_as_unstorable_text(make_conversation,
                                                                                   monkeypatch):
    """The last line: should a value get past every rule and the database
    refuse the record, the attempt ends as ``unstorable_text`` with what
    arrived in ASCII instead of leaving the job running."""
    from compaction.engine import finish

    (job,) = plan(make_conversation(30))
    monkeypatch.setattr(finish, "_storable", lambda result: result)  # a rule that lets something through
    reply = {"text": "A summary.", "finish_reason": "stop", "model": "extractive-v2", "raw": "A summary. \ud800"}
    outcome = job_run(job_id=job.pk, provider=RecordingProvider(result=reply))
    job.refresh_from_db()
    attempt = Attempt.objects.get(job=job)
    assert_ended(job, attempt, "unstorable_text")
    assert outcome.failure_code == "unstorable_text" and "could not be recorded as it came" in attempt.failure_detail
    assert attempt.raw_output == "A summary. \\ud800"
