"""The pairing validator in both formats (SPEC §9 "Pairing invariant", seed 004 §1)."""

from __future__ import annotations

from compaction.context.assembly import validate_request

from .helpers import a_assistant, a_user, assistant, call, calls, result, tool, use, user


def problems(format, messages, system=None):
    return [(v.index, v.id, v.problem) for v in validate_request(format, messages, system=system)]


def openai(*messages):
    return problems("openai", list(messages))


def anthropic(*messages):
    return problems("anthropic", list(messages))


# ------------------------------------------------------------------ valid


def test_openai_single_call_answered_is_valid():
    assert openai(user("hi"), calls(call("a", "f")), tool("a", "x"), {"role": "assistant", "content": "done"}) == []


def test_anthropic_single_call_answered_is_valid():
    assert anthropic(a_user("hi"), a_assistant(use("a", "f")), a_user(result("a"))) == []


def test_openai_parallel_calls_answered_in_any_order_are_valid():
    assert openai(user("hi"), calls(call("a", "f"), call("b", "g")), tool("b", "y"), tool("a", "x")) == []


def test_anthropic_parallel_calls_answered_in_one_message_are_valid():
    assert anthropic(a_user("hi"), a_assistant({"type": "text", "text": "both"}, use("a", "f"), use("b", "g")),
                     a_user(result("b"), result("a"), "then tell me")) == []


# ---------------------------------------------- results from two messages


def test_openai_results_interleaved_from_two_assistant_messages():
    # a's result comes after the next assistant message: not adjacent.
    assert openai(user("hi"), calls(call("a", "f")), calls(call("b", "g")), tool("a", "x"), tool("b", "y")) == [
        (3, "a", "result_not_adjacent")]


def test_anthropic_results_interleaved_from_two_assistant_messages():
    assert anthropic(a_user("hi"), a_assistant(use("a", "f")), a_assistant(use("b", "g")),
                     a_user(result("a"), result("b"))) == [(3, "a", "result_not_adjacent")]


def test_openai_result_after_a_user_message_is_not_adjacent():
    assert openai(user("hi"), calls(call("a", "f")), user("wait"), tool("a", "x")) == [(3, "a", "result_not_adjacent")]


def test_anthropic_result_two_messages_later_is_not_adjacent():
    assert anthropic(a_user("hi"), a_assistant(use("a", "f")), a_user("wait"), a_user(result("a"))) == [
        (3, "a", "result_not_adjacent")]


# ------------------------------------------------------------- duplicates


def test_openai_duplicate_ids_in_one_message():
    assert openai(user("hi"), calls(call("a", "f"), call("a", "g")), tool("a", "x")) == [
        (1, "a", "duplicate_call_id")]


def test_openai_id_reused_by_a_later_message_is_a_warning_not_a_violation():
    messages = [user("hi"), calls(call("a", "f")), tool("a", "x"), calls(call("a", "g")), tool("a", "y")]
    warnings = []
    assert validate_request("openai", messages, warnings=warnings) == []
    assert [(w.index, w.id, w.problem) for w in warnings] == [(3, "a", "reused_call_id")]


def test_anthropic_duplicate_ids_across_messages():
    assert anthropic(a_user("hi"), a_assistant(use("a", "f")), a_user(result("a")),
                     a_assistant(use("a", "g")), a_user(result("a"))) == [
        (3, "a", "duplicate_call_id"), (4, "a", "duplicate_result")]


def test_a_second_result_for_one_call():
    assert openai(user("hi"), calls(call("a", "f")), tool("a", "x"), tool("a", "x")) == [(3, "a", "duplicate_result")]
    assert anthropic(a_user("hi"), a_assistant(use("a", "f")), a_user(result("a"), result("a"))) == [
        (2, "a", "duplicate_result")]


# ---------------------------------------------------------------- missing


def test_openai_missing_result():
    assert openai(user("hi"), calls(call("a", "f"), call("b", "g")), tool("a", "x"), user("and?")) == [
        (1, "b", "missing_result")]


def test_anthropic_missing_result():
    assert anthropic(a_user("hi"), a_assistant(use("a", "f"), use("b", "g")), a_user(result("a")),
                     a_assistant({"type": "text", "text": "ok"})) == [(1, "b", "missing_result")]


