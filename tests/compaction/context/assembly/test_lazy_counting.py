"""Counting only what the budget needs (issue 15: cold p99 under 50 ms at
5,000 messages). Trimming counts the middle from the newest unit back until
the budget is full and drops the older units uncounted (``trim``). These
tests hold that shortcut to counting everything (``count_all=True``): the
same messages, the same refusals, the same report — but for the figures the
report marks as lower bounds, which are never above the exact ones — and a
``tokens_after`` that is exactly what the output counts."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compaction.context.assembly import AssemblyError, CachedCounter, assemble, count_request, parse

from .helpers import openai_to_anthropic, limit_for
from .test_property import build, conversations, counter

REPO = Path(__file__).resolve().parents[4]
TAU = Path(os.environ.get("SHARED_DATA_DIR") or REPO.parent / "shared" / "data") / "tau-bench-gpt-4o-airline.json"

TOOLS = [{"type": "function", "function": {"name": "book_flight", "description": "Book a flight.",
                                           "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}]


def run(format, messages, system, config, *, count=counter, tools=None, tighten=0, count_all=False):
    try:
        return assemble(format=format, messages=messages, system=system, tools=tools, config=config, counter=count,
                        tighten=tighten, count_all=count_all)
    except AssemblyError as refusal:
        return refusal


def sent_tokens(format, result, count, tools=None) -> int:
    """What the output counts, parsed back from what would be sent."""
    transcript = parse(format, result.messages, system=result.system if format == "anthropic" else None,
                       tools=tools)
    return count_request(transcript.messages, count, system=transcript.system, tools=tools)


def assert_same(lazy, eager) -> None:
    """``lazy`` gives what ``eager`` (everything counted) gives; where it
    says a figure is a lower bound, that figure is at most the exact one."""
    assert type(lazy) is type(eager)
    if isinstance(eager, AssemblyError):
        assert lazy.as_dict() == eager.as_dict()  # refusals count the whole input: exact sizes
        return
    assert lazy.messages == eager.messages
    assert lazy.system == eager.system
    assert lazy.work_summary == eager.work_summary
    a, b = lazy.report.as_dict(), eager.report.as_dict()
    for report in (a, b):
        report.pop("seconds")
    assert b["tokens_before_exact"] is True
    assert not any("tokens_exact" in s for s in b["steps"]) and "tokens_exact" not in b["buckets"]["middle"]
    assert a["tokens_after"] == b["tokens_after"]
    if a["tokens_before_exact"]:
        assert a == b
        return
    assert a["tokens_before"] <= b["tokens_before"]
    assert a["buckets"]["middle"].pop("tokens_exact") is False
    assert a["buckets"]["middle"].pop("tokens") <= b["buckets"]["middle"].pop("tokens")
    assert len(a["steps"]) == len(b["steps"])
    for mine, exact in zip(a["steps"], b["steps"]):
        if mine.pop("tokens_exact", True) is False:
            key = "middle" if mine["step"] == "buckets" else "tokens_after"
            assert mine.pop(key) <= exact.pop(key)
        assert mine == exact
    for key in ("tokens_before", "tokens_before_exact", "steps"):
        a.pop(key), b.pop(key)
    assert a == b


loops = st.sampled_from([None, {"trigger_tool_rounds": 2, "recent_tool_rounds": 1}])
configs = st.fixed_dictionaries({
    "recent_tool_rings": st.integers(0, 3),
    "recent_user_turns": st.integers(1, 3),
    "summarize": st.booleans(),
    "summary_max_tokens": st.sampled_from([40, 200, 1024]),
    "pin": st.sampled_from([["first_user_message", "side_effect_ledger", "security_system_prompt"],
                            ["side_effect_ledger"], []]),
    "loop": loops,
})


def compare(format, messages, system, share, config, tighten, tools):
    transcript = parse(format, messages, system=system, tools=tools)
    full = count_request(transcript.messages, counter, system=transcript.system, tools=tools)
    config = {**config, "model_input_limit": limit_for(max(1, int(full * share)))}
    lazy = run(format, messages, system, config, tools=tools, tighten=tighten)
    eager = run(format, messages, system, config, tools=tools, tighten=tighten, count_all=True)
    assert_same(lazy, eager)
    if not isinstance(lazy, AssemblyError):
        assert lazy.report.tokens_after == sent_tokens(format, lazy, counter, tools)
    return lazy


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations, st.floats(0.02, 1.1), configs, st.integers(0, 2), st.booleans())
def test_openai_lazy_counting_gives_what_counting_everything_gives(spec, share, config, tighten, with_tools):
    compare("openai", build(spec), None, share, config, tighten, TOOLS if with_tools else None)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations, st.floats(0.02, 1.1), configs, st.integers(0, 2))
def test_anthropic_lazy_counting_gives_what_counting_everything_gives(spec, share, config, tighten):
    messages, system = openai_to_anthropic(build(spec))
    if not messages or messages[0]["role"] != "user":
        messages.insert(0, {"role": "user", "content": "hello"})
    compare("anthropic", messages, system, share, config, tighten, None)


@pytest.mark.parametrize("format", ["openai", "anthropic"])
def test_dropping_a_ring_can_grow_the_request_and_the_shortcut_still_agrees(format):
    """A side-effecting ring can count less than its ledger line (ids are not
    counted, a line names them): dropping it grows the request. The walk
    must not force out a unit the removal loop would have stopped before,
    at any budget around the request's size."""
    long_id = "call_" + "7" * 300
    messages = [{"role": "system", "content": "policy"}, {"role": "user", "content": "book it"}]
    for n in range(3):
        cid = f"{long_id}{n}"
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": "book_flight", "arguments": "{}"}}]})
        messages.append({"role": "tool", "tool_call_id": cid, "content": "ok"})
        messages.append({"role": "assistant", "content": f"done {n} " + "words " * 200})
    messages.append({"role": "user", "content": "and now?"})
    system = None
    if format == "anthropic":
        messages, system = openai_to_anthropic(messages)
    transcript = parse(format, messages, system=system)
    full = count_request(transcript.messages, counter, system=transcript.system)
    outcomes = set()
    for budget in range(full - 400, full + 5, 3):
        config = {"model_input_limit": limit_for(budget), "recent_tool_rings": 0, "recent_user_turns": 1,
                  "loop": None}
        lazy = run(format, messages, system, config)
        assert_same(lazy, run(format, messages, system, config, count_all=True))
        outcomes.add("refused" if isinstance(lazy, AssemblyError) else len(lazy.messages))
    assert len(outcomes) > 2  # the budgets span keeping all, trimming, and refusing


