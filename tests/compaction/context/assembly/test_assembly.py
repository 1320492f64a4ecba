"""Assembly: buckets, trimming order, notes, fail-closed refusals and the report (SPEC §9, seed 004 §1–§4)."""

from __future__ import annotations

import json

import pytest

from compaction.context.assembly import (
    OverBudgetError,
    PairingError,
    RequestFormatError,
    assemble,
    assemble_request,
    validate_request,
)
from compaction.context.assembly.notes import (
    LEDGER_NOTE_HEADER,
    PLACEHOLDER_OPENAI_CONTENT,
    PLACEHOLDER_TEXT,
    SUMMARY_NOTE_HEADER,
)

from .helpers import (
    BIG,
    a_assistant,
    a_user,
    assistant,
    call,
    calls,
    full_tokens,
    limit_for,
    openai_to_anthropic,
    result,
    ring,
    system,
    tool,
    use,
    user,
)

PAD = " ".join(f"word{n}" for n in range(60))  # ~120 tokens of filler


def conversation(rings: int = 8, *, writes: tuple[int, ...] = (2,)) -> list[dict]:
    """system, first user message, then per round: a plain assistant turn, a
    user turn and one tool ring (round k writes when k in ``writes``), then
    the latest user message. Indices: system 0, first user 1, round k starts
    at 2 + 4k (assistant, user, call, result)."""
    messages = [system("You are the airline agent. " + PAD), user("I want to change my booking.")]
    for k in range(rings):
        name = "update_reservation" if k in writes else "get_reservation"
        messages += [assistant(f"Round {k}: " + PAD), user(f"Question {k}: " + PAD)]
        messages += ring(f"c{k}", name, {"reservation_id": f"R{k}", "detail": PAD}, reservation_id=f"R{k}")
    messages.append(user("So what are my options now?"))
    return messages


def run(messages, budget, format="openai", **config):
    config.setdefault("loop", None)
    if format == "anthropic":
        messages, system_prompt = openai_to_anthropic(messages)
        return assemble(format="anthropic", messages=messages, system=system_prompt,
                        config={"model_input_limit": limit_for(budget), **config})
    return assemble(format="openai", messages=messages, config={"model_input_limit": limit_for(budget), **config})


def test_a_request_that_fits_comes_back_unchanged():
    messages = conversation()
    out = run(messages, BIG)
    assert out.messages == messages
    assert out.report.dropped_rings == [] and out.report.dropped_turns == [] and not out.report.summary_used
    assert out.report.tokens_after == out.report.tokens_before


def test_anthropic_request_that_fits_comes_back_unchanged_with_its_system():
    messages, system_prompt = openai_to_anthropic(conversation())
    out = assemble(format="anthropic", messages=messages, system=system_prompt, config={"model_input_limit": BIG})
    assert out.messages == messages and out.system == system_prompt
    assert out.as_dict()["system"] == system_prompt


def test_oldest_middle_rings_go_first_and_whole():
    messages = conversation()
    total = full_tokens("openai", messages)
    out = run(messages, total - 150)
    # Ring 0 (calls at 4, result at 5) is the oldest middle ring.
    assert out.report.dropped_rings == [[4, 5]]
    assert out.report.dropped_turns == []
    assert out.report.tokens_after <= out.report.budget


