"""SPEC §6: budget packing — pure, no database."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compaction.context.budget import Budget
from compaction.context.packing import PlacedRaw, RawPiece, SegmentUnit, SummaryPiece, TailUnit, pack
from compaction.context.selection import REASONS

DIGEST = "d" * 64


def tail(index, nbytes, tokens=None):
    return TailUnit(RawPiece(index, nbytes, tokens))


def segment(from_pair, *, summary_bytes=None, reason=None, pair_bytes=10, tokens=None, raw_tokens=None):
    summary = None
    if summary_bytes is not None:
        summary = SummaryPiece(generation=from_pair + 1000, prompt_version="conversation-compaction@3",
                               source_digest=DIGEST, bytes=summary_bytes, tokens=tokens)
    sizes = pair_bytes if isinstance(pair_bytes, list) else [pair_bytes] * 10
    raws = [RawPiece(from_pair + 9 - k, sizes[9 - k], raw_tokens) for k in range(10)]
    return SegmentUnit(from_pair=from_pair, to_pair=from_pair + 9, summary=summary, reason=reason, raw_pairs=raws)


def account(p):
    return [(a.index, a.as_, a.reason) for a in p.account()]


def test_everything_fits_in_a_generous_budget():
    units = [tail(21, 5), tail(20, 5), segment(10, summary_bytes=30), segment(0, reason="failed")]
    p = pack(units, Budget(10_000), pair_count=22)
    assert p.complete and p.cut == 0
    assert p.used_bytes == 5 + 5 + 30 + 100
    acc = account(p)
    assert [a[0] for a in acc] == list(range(22))
    assert acc[0] == (0, "raw", "failed") and acc[10] == (10, "summary", None) and acc[21] == (21, "raw", None)


def test_zero_budget_omits_everything_over_budget():
    p = pack([tail(2, 5), tail(1, 5), tail(0, 5)], Budget(0), pair_count=3)
    assert not p.complete and p.used_bytes == 0 and p.placed == []
    assert account(p) == [(i, "omitted", "over_budget") for i in range(3)]


def test_budget_exactly_the_newest_pair_gives_just_that_pair():
    p = pack([tail(2, 7), tail(1, 1), tail(0, 1)], Budget(7), pair_count=3)
    assert account(p) == [(0, "omitted", "over_budget"), (1, "omitted", "over_budget"), (2, "raw", None)]
    assert p.used_bytes == 7


def test_budget_one_byte_under_the_newest_pair_gives_nothing():
    p = pack([tail(2, 7), tail(1, 1), tail(0, 1)], Budget(6), pair_count=3)
    assert p.used_bytes == 0 and all(a[1] == "omitted" for a in account(p))


def test_packing_stops_at_the_first_piece_that_does_not_fit():
    # Pair 0 is small enough to fit, but history stays one unbroken stretch.
    p = pack([tail(2, 5), tail(1, 50), tail(0, 1)], Budget(10), pair_count=3)
    assert account(p) == [(0, "omitted", "over_budget"), (1, "omitted", "over_budget"), (2, "raw", None)]


def test_summary_that_does_not_fit_falls_back_to_raw_pairs_newest_first():
    units = [tail(20, 5), segment(10, summary_bytes=1000, pair_bytes=10), segment(0, summary_bytes=1)]
    p = pack(units, Budget(5 + 35), pair_count=21)
    acc = account(p)
    assert acc[17:] == [(17, "raw", "over_budget"), (18, "raw", "over_budget"), (19, "raw", "over_budget"), (20, "raw", None)]
    assert acc[:17] == [(i, "omitted", "over_budget") for i in range(17)]
    assert p.used_bytes == 35


def test_fallback_segment_that_fits_whole_lets_older_segments_in():
    units = [segment(10, summary_bytes=1000, pair_bytes=1), segment(0, summary_bytes=5)]
    p = pack(units, Budget(15), pair_count=20)
    assert p.complete
    assert account(p)[0] == (0, "summary", None) and account(p)[10] == (10, "raw", "over_budget")


def test_raw_pairs_of_a_segment_are_not_read_when_its_summary_fits():
    def boom():
        raise AssertionError("raw pairs read although the summary fit")
    unit = SegmentUnit(from_pair=0, to_pair=9, summary=SummaryPiece(1, "conversation-compaction@3", DIGEST, 10),
                       reason=None, raw_pairs=boom)
    assert pack([unit], Budget(10), pair_count=10).complete


def test_units_older_than_the_cut_are_never_consumed():
    consumed = []

    def units():
        for i in range(5, -1, -1):
            consumed.append(i)
            yield tail(i, 10)

    pack(units(), Budget(25), pair_count=6)
    assert consumed == [5, 4, 3]


def test_tokens_are_only_counted_for_pieces_that_fit_by_bytes():
    counted = []

    def tokens(i):
        def count():
            counted.append(i)
            return 1
        return count

    units = [TailUnit(RawPiece(2, 5, tokens(2))), TailUnit(RawPiece(1, 500, tokens(1))), TailUnit(RawPiece(0, 1, tokens(0)))]
    p = pack(units, Budget(100, tokens=100), pair_count=3)
    assert counted == [2] and p.used_tokens == 1


def test_token_budget_limits_like_the_byte_budget():
    units = [tail(2, 5, tokens=3), tail(1, 5, tokens=3), tail(0, 5, tokens=3)]
    p = pack(units, Budget(1000, tokens=6), pair_count=3)
    assert p.used_tokens == 6 and p.cut == 1


def test_summary_over_the_token_budget_falls_back_to_raw():
    units = [segment(0, summary_bytes=10, tokens=50, pair_bytes=1, raw_tokens=1)]
    p = pack(units, Budget(1000, tokens=10), pair_count=10)
    assert p.complete and {a[2] for a in account(p)} == {"over_budget"} and {a[1] for a in account(p)} == {"raw"}


def test_used_tokens_is_null_without_a_token_budget():
    assert pack([tail(0, 1, tokens=5)], Budget(10), pair_count=1).used_tokens is None


def test_summary_frame_is_charged_once_with_the_first_summary():
    units = [segment(10, summary_bytes=10), segment(0, summary_bytes=10)]
    p = pack(units, Budget(1000), pair_count=20, summary_frame_bytes=7)
    assert p.used_bytes == 27
    # The frame counts towards the fit: 10 + 7 > 16, so the summary falls back.
    p = pack([segment(0, summary_bytes=10, pair_bytes=1)], Budget(16), pair_count=10, summary_frame_bytes=7)
    assert {a[1] for a in account(p)} == {"raw"}


def test_counts_by_form_and_reason():
    units = [tail(20, 1), segment(10, reason="exhausted", pair_bytes=1), segment(0, summary_bytes=1000)]
    p = pack(units, Budget(11), pair_count=21)
    assert p.counts() == {("raw", None): 1, ("raw", "exhausted"): 10, ("omitted", "over_budget"): 10}


def test_units_must_cover_every_pair_newest_first():
    with pytest.raises(ValueError):
        pack([tail(0, 1), tail(1, 1)], Budget(10), pair_count=2)
    with pytest.raises(ValueError):
        pack([tail(1, 1)], Budget(10), pair_count=2)


def test_segment_without_summary_needs_a_known_reason():
    with pytest.raises(ValueError):
        pack([segment(0, reason="because")], Budget(1000), pair_count=10)


def test_negative_budget_is_refused():
    with pytest.raises(ValueError):
        pack([], Budget(-1), pair_count=0)


@st.composite
def conversations(draw):
    """A random history: tail sizes and, per segment, summary or a reason."""
    segments = draw(st.integers(0, 6))
    tail_len = draw(st.integers(0 if segments == 0 else 20, 29))
    units = [tail(segments * 10 + t, draw(st.integers(0, 200))) for t in range(tail_len - 1, -1, -1)]
    for k in range(segments - 1, -1, -1):
        sizes = draw(st.lists(st.integers(0, 200), min_size=10, max_size=10))
        if draw(st.booleans()):
            units.append(segment(k * 10, summary_bytes=draw(st.integers(0, 2000)), pair_bytes=sizes))
        else:
            units.append(segment(k * 10, reason=draw(st.sampled_from(REASONS[1:])), pair_bytes=sizes))
    return segments * 10 + tail_len, units


@settings(max_examples=300, deadline=None)
@given(conversations(), st.integers(0, 6000))
def test_used_bytes_never_exceed_the_budget_and_every_pair_is_accounted_once(conv, budget):
    pair_count, units = conv
    p = pack(units, Budget(budget), pair_count=pair_count)
    assert p.used_bytes <= budget
    acc = account(p)
    assert [a[0] for a in acc] == list(range(pair_count))
    assert p.complete == all(a[1] != "omitted" for a in acc)
    placed_bytes = sum(x.piece.bytes if isinstance(x, PlacedRaw) else x.unit.summary.bytes for x in p.placed)
    assert placed_bytes == p.used_bytes
    # Omitted pairs are always the oldest ones, and always for lack of room.
    omitted = [a for a in acc if a[1] == "omitted"]
    assert omitted == [(i, "omitted", "over_budget") for i in range(len(omitted))]