def test_openai_call_left_pending_at_the_end():
    assert openai(user("hi"), calls(call("a", "f"))) == [(1, "a", "pending_call_at_end")]
    assert openai(user("hi"), calls(call("a", "f"), call("b", "g")), tool("a", "x")) == [
        (1, "b", "pending_call_at_end")]


def test_anthropic_call_left_pending_at_the_end():
    assert anthropic(a_user("hi"), a_assistant(use("a", "f"))) == [(1, "a", "pending_call_at_end")]


# ------------------------------------------------- before or without call


def test_openai_result_before_its_call():
    assert openai(user("hi"), tool("a", "early"), calls(call("a", "f")), tool("a", "x")) == [
        (1, "a", "result_before_call")]


def test_anthropic_result_before_its_call():
    assert anthropic(a_user(result("a")), a_assistant(use("a", "f")), a_user(result("a"))) == [
        (0, "a", "result_before_call")]


def test_openai_result_with_no_call():
    assert openai(user("hi"), calls(call("a", "f")), tool("a", "x"), tool("z", "stray")) == [
        (3, "z", "result_without_call")]


def test_anthropic_result_with_no_call():
    assert anthropic(a_user("hi"), a_assistant(use("a", "f")), a_user(result("a"), result("z"))) == [
        (2, "z", "result_without_call")]


# ------------------------------------------------------- format specifics


def test_anthropic_tool_result_must_come_before_text():
    assert anthropic(a_user("hi"), a_assistant(use("a", "f")), a_user("first this", result("a"))) == [
        (2, "a", "result_after_content")]


def test_blocks_in_the_wrong_role():
    assert anthropic(a_user("hi", use("a", "f")), a_assistant(result("a"))) == [
        (0, None, "call_in_wrong_role"), (1, None, "result_in_wrong_role"), (1, "a", "result_not_adjacent")]
    assert openai({"role": "user", "content": "x", "tool_calls": [call("a", "f")]}, tool("a", "x")) == [
        (0, None, "call_in_wrong_role"), (1, "a", "result_not_adjacent")]


def test_missing_ids_are_violations():
    assert openai(user("hi"), calls({"type": "function", "function": {"name": "f", "arguments": "{}"}}),
                  {"role": "tool", "content": "x"}) == [(1, None, "missing_id"), (2, None, "missing_id")]
    assert anthropic(a_user("hi"), a_assistant({"type": "tool_use", "id": "", "name": "f", "input": {}}),
                     a_user({"type": "tool_result", "content": "x"})) == [(1, None, "missing_id"), (2, None, "missing_id")]


def test_every_violation_is_returned_not_only_the_first():
    found = openai(
        user("hi"),
        tool("early", "x"),                       # 1 before its call
        calls(call("a", "f"), call("b", "g")),    # 2 b never answered
        tool("a", "x"), tool("ghost", "?"),       # 3 ok, 4 no such call
        calls(call("early", "h")), tool("early", "y"),
        user("done?"),
        calls(call("c", "k")),                    # 8 pending at the end
    )
    assert found == [(1, "early", "result_before_call"), (2, "b", "missing_result"),
                     (4, "ghost", "result_without_call"), (8, "c", "pending_call_at_end")]


def test_violations_carry_a_stable_dict_for_the_api():
    [violation] = validate_request("openai", [user("hi"), calls(call("a", "f"))])
    assert violation.as_dict() == {"index": 1, "id": "a", "problem": "pending_call_at_end",
                                   "message": "the input ends before this call was answered"}


# ------------------------------------ what mutation testing found untested (issue 18)


def test_an_unknown_format_is_refused_by_name():
    import pytest

    from compaction.context.assembly.validator import validate

    with pytest.raises(ValueError, match="^unknown format 'xml'$"):
        validate([], "xml")


def test_openai_a_result_first_in_the_list_comes_before_its_call():
    assert openai(tool("a", "early"), calls(call("a", "f")), tool("a", "x")) == [(0, "a", "result_before_call")]


def test_a_result_before_its_call_still_answers_it():
    # The misplaced result is the call's answer: the call is not also missing.
    assert openai(user("hi"), tool("a", "early"), calls(call("a", "f")), user("next")) == [
        (1, "a", "result_before_call")]