def test_plain_turns_go_only_when_no_middle_ring_is_left_oldest_first():
    messages = conversation()
    total = full_tokens("openai", messages)
    rings_only = run(messages, total // 2)
    middle_rings = [[4 + 4 * k, 5 + 4 * k] for k in range(5)]  # rounds 0-4; rounds 5-7 are the recent rings
    assert rings_only.report.dropped_rings == middle_rings
    assert rings_only.report.dropped_turns[:3] == [2, 3, 6]  # oldest plain turns, FIFO
    assert rings_only.report.dropped_turns == sorted(rings_only.report.dropped_turns)


def test_protected_messages_survive_every_budget():
    messages = conversation()
    total = full_tokens("openai", messages)
    for budget in range(total, 0, -total // 25):
        try:
            out = run(messages, budget)
        except OverBudgetError:
            continue
        kept = out.messages
        assert kept[0] == messages[0]                          # the system prompt
        assert kept[1] == messages[1]                          # the first user message
        assert messages[-1] in kept and messages[-3] in kept   # the latest two user turns
        for k in (5, 6, 7):                                    # the newest three rings, whole
            assert messages[4 + 4 * k] in kept and messages[5 + 4 * k] in kept
        assert validate_request("openai", kept) == []
        assert out.report.tokens_after <= budget


def test_trimming_a_side_effecting_ring_pins_the_ledger_note():
    messages = conversation(writes=(2,))
    total = full_tokens("openai", messages)
    out = run(messages, total * 2 // 3)
    assert [4 + 4 * 2, 5 + 4 * 2] in out.report.dropped_rings
    notes = [m for m in out.messages if m["role"] == "system" and m["content"].startswith(LEDGER_NOTE_HEADER)]
    assert len(notes) == 1
    assert "update_reservation call=c2 " in notes[0]["content"] and "status=ok" in notes[0]["content"]
    # The note stands where the middle began: after the pinned first user message.
    assert out.messages.index(notes[0]) == 2
    assert [e.call_id for e in out.report.ledger] == ["c2"]


def test_trimming_only_reads_adds_no_note():
    messages = conversation(writes=(7,))  # the only write is in a protected recent ring
    total = full_tokens("openai", messages)
    out = run(messages, total * 2 // 3)
    assert out.report.dropped_rings
    assert all(not (m["role"] == "system" and m["content"].startswith("[")) for m in out.messages)


def test_without_the_ledger_pin_no_note_is_added():
    messages = conversation(writes=(0,))
    total = full_tokens("openai", messages)
    out = run(messages, total * 2 // 3, pin=["first_user_message", "security_system_prompt"])
    assert [4, 5] in out.report.dropped_rings
    assert len(out.messages) == len(messages) - sum(len(r) for r in out.report.dropped_rings) - len(out.report.dropped_turns)
    assert out.report.ledger  # still reported


def test_summarize_replaces_what_was_removed_by_one_note_with_the_ledger():
    messages = conversation(writes=(1,))
    total = full_tokens("openai", messages)
    out = run(messages, total * 2 // 3, summarize=True)
    assert out.report.summary_used
    [note] = [m for m in out.messages if m["role"] == "system" and m["content"].startswith(SUMMARY_NOTE_HEADER)]
    text = note["content"]
    assert "- tool get_reservation(" in text and "update_reservation call=c1 " in text
    assert "Left out:" in text
    assert out.report.tokens_after <= out.report.budget
    assert validate_request("openai", out.messages) == []


def test_summarize_spends_at_most_summary_max_tokens_on_the_note():
    messages = conversation(writes=(1,))
    total = full_tokens("openai", messages)
    plain = run(messages, total * 2 // 3)
    summarized = run(messages, total * 2 // 3, summarize=True, summary_max_tokens=300)
    [step] = [s for s in summarized.report.steps if s["step"] == "summary_note"]
    assert step["tokens"] <= 300
    removed = lambda r: sum(len(x) for x in r.report.dropped_rings) + len(r.report.dropped_turns)  # noqa: E731
    assert removed(summarized) >= removed(plain)


def test_summary_note_respects_summary_max_tokens_but_never_cuts_the_ledger():
    messages = conversation(rings=12, writes=(0, 1, 2, 3))
    total = full_tokens("openai", messages)
    out = run(messages, total // 2, summarize=True, summary_max_tokens=120)
    [note] = [m for m in out.messages if m["content"] and m["content"].startswith(SUMMARY_NOTE_HEADER)]
    for k in (0, 1, 2, 3):
        assert f"update_reservation call=c{k} " in note["content"]
    assert "not listed" in note["content"]


def test_a_middle_system_message_is_pinned_only_while_security_prompts_are():
    messages = conversation()
    messages.insert(10, system("Never reveal card numbers."))
    total = full_tokens("openai", messages)
    pinned = run(messages, total // 2)
    assert messages[10] in pinned.messages
    unpinned = run(messages, total // 2, pin=["first_user_message", "side_effect_ledger"])
    assert 10 in unpinned.report.dropped_turns


def test_anthropic_trimming_keeps_pairing_and_writes_notes_as_user_messages():
    messages = conversation(writes=(0,))
    total = full_tokens("anthropic", *openai_to_anthropic(messages))
    out = run(messages, total * 2 // 3, format="anthropic")
    assert out.report.dropped_rings
    assert validate_request("anthropic", out.messages, system=out.system) == []
    notes = [m for m in out.messages if isinstance(m["content"], str) and m["content"].startswith(LEDGER_NOTE_HEADER)]
    assert len(notes) == 1 and notes[0]["role"] == "user"


# ------------------------------------------------------------ fail closed


def test_broken_input_pairing_is_refused_with_every_violation():
    messages = [system("s"), user("hi"), calls(call("a", "f"), call("b", "g")), tool("a", "x"), tool("z", "?"),
                user("and?")]
    with pytest.raises(PairingError) as caught:
        run(messages, BIG)
    body = caught.value.as_dict()
    assert body["code"] == "context_assembly_pairing_error"
    assert [(v["index"], v["id"], v["problem"]) for v in body["violations"]] == [
        (2, "b", "missing_result"), (4, "z", "result_without_call")]


def test_anthropic_broken_pairing_is_refused_too():
    with pytest.raises(PairingError) as caught:
        assemble(format="anthropic", messages=[a_user("hi"), a_assistant(use("a", "f")), a_user("next")],
                 config={"model_input_limit": BIG})
    assert [(v.index, v.problem) for v in caught.value.violations] == [(1, "missing_result")]


def test_synthesize_error_results_answers_each_missing_result_with_the_fixed_placeholder():
    messages = [system("s"), user("hi"), calls(call("a", "f"), call("b", "send_email")), tool("a", "x"),
                user("and?"), calls(call("c", "g"))]
    out = run(messages, BIG, on_pairing_error="synthesize_error_results")
    assert out.report.repairs == [
        {"index": 2, "id": "b", "problem": "missing_result", "repair": "synthesized_error_result"},
        {"index": 5, "id": "c", "problem": "pending_call_at_end", "repair": "synthesized_error_result"}]
    assert out.messages[4] == {"role": "tool", "tool_call_id": "b", "content": PLACEHOLDER_OPENAI_CONTENT}
    assert out.messages[-1] == {"role": "tool", "tool_call_id": "c", "content": PLACEHOLDER_OPENAI_CONTENT}
    assert json.loads(PLACEHOLDER_OPENAI_CONTENT)["isError"] is True
    assert validate_request("openai", out.messages) == []
    [entry] = out.report.ledger
    assert (entry.call_id, entry.status) == ("b", "missing")


def test_anthropic_placeholders_are_error_results_first_in_the_next_user_message():
    messages = [a_user("hi"), a_assistant(use("a", "f"), use("b", "g")), a_user(result("a"), "and?"),
                a_assistant(use("c", "h"))]
    out = assemble(format="anthropic", messages=messages,
                   config={"model_input_limit": BIG, "on_pairing_error": "synthesize_error_results"})
    assert out.messages[2]["content"] == [
        result("a"), {"type": "tool_result", "tool_use_id": "b", "content": PLACEHOLDER_TEXT, "is_error": True},
        {"type": "text", "text": "and?"}]
    assert out.messages[4] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "c", "content": PLACEHOLDER_TEXT, "is_error": True}]}
    assert [r["id"] for r in out.report.repairs] == ["b", "c"]


def test_synthesize_never_guesses_about_other_violations():
    messages = [user("hi"), calls(call("a", "f")), tool("zz", "stray")]
    with pytest.raises(PairingError) as caught:
        run(messages, BIG, on_pairing_error="synthesize_error_results")
    assert {v.problem for v in caught.value.violations} == {"pending_call_at_end", "result_without_call"}


def test_a_protected_prefix_over_budget_is_refused_never_cut():
    messages = [system("policy " * 400), user("hi")]
    with pytest.raises(OverBudgetError) as caught:
        run(messages, 200)
    sizes = caught.value.as_dict()["sizes"]
    assert caught.value.code == "context_over_budget"
    assert sizes["reason"] == "protected_prefix_over_budget"
    assert sizes["protected_prefix_tokens"] > sizes["budget"] == 200


def test_still_over_budget_after_every_step_is_refused_with_the_sizes():
    messages = conversation()
    with pytest.raises(OverBudgetError) as caught:
        run(messages, 500)
    sizes = caught.value.sizes
    assert sizes["reason"] == "over_budget_after_trimming"
    assert sizes["protected_prefix_tokens"] < 500  # the prefix alone fits; the recent rings do not
    assert sizes["tokens_after_trimming"] > sizes["budget"] == 500
    assert sizes["protected_prefix_tokens"] + sizes["protected_suffix_tokens"] > 500
    assert caught.value.report["ledger"][0]["call_id"] == "c2"  # the report so far says what ran


# ---------------------------------------------------------------- report


def test_prefix_hash_is_stable_across_turns_while_the_prefix_is():
    messages = conversation()
    total = full_tokens("openai", messages)
    first = run(messages, total // 2)
    later = messages + [assistant("Here are your options. " + PAD), user("Take the first one.")]
    second = run(later, total // 2)
    assert second.report.dropped_rings != first.report.dropped_rings or second.report.dropped_turns != first.report.dropped_turns
    assert second.report.prefix_hash == first.report.prefix_hash
    changed = [system("You are a different agent.")] + messages[1:]
    assert run(changed, total // 2).report.prefix_hash != first.report.prefix_hash
    assert first.report.prefix_hash.startswith("sha256:")


def test_the_tool_schemas_count_against_the_budget_and_the_prefix_hash():
    messages = conversation()
    tools = [{"type": "function", "function": {"name": f"tool_{n}", "description": PAD, "parameters": {}}}
             for n in range(4)]
    total = full_tokens("openai", messages)
    plain = assemble(format="openai", messages=messages, config={"model_input_limit": limit_for(total)})
    with_tools = assemble(format="openai", messages=messages, tools=tools, config={"model_input_limit": limit_for(total)})
    assert not plain.report.dropped_rings and with_tools.report.dropped_rings
    assert with_tools.report.prefix_hash != plain.report.prefix_hash


def test_report_holds_what_spec_names():
    messages = conversation()
    out = run(messages, full_tokens("openai", messages) // 2)
    report = out.report.as_dict()
    assert {"tokens_before", "tokens_after", "budget", "dropped_rings", "dropped_turns", "summary_used", "ledger",
            "repairs", "prefix_hash", "steps"} <= report.keys()
    assert [s["step"] for s in report["steps"]] == [
        "validate_input", "loop_compaction", "buckets", "drop_middle_rings", "drop_middle_turns", "ledger_note",
        "validate_output"]
    assert all(s.get("violations", 0) == 0 for s in report["steps"])
    kept_count = len(messages) - sum(len(r) for r in report["dropped_rings"]) - len(report["dropped_turns"])
    assert report["messages_after"] == kept_count + 1  # and the ledger note
    assert out.as_dict().keys() == {"messages", "report", "work_summary"}


def test_tighten_removes_one_more_unit_than_the_budget_needs():
    messages = conversation()
    total = full_tokens("openai", messages)
    loose = run(messages, total - 150)
    tight = assemble(format="openai", messages=messages, tighten=1,
                     config={"model_input_limit": limit_for(total - 150), "loop": None})
    assert tight.report.dropped_rings == loose.report.dropped_rings + [[8, 9]]


def test_the_rest_body_is_strict_about_its_fields():
    with pytest.raises(RequestFormatError) as caught:
        assemble_request({"format": "openai", "messages": [], "config": {"model_input_limit": BIG}, "budget": 5})
    assert [e["field"] for e in caught.value.errors] == ["budget"]
    with pytest.raises(RequestFormatError) as caught:
        assemble_request({"messages": []})
    assert [e["field"] for e in caught.value.errors] == ["format", "config"]
    body = assemble_request({"format": "openai", "messages": [user("hi")], "config": {"model_input_limit": BIG}})
    assert body.messages == [user("hi")]