class Recording:
    """A counter that remembers every text it was asked to count (and counts
    like ``counter``, whose name it takes for the report)."""

    name = "counter"

    def __init__(self):
        self.seen: list[str] = []

    def __call__(self, text: str) -> int:
        self.seen.append(text)
        return len(text) // 4 + 1


def long_run(turns: int) -> list[dict]:
    messages = [{"role": "system", "content": "You are the booking agent."}, {"role": "user", "content": "hi"}]
    for n in range(turns):
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{n}", "type": "function", "function": {
                "name": "book_flight" if n % 50 == 0 else "search_flights",  # a few side effects
                "arguments": json.dumps({"flight": f"F{n}"})}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": f"result {n} " + "x" * 200})
        messages.append({"role": "assistant", "content": f"turn {n} " + "words " * 40})
    messages.append({"role": "user", "content": "and now?"})
    return messages


def test_a_run_far_over_its_budget_is_counted_only_as_far_as_the_budget_holds():
    messages = long_run(300)
    recording = Recording()
    config = {"model_input_limit": limit_for(2000), "loop": None}
    lazy = assemble(format="openai", messages=messages, config=config, counter=recording)
    eager = assemble(format="openai", messages=messages, config=config, counter=counter, count_all=True)
    assert_same(lazy, eager)
    assert lazy.report.tokens_before_exact is False
    assert lazy.report.tokens_after == sent_tokens("openai", lazy, counter) <= 2000
    # Every middle ring went uncounted (the plain turns alone overflow) —
    # only the three protected newest rings' results were read — and of the
    # plain turns only the newest ones: no older one's text was ever read.
    counted = set(recording.seen)
    assert {int(t.split()[1]) for t in counted if t.startswith("result ")} == {297, 298, 299}
    kept = [int(m["content"].split()[1]) for m in lazy.messages if (m.get("content") or "").startswith("turn ")]
    read = sorted(int(t.split()[1]) for t in counted if t.startswith("turn "))
    assert kept == list(range(kept[0], 300)) and 0 < kept[0] < 299
    assert read == list(range(read[0], 300))  # newest first, then it stopped
    # Beyond the kept turns it read only the one that no longer fit: the
    # walk weighs the ledger note's estimate and the older units' lower
    # bounds too, and here the budget's slack is less than one turn.
    turn_tokens = 4 + counter("turn 100 " + "words " * 40)
    assert 2000 - lazy.report.tokens_after < turn_tokens
    assert read[0] == kept[0] - 1
    # What is counted follows the budget, not the run: about the budget's
    # worth of turns plus the ledger's lines and note, far below the run.
    assert sum(counter(t) for t in recording.seen) < eager.report.tokens_before / 3


