"""The ``openai`` provider against a local OpenAI-compatible server on a real
socket: each scripted reply gives its failure code; the good one a generation."""

from __future__ import annotations

import json

import pytest

from compaction.bindings.segments import conversation_plan
from compaction.engine.run import job_run
from compaction.contract import check
from compaction.models import Attempt, JobState, SummaryGeneration
from compaction.providers.base import Answer, SummaryRequest
from compaction.providers.openai import OpenAIProvider
from tests.compaction.providers.conftest import run_once_against
from tests.compaction.providers.openai_server import odd_completion


def provider(server, timeout=1.0):
    return OpenAIProvider(base_url=server.base_url, api_key="sk-test", model="test-model", timeout=timeout)


def request():
    answers = tuple(Answer(f"a-{i}", f"Answer {i}.") for i in range(10))
    return SummaryRequest(answers=answers, system="sys", user="user text", prompt_version="p@3")


@pytest.mark.parametrize("script, code", [
    ("text_and_tools", "tool_calls"),
    ("length", "finish_reason"),
    ("empty", "empty"),
    ("too_long", "too_long"),
    ("http500", "provider_error"),
    ("malformed", "provider_error"),
    ("slow", "timeout"),
])
def test_each_scripted_violation_gives_its_failure_code(server, script, code):
    server.queue(script)
    result = provider(server, timeout=0.5).summarise(request())
    assert check(result).failure_code == code


def test_a_normal_answer_is_reported_faithfully(server):
    server.queue("ok")
    result = provider(server).summarise(request())
    assert check(result).ok
    assert result.finish_reason == "stop" and result.tool_calls == []
    assert (result.input_tokens, result.output_tokens, result.model) == (321, 45, "test-model")
    assert result.latency_ms is not None and result.latency_ms >= 0
    sent = server.requests[0]
    assert sent["path"] == "/v1/chat/completions" and sent["authorization"] == "Bearer sk-test"
    assert sent["body"]["model"] == "test-model"
    assert [m["role"] for m in sent["body"]["messages"]] == ["system", "user"]


def test_text_and_tool_calls_are_both_reported(server):
    server.queue("text_and_tools")
    result = provider(server).summarise(request())
    assert result.text == "A fine summary." and result.tool_calls[0]["id"] == "call_1"


def test_an_http_error_keeps_the_status_and_body_for_review(server):
    server.queue("http500")
    result = provider(server).summarise(request())
    assert result.error_detail == "HTTP 500" and "upstream exploded" in result.raw


def test_the_provider_never_retries_on_its_own(server):
    server.queue("http500", "ok")
    provider(server).summarise(request())
    assert len(server.requests) == 1


@pytest.mark.parametrize("script, code", [
    ("ok", ""), ("text_and_tools", "tool_calls"), ("length", "finish_reason"), ("empty", "empty"),
    ("too_long", "too_long"), ("http500", "provider_error"), ("malformed", "provider_error"), ("slow", "timeout"),
])
def test_through_the_engine_each_reply_is_one_attempt_with_its_code(openai_settings, server, make_conversation,
                                                                    script, code):
    conv = make_conversation(30)
    (job,) = conversation_plan(conversation=conv)
    assert job.model_id == "test-model"
    server.queue(script)
    outcome = job_run(job_id=job.pk)
    attempt = Attempt.objects.get(job=job)
    assert attempt.failure_code == outcome.failure_code == code
    assert SummaryGeneration.objects.filter(job=job).exists() == (code == "")
    if code == "":
        assert attempt.input_tokens == 321 and attempt.output_tokens == 45
    # The user side of the conversation never reached the endpoint.
    sent = str(server.requests[0]["body"])
    assert "Question" not in sent and "[a-9]" in sent


@pytest.mark.parametrize("odd, code", [
    (odd_completion(usage={"prompt_tokens": -1, "completion_tokens": "n/a"}), ""),
    (odd_completion(usage={"prompt_tokens": 2**40, "completion_tokens": True}), ""),
    (odd_completion(usage={"prompt_tokens": None}, choices__0__finish_reason={"type": "stop"}), "finish_reason"),
])
def test_through_the_engine_an_odd_but_parseable_reply_is_still_one_recorded_attempt(
        openai_settings, server, make_conversation, monkeypatch, odd, code):
    """Whatever numbers an endpoint reports, the attempt is recorded with its
    verdict; the finish never crashes and leaves the job running until its
    lease expires (which would lose what the model returned)."""
    job, outcome, attempt = run_once_against(odd, server, make_conversation, monkeypatch)
    assert attempt.outcome == ("succeeded" if code == "" else "failed")
    assert attempt.failure_code == outcome.failure_code == code
    assert SummaryGeneration.objects.filter(job=job).exists() == (code == "")
    assert attempt.input_tokens is None and attempt.output_tokens is None


@pytest.mark.parametrize("odd, code", [
    (odd_completion(choices__0__message__content="[a-0] The fee was\u0000 0.00 EUR."), "unstorable_text"),
    (odd_completion(choices__0__message__content="[a-0] \u001b[31mred\u001b[0m"), "not_plain_text"),
    (odd_completion(choices__0__finish_reason="stop\u0000", model="m\u0000"), "finish_reason"),
])
def test_a_reply_with_control_characters_fails_and_is_kept_for_review(
        openai_settings, server, make_conversation, monkeypatch, odd, code):
    """Not plain text is a contract failure of its own, a NUL (which
    PostgreSQL cannot store) is ``unstorable_text``, and what came back is
    kept (the NUL written as its escape) instead of crashing the finish and
    leaving the job running until its lease expires."""
    job, outcome, attempt = run_once_against(odd, server, make_conversation, monkeypatch)
    assert (outcome.failure_code, attempt.failure_code, attempt.outcome) == (code, code, "failed")
    assert job.state == JobState.FAILED and not SummaryGeneration.objects.filter(job=job).exists()
    stored = attempt.raw_output + attempt.finish_reason + attempt.model
    assert attempt.raw_output.startswith("[a-0]") and "\x00" not in stored
    assert ("\\u0000" in stored) == ("\\u0000" in json.dumps(odd[1]))
