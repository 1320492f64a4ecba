"""How the drift checks read a note's lines (compaction.drift.reading)."""

from compaction.drift.reading import LineReading, read_lines
from compaction.handoff import note as notes


def test_a_line_holds_its_own_words_and_then_its_quotes_each_after_a_space():
    # What ``keeps`` compares: the own words and the quotes together, read as
    # one text; without a quote, the own words alone (the same text, so one
    # reading serves both).
    quoted = LineReading(notes.REQUESTS, 1, "window seat (quote: only aisle; not middle)", "window seat",
                         ("only aisle", "not middle"))
    assert quoted.held == "window seat only aisle not middle"
    assert {"window", "seat", "aisle"} <= quoted.terms  # the own words' last word stays a word of its own
    plain = LineReading(notes.REQUESTS, 2, "window seat", "window seat", ())
    assert plain.held == plain.own == "window seat"


def test_read_lines_splits_each_line_into_its_own_words_and_quotes_and_leaves_out_the_placeholders():
    text = "左耳无声（原话：“左耳没声音了”）"
    own, quotes = notes.split_quote(text)
    lines = read_lines([(notes.REQUESTS, 1, text), (notes.REQUESTS, 2, "无")])
    assert [(line.number, line.own, line.quotes) for line in lines] == [(1, own, tuple(quotes))]
    assert lines[0].held == own + " " + " ".join(quotes) and quotes