def test_repaired_and_loop_folded_runs_agree_too():
    """When the messages trimmed are not the input's (placeholder results
    added, tool rounds folded), ``tokens_before`` is still over the input,
    a lower bound of it when units went uncounted."""
    messages = long_run(200)
    del messages[3 + 3 * 50]  # the result of call c50: repaired with a placeholder
    messages[-1:] = [{"role": "user", "content": "and now?"}] + [m for n in range(200, 210) for m in (
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{n}", "type": "function", "function": {"name": "search_flights", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": f"c{n}", "content": f"result {n} " + "y" * 300})]
    exact = count_request(parse("openai", messages).messages, counter)
    bounds = []
    for budget in (1500, 4000, 20000, exact + 100):
        config = {"model_input_limit": limit_for(budget), "on_pairing_error": "synthesize_error_results",
                  "loop": {"trigger_tool_rounds": 3, "recent_tool_rounds": 2}}
        lazy = run("openai", messages, None, config)
        assert_same(lazy, run("openai", messages, None, config, count_all=True))
        assert lazy.report.repairs and lazy.report.events[-1]["event"] == "compacted"
        assert lazy.report.tokens_after == sent_tokens("openai", lazy, counter) <= budget
        assert lazy.report.tokens_before <= exact
        assert lazy.report.tokens_before_exact is (lazy.report.tokens_before == exact)
        bounds.append(lazy.report.tokens_before_exact)
    assert bounds == [False, False, False, True]  # the shortcut taken, then the whole run fitting


def test_side_effects_the_tool_loop_folded_are_weighed_once():
    """Side effects the tool loop folded start the ledger note (the header
    and their lines) before any middle ring goes; the walk weighs them once,
    and gives what counting everything gives at every budget."""
    messages = long_run(120)
    messages[-1:] = [{"role": "user", "content": "and now?"}] + [m for n in range(120, 126) for m in (
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{n}", "type": "function", "function": {"name": "book_flight", "arguments": f'{{"n": {n}}}'}}]},
        {"role": "tool", "tool_call_id": f"c{n}", "content": f"booked {n} " + "z" * 900})]
    shortcut = 0
    for budget in range(700, 3200, 7):
        config = {"model_input_limit": limit_for(budget), "loop": {"trigger_tool_rounds": 3, "recent_tool_rounds": 2}}
        lazy = run("openai", messages, None, config)
        assert_same(lazy, run("openai", messages, None, config, count_all=True))
        if not isinstance(lazy, AssemblyError):
            assert lazy.report.events[-1]["event"] == "compacted"
            shortcut += not lazy.report.tokens_before_exact
    assert shortcut > 100


def test_trimming_units_counted_beforehand_takes_the_same_shortcut():
    """``trim`` called on units that already carry their counts (``plan_units``
    with tokens) forces out the same units and reports none as uncounted."""
    from compaction.context.assembly import AssemblyConfig, plan_units
    from compaction.context.assembly.buckets import assign_buckets, split_units
    from compaction.context.assembly.ledger import build_ledger
    from compaction.context.assembly.trim import trim

    messages = parse("openai", long_run(120)).messages
    config = AssemblyConfig.coerce({"model_input_limit": limit_for(1500), "loop": None})
    ledger = build_ledger(messages, None, format="openai")
    outcomes = []
    for counted in (True, False):
        units = plan_units(messages, "openai", config, counter) if counted else assign_buckets(
            split_units(messages, "openai", None), messages, config)
        outcomes.append(trim(units, messages, format="openai", config=config, ledger=ledger, count=counter,
                             fixed_tokens=3, budget=1500))
    ready, lazy = outcomes
    assert ready.messages == lazy.messages and ready.tokens_after == lazy.tokens_after <= 1500
    assert ready.uncounted == 0 < lazy.uncounted
    assert [s.get("tokens_exact", True) for s in ready.steps] == [True] * len(ready.steps)


def watched(format, messages, system, config, *, tighten=0):
    """``run`` with an observer: trimming then drops every unit one by one
    (the observer sees each view); without one, the units the budget forces
    out go in bulk (``trim``'s ``drop_forced``)."""
    views = []
    try:
        result = assemble(format=format, messages=messages, system=system, config=config, counter=counter,
                          tighten=tighten, observer=lambda step, view: views.append(step))
    except AssemblyError as refusal:
        result = refusal
    return result, views


