"""In-run tool-loop compaction at and around its triggers (SPEC §10, seed 002 §7, §11)."""

from __future__ import annotations

import hashlib
import json

import pytest

from compaction.context.assembly import (
    LOOP_PROMPT_V1,
    LOOP_PROMPT_VERSION,
    DeterministicLoopSummariser,
    assemble,
    loop_prompt_messages,
    validate_request,
)
from compaction.context.assembly.notes import WORK_SUMMARY_HEADER
from compaction.context.assembly.toolloop import PRECEDENCE, SECTIONS

from .helpers import BIG, assistant, openai_to_anthropic, ring, system, user

RESULT = {"flights": [{"flight_number": f"HAT{n:03d}", "seats": n, "price": 100 + n} for n in range(25)]}


def loop(rounds: int, *, write_at: int | None = 1) -> list[dict]:
    """An earlier exchange, then the user's request and ``rounds`` tool rounds after it."""
    messages = [system("You are the airline agent."), user("Book me to Seattle."),
                *ring("old", "get_user_details", {"id": "u1"}, user_id="u1"), assistant("Which date?"),
                user("March 10, economy, and cancel Q7K2LM.")]
    for k in range(rounds):
        name = "cancel_reservation" if k == write_at else "search_direct_flight"
        messages += ring(f"r{k}", name, {**RESULT, "reservation_id": f"R{k}"}, date=f"2026-03-{k + 1:02d}")
    return messages


LAST_USER = 5  # index of the user's request in ``loop(...)``


def run(messages, *, format="openai", summariser=None, **config):
    config.setdefault("model_input_limit", BIG)
    if format == "anthropic":
        messages, system_prompt = openai_to_anthropic(messages)
        return assemble(format="anthropic", messages=messages, system=system_prompt, config=config,
                        summariser=summariser)
    return assemble(format="openai", messages=messages, config=config, summariser=summariser)


def step(result):
    return next(s for s in result.report.steps if s["step"] == "loop_compaction")


def test_below_the_round_trigger_nothing_happens():
    out = run(loop(4))
    assert step(out)["outcome"] == "not_triggered"
    assert out.messages == loop(4) and out.work_summary is None and out.report.events == []


def test_at_the_round_trigger_with_five_kept_there_is_nothing_older_to_fold():
    out = run(loop(5))
    assert step(out)["outcome"] == "nothing_to_fold"
    assert out.messages == loop(5) and out.report.events == []


def test_one_round_past_the_trigger_the_oldest_round_is_folded():
    messages = loop(6)
    out = run(messages)
    assert step(out)["outcome"] == "compacted"
    kept = out.messages
    # prefix before the last user message, the last user message, the work summary, five raw rounds
    assert kept[:LAST_USER + 1] == messages[:LAST_USER + 1]
    assert kept[LAST_USER + 1]["role"] == "system" and kept[LAST_USER + 1]["content"].startswith(WORK_SUMMARY_HEADER)
    assert kept[LAST_USER + 2:] == messages[LAST_USER + 1 + 2:]
    assert validate_request("openai", kept) == []
    assert out.report.folded == [6, 7]
    compacting, compacted = out.report.events
    assert compacting == {"event": "compacting", "reason": "tool_rounds", "tool_rounds": 6,
                          "working_tokens": compacting["working_tokens"], "working_messages": 12,
                          "summariser": "loop-deterministic"}
    assert compacted["event"] == "compacted" and compacted["folded_rounds"] == 1 and compacted["kept_rounds"] == 5
    assert compacted["tokens_after"] < compacted["tokens_before"] == compacting["working_tokens"]
    assert compacted["output_tokens"] > 0 and compacted["input_tokens"] > 0 and compacted["compaction_count"] == 1


def test_the_work_summary_has_the_seven_sections_and_says_later_results_win():
    out = run(loop(8))
    summary = out.work_summary
    assert summary.splitlines()[0] == f"{WORK_SUMMARY_HEADER} (through call r2; 3 rounds folded; compaction 1)"
    assert PRECEDENCE in summary and "later raw tool result wins" in summary
    headings = [line[3:] for line in summary.splitlines() if line.startswith("## ")]
    assert headings == list(SECTIONS)
    assert "search_direct_flight" in summary and '"date": "2026-03-01"' in summary
    assert "side effect: cancel_reservation call=r1 " in summary  # the write is carried, with its key
    assert "…[" in summary  # long results are cut head and tail


def test_recent_tool_rounds_sets_how_many_stay_raw():
    out = run(loop(6), loop={"trigger_tool_rounds": 3, "recent_tool_rounds": 2})
    assert out.report.events[1]["folded_rounds"] == 4 and out.report.events[1]["kept_rounds"] == 2
    assert out.report.folded == list(range(6, 14))


def test_the_token_trigger_fires_below_the_round_trigger():
    out = run(loop(3), loop={"trigger_tokens": 500, "recent_tool_rounds": 1})
    assert out.report.events[0]["reason"] == "tokens"
    assert out.report.events[1]["folded_rounds"] == 2
    just_below = run(loop(3), loop={"trigger_tokens": out.report.events[0]["working_tokens"] + 1,
                                    "recent_tool_rounds": 1})
    assert step(just_below)["outcome"] == "not_triggered"


def test_rounds_before_the_last_user_message_are_never_folded():
    messages = loop(2) + [user("Also check baggage.")] + loop(6)[LAST_USER + 1:]
    out = run(messages)
    assert out.messages[:LAST_USER + 6] == messages[:LAST_USER + 6]  # up to and with the new last user message


class Exploding:
    name = "exploding"

    def summarise(self, request):
        raise RuntimeError("model endpoint down")


