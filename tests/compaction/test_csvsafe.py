"""Issue 6: a CSV cell a spreadsheet would run as a formula is neutralised."""

import pytest

from compaction.csvsafe import csv_cell


@pytest.mark.parametrize("text", ["=1+1", "+31 20 555", "-2", "@SUM(A1)", "\t=1", "\r=1", "\n=1",
                                  "=HYPERLINK(\"http://x\")"])
def test_cell_starting_with_a_formula_trigger_is_prefixed_with_a_quote(text):
    assert csv_cell(text) == "'" + text


@pytest.mark.parametrize("text", ["plain", "a=b", "1+1", "'quoted", "", "中文 =1", " =1"])
def test_other_text_is_written_as_is(text):
    assert csv_cell(text) == text


def test_none_booleans_and_numbers():
    assert csv_cell(None) == ""
    assert (csv_cell(True), csv_cell(False)) == ("true", "false")
    assert (csv_cell(0), csv_cell(42), csv_cell(1.5)) == ("0", "42", "1.5")
