"""The output contract: one failure code per violation (SPEC §5)."""

import pytest

from compaction.contract import ProviderResult, check


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
