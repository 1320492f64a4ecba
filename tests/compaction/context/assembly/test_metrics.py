"""One assembly's contribution to the seed 004 metrics (SPEC §9 "Metrics")."""

from __future__ import annotations

import pytest

from compaction.context.assembly import OverBudgetError, PairingError, assemble
from compaction.context.assembly.metrics import NAMES, samples

from .helpers import BIG, call, calls, ring, system, user


def six_rings_and_a_budget_for_three_quarters():
    """A run of six tool rounds between two user turns, and a config whose
    budget holds about three quarters of it (so the oldest rings go)."""
    messages = [system("s"), user("go")]
    for k in range(6):
        messages += ring(f"c{k}", "get_x", "y " * 200)
    messages.append(user("and?"))
    full = assemble(format="openai", messages=messages, config={"model_input_limit": BIG}).report.tokens_before
    return messages, {"model_input_limit": full * 3 // 4 + 9216, "loop": None}


def test_a_trimmed_assembly_counts_its_rings_and_tokens():
    messages, config = six_rings_and_a_budget_for_three_quarters()
    result = assemble(format="openai", messages=messages, config=config)
    values = samples(result)
    assert set(values) == set(NAMES)
    assert values["context_assemble_dropped_rings_total"] == len(result.report.dropped_rings) > 0
    assert values["context_assemble_tokens"] == result.report.tokens_after
    assert values["context_assemble_reject_total"] == 0


def test_refusals_count_as_rejects_and_pairing_errors():
    with pytest.raises(PairingError) as refusal:
        assemble(format="openai", messages=[user("go"), calls(call("a", "f"))], config={"model_input_limit": BIG})
    values = samples(refusal.value, seconds=0.001)
    assert values["context_assemble_pairing_error_total"] == 1 and values["context_assemble_reject_total"] == 1
    with pytest.raises(OverBudgetError) as refusal:
        assemble(format="openai", messages=[system("x " * 500), user("go")], config={"model_input_limit": 9300})
    values = samples(refusal.value)
    assert values["context_assemble_pairing_error_total"] == 0 and values["context_assemble_reject_total"] == 1


def test_the_inspector_lists_each_unit_with_its_bucket_and_fate():
    from compaction.context.assembly import inspect_assembly

    messages, config = six_rings_and_a_budget_for_three_quarters()
    view = inspect_assembly(format="openai", messages=messages, config=config)
    units = view["units"]
    assert [u["kind"] for u in units] == ["system", "turn"] + ["ring"] * 6 + ["turn"]
    assert [u["bucket"] for u in units] == ["prefix", "prefix"] + ["middle"] * 3 + ["suffix"] * 4
    # A quarter of the tokens must go: the two oldest middle rings.
    assert [u["fate"] for u in units] == ["kept", "kept", "dropped", "dropped"] + ["kept"] * 5
    assert view["result"]["report"]["dropped_rings"][0] == units[2]["indices"]
    refused = inspect_assembly(format="openai", messages=messages, config={"model_input_limit": 9300})
    assert refused["refusal"]["code"] == "context_over_budget" and {u["fate"] for u in refused["units"]} == {"refused"}
