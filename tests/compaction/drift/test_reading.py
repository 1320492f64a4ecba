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


def _user(text):
    from compaction.drift.reading import ChainMessage, UserReading
    from compaction.handoff import vocabulary as v
    from compaction.handoff.reader import Reader

    return UserReading(ChainMessage("u0", 0, text), 0, Reader(v.DEFAULT.extended({})))


def test_a_message_that_consents_and_holds_holds():
    for text in ("可以提交了，不过先别提交。", "Go ahead, but hold off on the refund."):
        user = _user(text)
        assert user.consent and user.hold and user.state == "hold"
    assert _user("我同意办理。").state == "consent" and _user("好的。").state is None


def test_a_go_ahead_hold_or_drop_that_supposes_before_a_question_is_that_question():
    for text in ("如果我先别提交，会怎样？", "要是我同意办理，多久能好？", "If I hold off on the booking, what happens?",
                 "Suppose I forget the upgrade, is the fee refunded?"):
        user = _user(text)
        assert user.state is None and not user.abandon, text
        assert {role for _, role in user.roles} == {"question"}, text
    # Near misses: no supposing word, or no question after it, or the supposing clause holds nothing.
    assert _user("先别提交，会怎样？").state == "hold"
    assert _user("如果费用超过500元，先别提交。").state == "hold"
    assert _user("If the fee is over 50, hold off on the booking.").state == "hold"
    assert _user("如果我先别提交，会怎样？好吧，那就先别提交。").state == "hold"


def test_the_builder_reads_a_supposed_hold_as_the_question_too():
    from compaction.handoff.clauses import read

    assert [c.role for c in read("如果我先别提交，会怎样？")] == ["question", "question"]
    assert [c.role for c in read("先别提交，会怎样？")] == ["hold", "question"]


def test_a_direct_request_asked_as_a_question_is_a_statement_and_asks_nothing():
    user = _user("能不能帮我把申请提交了？寄修要多久？好的。")
    assert user.questions == (False, True, False) and user.asks_question
    assert user.statement_clauses == ("能不能帮我把申请提交了？", "好的")
    assert user.asking_clauses == ("能不能帮我把申请提交了？",)
    assert not _user("能不能帮我把申请提交了？").asks_question


def test_the_matter_a_message_names_leaves_out_the_question_phrase():
    assert _user("AirPods Max现在多少钱？").own_terms == {"airpods", "max"}  # not 多少
    assert _user("AirPods Max现在多少钱？").terms >= {"airpods", "max", "多少"}


def test_a_line_is_marked_on_hold_or_abandoned_by_its_own_prefix():
    def line(text):
        return LineReading(notes.TODOS, 1, text, text, ())

    for text in ("暂缓：提交申请", "On hold: the refund", "on hold: the refund"):
        assert line(text).marked_hold and not line(text).marked_abandoned, text
    for text in ("已放弃：换新", "Abandoned: a new pair"):
        assert line(text).marked_abandoned and not line(text).marked_hold, text
    assert not line("提交申请").marked_hold and not line("提交申请").marked_abandoned