def assert_identical(bulk, one_by_one) -> None:
    assert type(bulk) is type(one_by_one)
    if isinstance(one_by_one, AssemblyError):
        assert bulk.as_dict() == one_by_one.as_dict()
        return
    assert bulk.messages == one_by_one.messages
    assert bulk.work_summary == one_by_one.work_summary
    a, b = bulk.report.as_dict(), one_by_one.report.as_dict()
    a.pop("seconds"), b.pop("seconds")
    assert a == b  # tokens_before(_exact), tokens_after, steps, dropped rings and turns, ledger


@pytest.mark.parametrize("summarize,tighten", [(False, 0), (True, 0), (False, 1)])
def test_units_forced_out_in_bulk_give_what_dropping_them_one_by_one_gives(summarize, tighten):
    """The bulk path for the units dropped uncounted gives exactly what the
    one-by-one removal gives — messages, refusals, every report figure — at
    every budget of a run with tool rings, side effects and a folded loop."""
    messages = long_run(60)
    messages[-1:] = [{"role": "user", "content": "and now?"}] + [m for n in range(60, 66) for m in (
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{n}", "type": "function", "function": {"name": "book_flight", "arguments": f'{{"n": {n}}}'}}]},
        {"role": "tool", "tool_call_id": f"c{n}", "content": f"booked {n} " + "z" * 900})]
    bulk_taken = refused = 0
    for budget in range(600, 9000, 23):
        config = {"model_input_limit": limit_for(budget), "summarize": summarize,
                  "loop": {"trigger_tool_rounds": 3, "recent_tool_rounds": 2}}
        bulk = run("openai", messages, None, config, tighten=tighten)
        one_by_one, views = watched("openai", messages, None, config, tighten=tighten)
        assert_identical(bulk, one_by_one)
        if isinstance(bulk, AssemblyError):
            refused += 1
            continue
        assert bulk.report.events[-1]["event"] == "compacted"
        assert len(views) == len(bulk.report.dropped_turns) + len(bulk.report.dropped_rings) or summarize
        bulk_taken += not bulk.report.tokens_before_exact  # units dropped uncounted: the bulk path ran
    assert bulk_taken > 100 and refused > 0


def test_a_run_that_fits_is_counted_whole_and_reported_exactly():
    messages = long_run(5)
    lazy = assemble(format="openai", messages=messages, config={"model_input_limit": 10**7}, counter=counter)
    assert lazy.report.tokens_before_exact is True
    assert lazy.report.tokens_before == lazy.report.tokens_after == count_request(
        parse("openai", messages).messages, counter)


def test_the_inspector_counts_everything():
    from compaction.context.assembly import inspect_assembly

    view = inspect_assembly(format="openai", messages=long_run(300),
                            config={"model_input_limit": limit_for(2000), "loop": None}, counter=counter)
    report = view["result"]["report"]
    assert report["tokens_before_exact"] is True
    assert report["tokens_before"] == count_request(parse("openai", long_run(300)).messages, counter)
    assert report["tokens_before"] == sum(row["tokens"] for row in view["units"]) + 3


@pytest.mark.skipif(not TAU.exists(), reason="the shared τ-bench data folder is absent")
def test_tau_bench_lazy_counting_gives_what_counting_everything_gives():
    """With tiktoken: the 200 trajectories at 20/40/60/80% of their tokens,
    and one 5,000-message run at a 100k budget (the benchmark's)."""
    import bench.assembly as bench

    trajectories = json.loads(TAU.read_text(encoding="utf-8"))
    tiktoken = CachedCounter(__import__("compaction.tokens", fromlist=["count_tokens"]).count_tokens)
    lower = 0
    for trajectory in trajectories:
        messages = trajectory["traj"]
        total = count_request(parse("openai", messages).messages, tiktoken)
        for share in (0.2, 0.4, 0.6, 0.8):
            config = {"model_input_limit": limit_for(int(total * share))}
            lazy = run("openai", messages, None, config, count=tiktoken)
            assert_same(lazy, run("openai", messages, None, config, count=tiktoken, count_all=True))
            if not isinstance(lazy, AssemblyError):
                assert lazy.report.tokens_after == sent_tokens("openai", lazy, tiktoken)
                lower += not lazy.report.tokens_before_exact
    assert lower > 0  # the shortcut was taken, not only the exact path
    messages = bench.build_run(trajectories, 5000)
    config = {"model_input_limit": limit_for(100_000)}
    lazy = run("openai", messages, None, config, count=tiktoken)
    assert_same(lazy, run("openai", messages, None, config, count=tiktoken, count_all=True))
    assert lazy.report.tokens_before_exact is False
    assert lazy.report.tokens_after == sent_tokens("openai", lazy, tiktoken) <= 100_000
