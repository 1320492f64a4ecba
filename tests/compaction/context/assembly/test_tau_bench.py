"""τ-bench airline trajectories assembled at 20/40/60/80% of their tokens:
zero violations and every side-effecting call in the ledger (issue 15).

The hand-made fixture (``fixtures.py``) always runs. The real file, 200
trajectories recorded with gpt-4o, lives outside the repository at
``<repo>/../shared/data`` (override with ``SHARED_DATA_DIR``); that test
skips only when the folder is absent.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from compaction.context.assembly import OverBudgetError, assemble, has_side_effects, validate_request
from compaction.context.assembly.notes import LEDGER_NOTE_HEADER, SUMMARY_NOTE_HEADER

from .fixtures import SIDE_EFFECT_CALLS, TRAJECTORIES

REPO = Path(__file__).resolve().parents[4]
DATA = Path(os.environ.get("SHARED_DATA_DIR") or REPO.parent / "shared" / "data")
TAU = DATA / "tau-bench-gpt-4o-airline.json"
SHARES = (0.2, 0.4, 0.6, 0.8)
RESERVE = 8192 + 1024


def side_effect_calls(messages):
    return [(i, c["id"]) for i, m in enumerate(messages) for c in m.get("tool_calls") or []
            if has_side_effects(c["function"]["name"])]


def assemble_at(messages, share, **config):
    total = assemble(format="openai", messages=messages, config={"model_input_limit": 10**7, "loop": None}
                     ).report.tokens_before
    budget = int(total * share)
    return budget, lambda: assemble(format="openai", messages=messages,
                                    config={"model_input_limit": budget + RESERVE, **config})


def check(messages, share, **config):
    """Assemble once; return the outcome name after checking every promise."""
    budget, go = assemble_at(messages, share, **config)
    expected = side_effect_calls(messages)
    try:
        out = go()
    except OverBudgetError as refusal:
        # Refused, never cut: the protected part really does not fit, and the
        # report still accounts for every side effect.
        sizes = refusal.sizes
        assert sizes["protected_prefix_tokens"] > budget or sizes["tokens_after_trimming"] > budget
        assert [(e["index"], e["call_id"]) for e in refusal.report["ledger"]] == expected
        return sizes["reason"]
    assert validate_request("openai", out.messages) == []
    assert out.report.tokens_after <= budget
    assert [(e.index, e.call_id) for e in out.report.ledger] == expected
    notes = "\n".join(m["content"] for m in out.messages if m["role"] == "system"
                      and (m["content"] or "").startswith((LEDGER_NOTE_HEADER, SUMMARY_NOTE_HEADER)))
    for index, cid in expected:
        assert messages[index] in out.messages or f"call={cid} " in notes, (index, cid)
    return "assembled"


@pytest.mark.parametrize("share", SHARES)
@pytest.mark.parametrize("trajectory", TRAJECTORIES, ids=lambda t: str(t["task_id"]))
def test_fixture_trajectories_at_each_budget(trajectory, share):
    assert check(trajectory["traj"], share) in ("assembled", "protected_prefix_over_budget",
                                                "over_budget_after_trimming")


def test_fixture_side_effects_are_exactly_the_writes():
    for trajectory in TRAJECTORIES:
        assert side_effect_calls(trajectory["traj"]) == SIDE_EFFECT_CALLS[trajectory["task_id"]]


def test_fixture_trajectories_trim_when_the_budget_allows_it():
    outcomes = Counter(check(t["traj"], share) for t in TRAJECTORIES for share in SHARES)
    assert outcomes["assembled"] >= 4  # the rule is exercised, not only the refusals


def test_fixture_summarize_keeps_every_side_effect_too():
    for trajectory in TRAJECTORIES:
        for share in SHARES:
            check(trajectory["traj"], share, summarize=True)


@pytest.mark.skipif(not DATA.is_dir(), reason=f"shared data folder not found at {DATA}")
def test_every_real_trajectory_at_20_40_60_80_percent():
    with open(TAU, encoding="utf-8") as handle:
        trajectories = json.load(handle)
    assert len(trajectories) == 200
    outcomes = Counter()
    side_effects = 0
    for trajectory in trajectories:
        side_effects += len(side_effect_calls(trajectory["traj"]))
        for share in SHARES:
            outcomes[(share, check(trajectory["traj"], share))] += 1
    assert side_effects > 250  # the writes the ledger must hold are really there
    assert sum(outcomes.values()) == 800
    # With the policy prompt alone over a fifth of most runs, 20% is mostly
    # refused; at 80% most runs assemble.
    assert outcomes[(0.8, "assembled")] > 100
