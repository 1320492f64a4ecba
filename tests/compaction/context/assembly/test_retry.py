"""Retry after the provider's context_length_exceeded: one notch tighter, at most twice (SPEC §9 "Retry")."""

from __future__ import annotations

import pytest

from compaction.context.assembly import (
    ContextLengthExceeded,
    OverBudgetError,
    is_context_length_exceeded,
    retry_after_context_length_exceeded,
)

from .helpers import BIG, ring, system, user


def conversation(rings=6):
    messages = [system("s"), user("go")]
    for k in range(rings):
        messages += ring(f"c{k}", "get_order", {"order": k, "text": "x " * 50}, order=k)
    return messages + [user("and?")]


class Provider:
    """Refuses the first ``refusals`` requests as too long, then answers."""

    def __init__(self, refusals, error=None):
        self.refusals = refusals
        self.sent = []
        self.error = error or ContextLengthExceeded("This model's maximum context length is 4096 tokens.")

    def __call__(self, result):
        self.sent.append(result)
        if len(self.sent) <= self.refusals:
            raise self.error
        return {"ok": True}


def retry(provider, messages=None, **config):
    return retry_after_context_length_exceeded(
        provider, format="openai", messages=messages or conversation(),
        config={"model_input_limit": BIG, "loop": None, **config})


def removed(result):
    return len(result.report.dropped_rings) + len(result.report.dropped_turns)


def test_one_refusal_reassembles_one_ring_tighter():
    provider = Provider(1)
    outcome = retry(provider)
    assert outcome.response == {"ok": True} and outcome.retries == 1
    first, second = provider.sent
    assert removed(first) == 0 and second.report.dropped_rings == [[2, 3]]
    assert outcome.result.report.steps[-1] == {"step": "retry", "retries": 1, "tighten": 1}


def test_at_most_two_retries_then_the_providers_error_stands():
    provider = Provider(5)
    with pytest.raises(ContextLengthExceeded):
        retry(provider)
    assert len(provider.sent) == 3
    assert [removed(r) for r in provider.sent] == [0, 1, 2]


def test_other_errors_are_not_retried():
    provider = Provider(1, error=TimeoutError("slow"))
    with pytest.raises(TimeoutError):
        retry(provider)
    assert len(provider.sent) == 1


def test_when_nothing_is_left_to_remove_it_says_so():
    provider = Provider(1)
    with pytest.raises(OverBudgetError) as caught:
        retry(provider, messages=[system("s"), user("go")] + ring("c0", "f") + [user("and?")])
    assert caught.value.sizes["reason"] == "context_length_exceeded_nothing_left"


def test_provider_errors_are_recognised_by_code_or_wording():
    class ApiError(Exception):
        code = "context_length_exceeded"

    assert is_context_length_exceeded(ApiError("400"))
    assert is_context_length_exceeded(ValueError("prompt is too long: 210000 tokens > 200000 maximum"))
    assert not is_context_length_exceeded(ValueError("rate limited"))
