"""The output contract: one failure code per violation (SPEC §5)."""

import pytest

from compaction.contract import ContractResult, ProviderResult, check


def ok(**kw):
    base = {"text": "A summary.", "finish_reason": "stop", "tool_calls": []}
    base.update(kw)
    return ProviderResult(**base)


def test_one_normal_stop_with_plain_text_passes():
    assert check(ok()).ok


def test_text_together_with_a_tool_call_fails_however_good_it_reads():
    verdict = check(ok(tool_calls=[{"id": "c1", "function": {"name": "x", "arguments": "{}"}}], finish_reason="stop"))
    assert (verdict.ok, verdict.failure_code) == (False, "tool_calls")


@pytest.mark.parametrize("reason", ["length", "content_filter", "tool_calls", None, ""])
def test_anything_but_a_normal_stop_fails_as_finish_reason(reason):
    assert check(ok(finish_reason=reason)).failure_code == "finish_reason"


@pytest.mark.parametrize("text", ["", "   \n\t", None])
def test_blank_text_fails_as_empty(text):
    assert check(ok(text=text)).failure_code == "empty"


def test_six_thousand_characters_pass_and_one_more_fails_as_too_long():
    assert check(ok(text="字" * 6000)).ok
    assert check(ok(text="字" * 6001)).failure_code == "too_long"


@pytest.mark.parametrize("error", ["provider_error", "timeout"])
def test_a_provider_error_or_timeout_keeps_its_code(error):
    assert check(ProviderResult(error=error, error_detail="x")).failure_code == error


@pytest.mark.parametrize("char", ["\x07", "\x1b", "\x7f"])
def test_a_control_character_fails_as_not_plain_text(char):
    verdict = check(ok(text=f"A summary{char} of the answers."))
    assert (verdict.ok, verdict.failure_code) == (False, "not_plain_text")
    assert f"U+{ord(char):04X} at position 9" in verdict.detail


@pytest.mark.parametrize("char, kind", [("\x00", "a NUL"), ("\ud800", "a lone surrogate"), ("\udfff", "a lone surrogate")])
def test_text_the_database_cannot_store_fails_as_unstorable_text(char, kind):
    """Issue 12: a NUL or a lone surrogate passes JSON but not PostgreSQL."""
    verdict = check(ok(text=f"A summary{char} of the answers."))
    assert (verdict.ok, verdict.failure_code) == (False, "unstorable_text")
    assert kind in verdict.detail and f"U+{ord(char):04X}) at position 9" in verdict.detail


def test_a_surrogate_pair_is_one_character_and_passes():
    import json

    assert check(ok(text=json.loads('"A summary \\ud83d\\ude00."'))).ok


def test_escape_unstorable_writes_what_cannot_be_stored_as_its_escape_and_nothing_else():
    from compaction.contract import escape_unstorable

    assert escape_unstorable("a\x00b\ud800c\U0001F600\\u0000") == "a\\u0000b\\ud800c\U0001F600\\u0000"


def test_tabs_and_line_breaks_are_plain_text():
    assert check(ok(text="Line one\tcolumn\r\nline two\n")).ok


def test_an_unknown_provider_error_is_recorded_as_provider_error_with_its_detail():
    verdict = check(ProviderResult(error="connection_reset", error_detail="reset by peer"))
    assert verdict == ContractResult(False, "provider_error", "reset by peer")
    # Without a detail the code itself is the detail: an attempt record never says nothing.
    assert check(ProviderResult(error="timeout")) == ContractResult(False, "timeout", "timeout")


@pytest.mark.parametrize("result, expected", [
    (ok(tool_calls=[{"id": "c1"}, {"id": "c2"}]), ("tool_calls", "the response carried 2 tool call(s)")),
    (ok(finish_reason="length"), ("finish_reason", "finish_reason was 'length', not 'stop'")),
    (ok(finish_reason=None), ("finish_reason", "finish_reason was None, not 'stop'")),
    (ok(text=" \n\t"), ("empty", "the response text was blank")),
    (ok(text=None), ("empty", "the response text was blank")),
    (ok(text="A\x00"), ("unstorable_text", "a NUL (U+0000) at position 1: the database cannot store this text")),
    (ok(text="A\ud800"), ("unstorable_text",
                          "a lone surrogate (U+D800) at position 1: the database cannot store this text")),
    (ok(text="A\x1b"), ("not_plain_text", "control character U+001B at position 1")),
    (ok(text="x" * 6001), ("too_long", "6001 characters; at most 6000 are allowed")),
], ids=["tool_calls", "finish_reason", "no_finish_reason", "blank", "no_text", "nul", "surrogate", "control",
        "too_long"])
def test_each_violation_fails_with_its_own_code_and_says_what_was_wrong(result, expected):
    assert check(result) == ContractResult(False, *expected)


def test_a_passing_result_is_ok_with_no_code():
    assert check(ok()) == ContractResult(True, "", "")


def test_exactly_the_control_characters_but_tab_and_line_breaks_are_not_plain_text():
    # Every ASCII character, and a few beyond: only C0 controls (except tab,
    # line feed, carriage return) and DEL fail; NUL fails first as unstorable.
    controls = {c for c in range(0x20) if c not in (0x09, 0x0A, 0x0D)} | {0x7F}
    for code in [*range(0x80), 0x85, 0xA0, 0x2028, 0x3000]:
        verdict = check(ok(text=f"A{chr(code)}B"))
        if code == 0:
            assert verdict.failure_code == "unstorable_text"
        elif code in controls:
            assert verdict.failure_code == "not_plain_text", hex(code)
        else:
            assert verdict.ok, hex(code)


def test_the_length_bound_can_be_set_per_call():
    assert check(ok(text="x" * 11), max_chars=10).failure_code == "too_long"
    assert check(ok(text="x" * 10), max_chars=10).ok