class Blank:
    name = "blank"

    def summarise(self, request):
        return "   "


@pytest.mark.parametrize("summariser,error", [(Exploding(), "summariser_error"), (Blank(), "empty_summary")])
def test_a_failing_summariser_keeps_the_raw_history(summariser, error):
    messages = loop(7)
    out = run(messages, summariser=summariser)
    assert out.messages == messages and out.work_summary is None
    assert step(out)["outcome"] == "failed"
    compacting, failed = out.report.events
    assert failed["event"] == "compaction_failed" and failed["error"] == error
    assert failed["folded_rounds"] == 0 and failed["kept_rounds"] == 7
    if error == "summariser_error":
        assert failed["error_type"] == "RuntimeError" and "endpoint" not in json.dumps(failed)


def test_a_summary_not_smaller_than_what_it_replaces_is_a_failure():
    messages = [system("s"), user("go")] + [m for k in range(7) for m in ring(f"t{k}", "think", "ok")]
    out = run(messages)
    assert out.messages == messages
    assert out.report.events[-1]["error"] == "summary_not_smaller"


def test_the_next_turn_folds_only_the_newly_aged_round():
    first = run(loop(7))
    assert first.report.events[1]["folded_rounds"] == 2
    # The caller keeps its full raw history and passes the work summary back.
    full = loop(8)
    second = run(full, work_summary=first.work_summary)
    assert second.report.events[1]["folded_rounds"] == 1
    assert second.report.events[1]["compaction_count"] == 2
    assert "(through call r2; 3 rounds folded; compaction 2)" in second.work_summary.splitlines()[0]
    assert second.report.folded == list(range(6, 12))  # rounds 0-1 covered before, round 2 now
    assert validate_request("openai", second.messages) == []
    # Sending back the rebuilt history instead gives the same request.
    rebuilt = first.messages + full[len(loop(7)):]
    assert run(rebuilt).messages == second.messages
    # The write folded in the first pass is still listed after the second.
    assert "side effect: cancel_reservation call=r1 " in second.work_summary


def test_a_previous_summary_below_the_trigger_is_carried_not_refolded():
    first = run(loop(6))
    carried = run(loop(6), work_summary=first.work_summary, loop={"trigger_tool_rounds": 50})
    assert step(carried)["outcome"] == "not_triggered"
    assert carried.messages == first.messages and carried.work_summary == first.work_summary


def test_system_messages_in_the_folded_stretch_stay():
    messages = loop(3) + [system("Never charge more than 500 USD.")] + loop(6)[LAST_USER + 7:]
    out = run(messages)
    assert out.report.events[1]["folded_rounds"] == 1
    assert system("Never charge more than 500 USD.") in out.messages


def test_anthropic_loop_compaction_keeps_pairing_with_a_user_role_summary():
    out = run(loop(7), format="anthropic")
    assert step(out)["outcome"] == "compacted"
    assert validate_request("anthropic", out.messages, system=out.system) == []
    notes = [m for m in out.messages if isinstance(m["content"], str) and m["content"].startswith(WORK_SUMMARY_HEADER)]
    assert len(notes) == 1 and notes[0]["role"] == "user"


def test_loop_null_switches_it_off():
    assert run(loop(9), loop=None).messages == loop(9)


def test_the_deterministic_builder_is_deterministic():
    a, b = run(loop(9)), run(loop(9))
    assert a.work_summary == b.work_summary and a.messages == b.messages


def test_loop_at_1_is_a_frozen_prompt_for_an_openai_compatible_provider():
    assert LOOP_PROMPT_VERSION == "loop@1"
    # Frozen: a changed prompt is a new version, never an edit of this one.
    assert hashlib.sha256(LOOP_PROMPT_V1.encode()).hexdigest() == FROZEN_LOOP_PROMPT_SHA256
    for name in SECTIONS:
        assert f"## {name}" in LOOP_PROMPT_V1
    captured = {}

    class Capturing(DeterministicLoopSummariser):
        def summarise(self, request):
            captured["messages"] = loop_prompt_messages(request)
            return super().summarise(request)

    run(loop(6), summariser=Capturing())
    system_message, user_message = captured["messages"]
    assert system_message == {"role": "system", "content": LOOP_PROMPT_V1}
    assert "Assistant called search_direct_flight(" in user_message["content"]
    assert "Tool result [search_direct_flight] (ok):" in user_message["content"]
    assert "March 10, economy, and cancel Q7K2LM." in user_message["content"]


FROZEN_LOOP_PROMPT_SHA256 = "a55c3f1eecf1e09679c329e6161a9fcd354f7a841b26cda9432c724be71729d8"


def test_the_collector_is_paused_for_assembly_but_not_while_a_given_summariser_works():
    import gc

    seen = []

    class Watching(DeterministicLoopSummariser):
        name = "watching"

        def summarise(self, request):
            seen.append(gc.isenabled())
            return super().summarise(request)

    counting = []

    def counter(text: str) -> int:
        counting.append(gc.isenabled())
        return len(text) // 4 + 1

    assert gc.isenabled()
    out = assemble(format="openai", messages=loop(7), config={"model_input_limit": BIG}, summariser=Watching(counter),
                   counter=counter)
    assert out.report.events[-1]["summariser"] == "watching"
    assert seen == [True] and gc.isenabled()  # resumed for the summariser, and after
    assert counting and not any(counting[:10])  # paused while assembly counts the input
    gc.disable()
    try:
        assemble(format="openai", messages=loop(7), config={"model_input_limit": BIG}, summariser=Watching(counter),
                 counter=counter)
        assert seen == [True, False] and not gc.isenabled()  # a collector paused by the caller stays paused
    finally:
        gc.enable()
