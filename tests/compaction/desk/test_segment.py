"""What the segment page draws beside the summary (issue 16 item 3)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from compaction.desk.segment import Piece, answer_pieces, kept_by_message, retry_note, summary_pieces, word_diff
from compaction.extraction import summarise

ANCHORS = {"m-1041": "src-0-assistant", "m-1043": "src-1-assistant"}


def test_every_label_that_names_a_source_becomes_a_link_and_shortened_labels_are_read_back():
    pieces = summary_pieces("[m-1041] Fee is 3 EUR.\n[…43] Refund on 2026-10-02. [x-9] unknown", ANCHORS)
    cites = [p for p in pieces if p.kind == "cite"]
    assert [(p.text, p.anchor, p.target) for p in cites] == [
        ("[m-1041]", "src-0-assistant", "m-1041"), ("[…43]", "src-1-assistant", "m-1043")]
    assert Piece("label", "[x-9]") in pieces
    assert "".join(p.text for p in pieces) == "[m-1041] Fee is 3 EUR.\n[…43] Refund on 2026-10-02. [x-9] unknown"


def test_the_sentences_an_extractive_summary_kept_are_marked_in_their_answer():
    answers = [
        ("m-1041", "Sure! The fee was 1.01 EUR as of 2026-10-02. Thanks for asking. Anything else?"),
        ("m-1043", "OK, order 88232 was refunded on 2026-10-05 by Alice. " + "Have a nice day. Thank you! " * 10),
    ]
    summary = summarise(answers)
    kept = kept_by_message(summary)
    first = answer_pieces(answers[0][1], kept.get("m-1041"))
    assert [p.text for p in first if p.kind == "kept"] == ["The fee was 1.01 EUR as of 2026-10-02."]
    assert "".join(p.text for p in first) == answers[0][1]
    second = answer_pieces(answers[1][1], kept.get("m-1043"))
    assert [p.text for p in second if p.kind == "kept"] == ["order 88232 was refunded on 2026-10-05 by Alice."]


def test_an_answer_the_summary_kept_nothing_of_is_plain_text():
    assert answer_pieces("Hello there.", None) == [Piece("text", "Hello there.")]


def test_word_diff_marks_only_the_changed_words():
    assert word_diff("the fee was 1.01 EUR", "the fee was 7.77 EUR") == [
        ("eq", "the fee was "), ("del", "1"), ("add", "7"), ("eq", "."), ("del", "01"), ("add", "77"), ("eq", " EUR")]


def test_word_diff_compares_chinese_character_by_character():
    assert word_diff("出发日期是五月三日", "出发日期是五月六日") == [("eq", "出发日期是五月"), ("del", "三"), ("add", "六"),
                                                               ("eq", "日")]


def test_the_retry_note_says_when_the_automatic_retry_is_due():
    now = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
    note = retry_note(state="failed", attempts_used=1, max_attempts=2, updated_at=now, retry_delay_seconds=60,
                      scan_interval_seconds=15, now=now)
    assert note == "Automatic retry: due at 12:01:00 UTC (attempt 2 of 2), at the first scan after that."
    late = retry_note(state="failed", attempts_used=1, max_attempts=2, updated_at=now, retry_delay_seconds=60,
                      scan_interval_seconds=15, now=now + timedelta(minutes=5))
    assert late.startswith("Automatic retry: due since 12:01:00 UTC")
    spent = retry_note(state="exhausted", attempts_used=2, max_attempts=2, updated_at=now, retry_delay_seconds=60,
                       scan_interval_seconds=15, now=now)
    assert spent.startswith("No automatic retry: all 2 attempts are spent")
    assert retry_note(state="succeeded", attempts_used=1, max_attempts=2, updated_at=now, retry_delay_seconds=60,
                      scan_interval_seconds=15, now=now) == ""