def test_anthropic_a_list_may_start_with_the_assistant_call():
    assert anthropic(a_assistant(use("a", "f")), a_user(result("a"))) == []


def test_anthropic_every_result_of_a_message_is_checked_after_one_without_an_id():
    assert anthropic(a_user("hi"), a_assistant(use("a", "f")),
                     a_user({"type": "tool_result", "content": "x"}, result("a"))) == [(2, None, "missing_id")]


def test_anthropic_every_result_of_a_message_is_checked_after_one_without_a_call():
    assert anthropic(a_user("hi"), a_assistant(use("a", "f")), a_user(result("zzz"), result("a"))) == [
        (2, "zzz", "result_without_call")]


def test_anthropic_every_result_of_a_message_is_checked_after_one_before_its_call():
    assert anthropic(a_user("hi"), a_assistant(use("a", "f")), a_user(result("b"), result("a")),
                     a_assistant(use("b", "g")), a_user(result("b"))) == [(2, "b", "result_before_call")]


def test_a_result_in_the_message_of_its_own_call_does_not_come_after_it():
    assert anthropic(a_user("hi"), a_user(result("a"), use("a", "f"))) == [
        (1, None, "call_in_wrong_role"), (1, "a", "result_before_call")]


def test_openai_a_call_followed_by_anything_but_tool_messages_is_missing_not_pending():
    assert openai(user("hi"), calls(call("a", "f")), user("more")) == [(1, "a", "missing_result")]


def test_the_anthropic_system_prompt_is_not_a_message_and_shifts_no_index():
    assert problems("anthropic", [a_user("hi"), a_assistant(use("a", "f")), a_user("no result")],
                    system="be brief") == [(1, "a", "missing_result")]


# ------------------------------------------------------------------ pair_results


def _pairs(format, *messages):
    from compaction.context.assembly.adapters import parse
    from compaction.context.assembly.validator import pair_results

    return {key: (r.call_id, p) for key, (r, _, p) in pair_results(parse(format, list(messages)).messages,
                                                                  format).items()}


def test_pair_results_maps_each_openai_call_to_the_result_in_its_run():
    assert _pairs("openai", user("hi"), calls(call("a", "f"), call("b", "g")), tool("b", "y"), tool("a", "x"),
                  assistant("done"), calls(call("a", "f")), tool("a", "again")) == {
        (1, "a"): ("a", 3), (1, "b"): ("b", 2), (5, "a"): ("a", 6)}


def test_pair_results_keeps_the_first_result_of_a_call():
    from compaction.context.assembly.adapters import parse
    from compaction.context.assembly.validator import pair_results

    messages = parse("openai", [calls(call("a", "f")), tool("a", "first"), tool("a", "second")]).messages
    ((key, (result, message, position)),) = pair_results(messages, "openai").items()
    assert key == (0, "a") and position == 1 and message is messages[1] and result is messages[1].results[0]


def test_pair_results_maps_each_anthropic_call_to_the_next_message_only():
    assert _pairs("anthropic", a_user("hi"), a_assistant(use("a", "f")), a_user(result("a")),
                  a_assistant(use("b", "g")), a_user(result("b"))) == {(1, "a"): ("a", 2), (3, "b"): ("b", 4)}
    assert _pairs("anthropic", a_assistant(use("a", "f")), a_user("not yet"), a_user(result("a"))) == {}


def test_anthropic_every_result_of_a_message_is_checked_after_one_that_answers():
    assert anthropic(a_user("hi"), a_assistant(use("a", "f")), a_user(result("a"), result("zzz"))) == [
        (2, "zzz", "result_without_call")]


def test_a_request_whose_system_prompt_is_not_in_its_formats_shape_is_refused():
    import pytest

    from compaction.context.assembly.errors import RequestFormatError

    with pytest.raises(RequestFormatError, match="system: must be a string or a list of content blocks"):
        validate_request("anthropic", [a_user("hi")], system=123)


def test_openai_a_reused_id_left_unanswered_the_second_time_is_missing():
    assert openai(user("hi"), calls(call("a", "f")), tool("a", "x"), calls(call("a", "f")), user("next")) == [
        (3, "a", "missing_result")]
