"""One rule for whether a text says a value (conversations.wording)."""

from __future__ import annotations

from conversations.wording import value_pattern


def test_a_latin_or_digit_end_must_not_run_on_into_a_word():
    assert value_pattern("12").search("gate 12.") and not value_pattern("12").search("in 2012")
    assert not value_pattern("AA").search("AAA") and value_pattern("AA").search("(aa)")
    assert value_pattern("$296").search("for $296 each")  # a sign needs no edge of its own
    assert not value_pattern("$29").search("for $296")


def test_chinese_runs_on_without_boundaries_and_case_is_ignored():
    assert value_pattern("讲礼驴肉馆").search("推荐讲礼驴肉馆用餐")
    assert value_pattern("Sino").search("at SINO in San Jose")
