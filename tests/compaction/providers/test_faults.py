"""Fault injection wraps any provider, deterministically per job and attempt."""

import pytest

from compaction.contract import check
from compaction.providers.base import Answer, SummaryRequest
from compaction.providers.extractive import ExtractiveProvider
from compaction.providers.faults import KINDS, FaultInjectingProvider, fault_for


def request(job_id, attempt=1):
    answers = tuple(Answer(f"a-{i}", f"Answer {i}: the fee was {i} EUR.") for i in range(10))
    return SummaryRequest(answers=answers, system="s", user="u", prompt_version="p@3", job_id=job_id, attempt=attempt)


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_of_fault_breaks_the_contract_with_its_own_code(kind):
    provider = FaultInjectingProvider(ExtractiveProvider(), rate=1.0, kind=kind)
    assert check(provider.summarise(request(1))).failure_code == kind


def test_the_same_job_and_attempt_always_get_the_same_fault():
    decisions = [fault_for(j, a, rate=0.3, kind="mixed") for j in range(200) for a in (1, 2)]
    assert decisions == [fault_for(j, a, rate=0.3, kind="mixed") for j in range(200) for a in (1, 2)]
    rate = sum(d is not None for d in decisions) / len(decisions)
    assert 0.2 < rate < 0.4
    assert {d for d in decisions if d} == set(KINDS)


def test_rate_zero_passes_every_answer_through_untouched():
    provider = FaultInjectingProvider(ExtractiveProvider(), rate=0.0, kind="mixed")
    assert provider.summarise(request(7)).text == ExtractiveProvider().summarise(request(7)).text
    assert provider.model_id == "extractive-v2"


def test_an_unknown_kind_is_refused_with_the_kinds_named():
    with pytest.raises(ValueError, match="tool_calls"):
        FaultInjectingProvider(ExtractiveProvider(), rate=0.5, kind="explode")
