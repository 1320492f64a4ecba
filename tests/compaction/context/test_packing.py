"""SPEC §6: budget packing under prefer=raw and prefer=summary — pure, no database."""

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compaction.context.budget import Budget
from compaction.context.lazy import NewestFirst
from compaction.context.packing import RawPiece, SegmentUnit, SummaryPiece, pack
from compaction.context.selection import REASONS

from .legacy_packing import Segment as LegacySegment
from .legacy_packing import Tail as LegacyTail
from .legacy_packing import legacy_pack

DIGEST = "d" * 64


def tail(start, *sizes, tokens=None):
    return [RawPiece(start + i, n, tokens) for i, n in enumerate(sizes)]


def segment(from_pair, *, summary_bytes=None, reason=None, pair_bytes=10, tokens=None, raw_tokens=None,
            known_raw=True):
    summary = None
    if summary_bytes is not None:
        summary = SummaryPiece(generation=from_pair + 1000, prompt_version="conversation-compaction@3",
                               source_digest=DIGEST, bytes=summary_bytes, tokens=tokens)
    sizes = pair_bytes if isinstance(pair_bytes, list) else [pair_bytes] * 10
    raws = [RawPiece(from_pair + 9 - k, sizes[9 - k], raw_tokens) for k in range(10)]
    return SegmentUnit(from_pair=from_pair, to_pair=from_pair + 9, summary=summary, reason=reason, raw_pairs=raws,
                       raw_bytes=sum(sizes) if known_raw else None,
                       raw_tokens=None if raw_tokens is None else raw_tokens * 10)


def account(p):
    return [(a.index, a.as_, a.reason) for a in p.account()]


def forms(p):
    """Per segment start (and raw tail), how it was given: 'S', 'R' or '-'."""
    acc = {a.index: a.as_ for a in p.account()}
    return "".join({"summary": "S", "raw": "R", "omitted": "-"}[acc[i]] for i in range(0, p.pair_count, 10))


def three_segments(**kw):
    # Three segments of 100 bytes raw, summaries of 30; a tail of two 10-byte pairs.
    return tail(30, 10, 10), [segment(k * 10, summary_bytes=30, **kw) for k in range(3)]


# --- prefer=raw -------------------------------------------------------------------


def test_generous_budget_gives_the_whole_history_raw_and_complete():
    t, segs = three_segments()
    p = pack(t, segs, Budget(10_000), pair_count=32)
    assert p.complete and p.cut == 0 and p.used_bytes == 320 and p.summaries() == []
    assert account(p) == [(i, "raw", None) for i in range(32)]


def test_budget_holding_all_raw_but_one_segment_summarises_exactly_the_oldest_usable_one():
    t, segs = three_segments()
    p = pack(t, segs, Budget(320 - 1), pair_count=32)
    assert p.complete and forms(p) == "SRRR" and p.used_bytes == 250
    assert [u.from_pair for u in p.summaries()] == [0]


def test_the_oldest_usable_segment_is_the_one_summarised_when_the_oldest_has_none():
    t, segs = three_segments()
    segs[0] = segment(0, reason="failed")
    p = pack(t, segs, Budget(319), pair_count=32)
    assert forms(p) == "RSRR" and account(p)[0] == (0, "raw", "failed") and account(p)[10] == (10, "summary", None)


def test_a_budget_between_keeps_the_newest_raw_and_summarises_the_oldest():
    t, segs = three_segments()
    p = pack(t, segs, Budget(20 + 30 + 30 + 100), pair_count=32)
    assert p.complete and forms(p) == "SSRR" and p.used_bytes == 180


def test_too_tight_for_all_summaries_omits_the_oldest_over_budget():
    t, segs = three_segments()
    p = pack(t, segs, Budget(20 + 30 + 30 + 5), pair_count=32)
    assert not p.complete and forms(p) == "-SSR" and p.cut == 10
    assert account(p)[:10] == [(i, "omitted", "over_budget") for i in range(10)]


def test_when_not_even_the_tail_fits_its_newest_pairs_that_fit_are_given():
    t, segs = three_segments()
    p = pack(t, segs, Budget(15), pair_count=32)
    assert p.cut == 31 and account(p)[-1] == (31, "raw", None) and p.used_bytes == 10


def test_a_summary_not_cheaper_than_its_raw_pairs_is_never_chosen_under_either_preference():
    for prefer in ("raw", "summary"):
        segs = [segment(0, summary_bytes=100), segment(10, summary_bytes=101)]
        p = pack([], segs, Budget(150), pair_count=20, prefer=prefer)
        assert p.summaries() == [] and p.used_bytes == (100 if prefer == "raw" else 150)
        p = pack([], segs, Budget(10_000), pair_count=20, prefer=prefer)
        assert p.summaries() == [] and p.complete


def test_a_summary_cheaper_by_bytes_but_not_by_tokens_is_not_chosen_under_a_token_budget():
    segs = [segment(0, summary_bytes=10, tokens=50, raw_tokens=1), segment(10, summary_bytes=10, tokens=5,
                                                                           raw_tokens=1)]
    for prefer in ("raw", "summary"):
        p = pack([], segs, Budget(30 + 100, tokens=1000), pair_count=20, prefer=prefer)
        assert [u.from_pair for u in p.summaries()] == [10]  # segment 0's costs more tokens than its pairs
        assert all(a[2] is None for a in account(p))


def test_raw_pairs_of_a_segment_whose_usable_summary_was_not_chosen_have_no_reason():
    t, segs = three_segments()
    p = pack(t, segs, Budget(10_000), pair_count=32)
    assert {a[2] for a in account(p)} == {None}


def test_prefer_raw_never_reads_a_segments_pair_sizes():
    def boom():
        raise AssertionError("pair sizes read although the segment's raw size is known")
    segs = [SegmentUnit(0, 9, SummaryPiece(1, "v", DIGEST, 30), None, raw_pairs=boom, raw_bytes=100),
            SegmentUnit(10, 19, None, "pending", raw_pairs=boom, raw_bytes=100)]
    for budget in (10_000, 150, 20):
        pack([], segs, Budget(budget), pair_count=20)
    # Nor under a token budget when the segment's raw token count is known too.
    segs = [SegmentUnit(0, 9, SummaryPiece(1, "v", DIGEST, 30, tokens=3), None, raw_pairs=boom, raw_bytes=100,
                        raw_tokens=20),
            SegmentUnit(10, 19, None, "pending", raw_pairs=boom, raw_bytes=100, raw_tokens=lambda: 20)]
    for tokens in (1000, 25, 2):
        p = pack([], segs, Budget(10_000, tokens=tokens), pair_count=20)
        assert p.used_tokens == {1000: 40, 25: 23, 2: 0}[tokens]


def test_without_a_token_budget_no_token_count_is_asked_for():
    def never():
        raise AssertionError("a token count was asked for without a token budget")

    segs = [SegmentUnit(0, 9, SummaryPiece(1, "v", DIGEST, 30, tokens=never), None,
                        raw_pairs=[RawPiece(i, 10, never) for i in range(9, -1, -1)], raw_tokens=never),
            SegmentUnit(10, 19, None, "pending", raw_pairs=[RawPiece(i, 10, never) for i in range(19, 9, -1)])]
    t = [RawPiece(20, 10, never)]
    for prefer in ("raw", "summary"):
        for budget in (10_000, 150, 45, 5):
            p = pack(t, segs, Budget(budget), pair_count=21, prefer=prefer, summary_frame_bytes=2,
                     summary_frame_tokens=never, omission=lambda n, s: (3, never))
            assert p.used_tokens is None and p.used_bytes <= budget


def test_segments_older_than_the_first_that_cannot_be_kept_are_never_consumed():
    produced = []

    def newest_first():
        for k in range(99, -1, -1):
            produced.append(k)
            yield segment(k * 10, summary_bytes=30)

    segs = NewestFirst(100, newest_first())
    p = pack([], segs, Budget(100 + 30 * 5), pair_count=1000)
    # Coverage first: eight summaries (240 bytes) keep more history than five and one raw.
    assert forms(p)[:100] == "-" * 92 + "S" * 8
    assert len(produced) == 9  # eight kept, then the first that could not be


def test_tail_pairs_older_than_the_cut_are_never_consumed():
    produced = []

    def newest_first():
        for i in range(5, -1, -1):
            produced.append(i)
            yield RawPiece(i, 10)

    pack(NewestFirst(6, newest_first()), [], Budget(25), pair_count=6)
    assert produced == [5, 4, 3]


def test_token_budget_limits_like_the_byte_budget():
    p = pack(tail(0, 5, 5, 5, tokens=3), [], Budget(1000, tokens=6), pair_count=3)
    assert p.used_tokens == 6 and p.cut == 1


def test_tokens_are_counted_lazily_and_only_as_far_as_the_choice_looks():
    counted = []

    def tokens(i):
        def count():
            counted.append(i)
            return 1
        return count

    pieces = [RawPiece(i, 5, tokens(i)) for i in range(6)]
    p = pack(pieces, [], Budget(12, tokens=100), pair_count=6)
    assert p.used_tokens == 2 and sorted(counted) == [3, 4, 5]


def test_used_tokens_is_null_without_a_token_budget():
    assert pack(tail(0, 1, tokens=5), [], Budget(10), pair_count=1).used_tokens is None


def test_summary_frame_is_charged_once_when_any_summary_is_given():
    segs = [segment(0, summary_bytes=10), segment(10, summary_bytes=10)]
    p = pack([], segs, Budget(27), pair_count=20, summary_frame_bytes=7)
    assert forms(p) == "SS" and p.used_bytes == 27
    # The frame counts towards the fit: 10 + 7 > 16, so the segment stays raw if it can.
    p = pack([], [segment(0, summary_bytes=10, pair_bytes=1)], Budget(16), pair_count=10, summary_frame_bytes=7)
    assert forms(p) == "R" and p.used_bytes == 10


# --- prefer=summary (the seed 000 rule) ----------------------------------------------


def test_prefer_summary_gives_every_usable_summary_even_when_raw_would_fit():
    t, segs = three_segments()
    p = pack(t, segs, Budget(10_000), pair_count=32, prefer="summary")
    assert p.complete and forms(p) == "SSSR" and p.used_bytes == 20 + 90


def test_prefer_summary_falls_back_to_raw_pairs_newest_first_with_no_reason():
    t = tail(20, 5)
    segs = [segment(0, summary_bytes=1), segment(10, summary_bytes=99, pair_bytes=10)]
    p = pack(t, segs, Budget(5 + 35), pair_count=21, prefer="summary")
    acc = account(p)
    assert acc[17:] == [(17, "raw", None), (18, "raw", None), (19, "raw", None), (20, "raw", None)]
    assert acc[:17] == [(i, "omitted", "over_budget") for i in range(17)]
    assert p.used_bytes == 35


def test_prefer_summary_fallback_pair_of_an_unusable_summary_names_why():
    segs = [segment(0, reason="stale_source")]
    p = pack([], segs, Budget(35), pair_count=10, prefer="summary")
    assert account(p)[7:] == [(i, "raw", "stale_source") for i in (7, 8, 9)]
    # The reason is the one of the segment the pairs belong to, not of its older neighbour.
    segs = [segment(0, reason="failed"), segment(10, reason="stale_source")]
    p = pack([], segs, Budget(35), pair_count=20, prefer="summary")
    assert account(p)[16:] == [(16, "omitted", "over_budget")] + [(i, "raw", "stale_source") for i in (17, 18, 19)]


def test_a_segment_offering_its_pairs_through_a_function_is_read_when_they_are_needed():
    calls = []

    def pairs(from_pair):
        def read():
            calls.append(from_pair)
            return [RawPiece(i, 10) for i in range(from_pair + 9, from_pair - 1, -1)]
        return read

    def units(raw_bytes):
        return [SegmentUnit(0, 9, None, "pending", raw_pairs=pairs(0), raw_bytes=raw_bytes),
                SegmentUnit(10, 19, None, "failed", raw_pairs=pairs(10), raw_bytes=raw_bytes)]

    # prefer=summary falls back on pair sizes; only the segment it falls back in is read.
    p = pack([], units(100), Budget(130), pair_count=20, prefer="summary")
    assert calls == [10, 0] and p.cut == 7 and p.used_bytes == 130
    assert account(p)[7:10] == [(i, "raw", "pending") for i in (7, 8, 9)]
    # A segment whose raw size is unknown (no stored row) is sized from its pairs.
    calls.clear()
    p = pack([], units(None), Budget(150), pair_count=20)
    assert calls == [10, 0] and p.cut == 10 and p.used_bytes == 100


def test_counts_by_form_and_reason():
    segs = [segment(0, summary_bytes=1000), segment(10, reason="exhausted", pair_bytes=1)]
    p = pack(tail(20, 1), segs, Budget(11), pair_count=21)
    assert p.counts() == {("raw", None): 1, ("raw", "exhausted"): 10, ("omitted", "over_budget"): 10}
    segs = [segment(0, summary_bytes=30), segment(10, summary_bytes=30), segment(20, reason="failed", pair_bytes=1)]
    p = pack(tail(30, 1), segs, Budget(1 + 10 + 60), pair_count=31)
    assert p.counts() == {("summary", None): 20, ("raw", "failed"): 10, ("raw", None): 1}


# --- telling the model what was left out (format=openai) ------------------------------


def sentence_cost(n, after_summaries):
    return len(f"{n} left out.") + (2 if after_summaries else 0), 0


def test_the_omission_sentence_is_reserved_so_the_whole_still_fits():
    t, segs = three_segments()
    budget = 20 + 30 + 30 + sentence_cost(32, True)[0]
    p = pack(t, segs, Budget(budget), pair_count=32, omission=sentence_cost)
    assert p.told_omitted and p.cut == 10
    assert p.used_bytes == 20 + 60 + sentence_cost(10, True)[0] <= budget


def test_the_reservation_can_cost_the_oldest_piece_its_place():
    t, segs = three_segments()
    budget = 20 + 30 + 30 + 5  # the sentence does not fit beside two summaries
    p = pack(t, segs, Budget(budget), pair_count=32, omission=sentence_cost)
    assert p.told_omitted and p.cut == 20 and p.used_bytes == 20 + 30 + sentence_cost(20, True)[0] <= budget


def test_nothing_is_told_when_nothing_is_omitted():
    t, segs = three_segments()
    p = pack(t, segs, Budget(10_000), pair_count=32, omission=sentence_cost)
    assert not p.told_omitted and p.used_bytes == 320


def test_when_not_even_the_sentence_fits_nothing_is_given():
    p = pack(tail(0, 1, 1, 1), [], Budget(2), pair_count=3, omission=sentence_cost)
    assert p.placed == [] and p.cut == 3 and p.used_bytes == 0 and not p.told_omitted
    assert (p.budget, p.pair_count, p.prefer, p.used_tokens) == (Budget(2), 3, "raw", None)
    p = pack(tail(0, 1, 1, 1), [], Budget(2, tokens=50), pair_count=3, omission=sentence_cost, prefer="summary")
    assert p.placed == [] and p.cut == 3 and (p.used_bytes, p.used_tokens) == (0, 0) and not p.told_omitted
    assert (p.budget, p.pair_count, p.prefer) == (Budget(2, tokens=50), 3, "summary")


def test_when_exactly_the_sentence_fits_it_alone_is_given():
    budget = sentence_cost(3, False)[0]
    p = pack(tail(0, 20, 20, 20), [], Budget(budget), pair_count=3, omission=sentence_cost)
    assert p.placed == [] and p.cut == 3 and p.told_omitted and p.used_bytes == budget
    p = pack(tail(0, 1, 1, 1, tokens=5), [], Budget(100, tokens=2), pair_count=3, omission=token_sentence_cost)
    assert p.placed == [] and p.cut == 3 and p.told_omitted and p.used_tokens == 2
    p = pack(tail(0, 1, 1, 1, tokens=5), [], Budget(100, tokens=1), pair_count=3, omission=token_sentence_cost)
    assert p.placed == [] and p.cut == 3 and not p.told_omitted and p.used_tokens == 0


def test_the_sentence_reserved_is_the_one_for_every_pair_left_out_after_no_summary():
    # Two pairs and the sentence for all 3 pairs (no separator: nothing precedes it) fit exactly.
    budget = 30 + sentence_cost(3, False)[0]
    p = pack(tail(0, 15, 15, 15), [], Budget(budget), pair_count=3, omission=sentence_cost)
    assert p.cut == 1 and p.told_omitted and p.used_bytes == budget


def token_sentence_cost(n, after_summaries):
    """The sentence's bytes do not grow after summaries; its tokens do (a separator of one token)."""
    return len(f"{n} left out."), 2 + (1 if after_summaries else 0)


def test_a_sentence_costing_more_tokens_after_summaries_is_reserved_again():
    segs = [segment(k * 10, summary_bytes=30, tokens=3, raw_tokens=1) for k in range(3)]
    # Room in tokens for one summary (3) and the first reservation (2), not for the sentence after a summary (3).
    p = pack([], segs, Budget(1000, tokens=5), pair_count=30, omission=token_sentence_cost)
    assert p.used_tokens <= 5 and p.told_omitted
    assert p.summaries() == [] and p.cut == 30 and p.used_tokens == 2
    # With one token more the summary and its sentence fit.
    p = pack([], segs, Budget(1000, tokens=6), pair_count=30, omission=token_sentence_cost)
    assert [u.from_pair for u in p.summaries()] == [20] and p.cut == 20 and p.used_tokens == 6


# --- refusals ---------------------------------------------------------------------


def test_history_must_cover_every_pair_contiguously():
    with pytest.raises(ValueError, match=r"^tail pair 1 must be pair 1, got 0$"):
        pack([RawPiece(1, 1), RawPiece(0, 1)], [], Budget(10), pair_count=2)
    with pytest.raises(ValueError, match=r"^tail pair 1 must be pair 11, got 2$"):
        pack(tail(1, 1, 1), [segment(0)], Budget(1000), pair_count=12)
    with pytest.raises(ValueError, match=r"^1 tail pairs and 0 segments cannot cover 3 pairs$"):
        pack(tail(1, 1), [], Budget(10), pair_count=3)
    with pytest.raises(ValueError, match=r"^segment 0 \(0-9\) must end just below pair 11: segments and tail"):
        pack(tail(11, 1), [segment(0)], Budget(1000), pair_count=12)
    with pytest.raises(ValueError, match=r"^segment 1 \(10-19\) must end just below pair 21"):
        pack(tail(21, 1), [segment(0), segment(10)], Budget(1000), pair_count=22)
    with pytest.raises(ValueError, match=r"^the oldest segment must start at pair 0, not 10$"):
        pack(tail(20, 1), [segment(10)], Budget(1000), pair_count=21)
    with pytest.raises(ValueError, match=r"^segments 0 and 1 are not contiguous$"):
        pack(tail(30, 1), [segment(0, reason="pending"), segment(20, reason="pending")], Budget(1000), pair_count=31)
    with pytest.raises(ValueError, match=r"^segments 1 and 2 are not contiguous$"):
        pack(tail(40, 1), [segment(k, reason="pending") for k in (0, 10, 30)], Budget(1000), pair_count=41)
    # A range that runs backwards is refused even where its neighbours line up with it.
    backwards = SegmentUnit(10, 5, None, "pending", raw_bytes=10)
    tail_after = SegmentUnit(6, 15, None, "pending", raw_bytes=10)
    with pytest.raises(ValueError, match=r"^segment 1 \(10-5\) must end just below pair 16"):
        pack(tail(16, 1), [segment(0, reason="pending"), backwards, tail_after], Budget(1000), pair_count=17)


def test_a_one_pair_segment_is_a_range_like_any_other():
    one = SegmentUnit(0, 0, SummaryPiece(1, "v", DIGEST, 3), None, raw_bytes=10)
    p = pack(tail(1, 4), [one], Budget(10), pair_count=2)
    assert account(p) == [(0, "summary", None), (1, "raw", None)] and p.used_bytes == 7


def test_segment_pairs_must_be_offered_newest_first_and_sized():
    oldest_first = SegmentUnit(0, 9, None, "pending", raw_pairs=[RawPiece(i, 1) for i in range(10)])
    with pytest.raises(ValueError, match=r"^segment 0-9 must offer its raw pairs newest first$"):
        pack([], [oldest_first], Budget(1000), pair_count=10)
    unsized = SegmentUnit(0, 9, None, "pending", raw_pairs=[RawPiece(i, None) for i in range(9, -1, -1)])
    with pytest.raises(ValueError, match=r"^pair 0 has no size$"):
        pack([], [unsized], Budget(1000), pair_count=10)
    with pytest.raises(ValueError, match=r"^tail pair 0 has no size$"):
        pack([RawPiece(0, None)], [], Budget(10), pair_count=1)


def test_segment_without_summary_needs_a_known_reason_and_one_with_a_summary_none():
    with pytest.raises(ValueError, match=r"^segment 0-9 has no summary and no valid reason$"):
        pack([], [segment(0, reason="because")], Budget(1000), pair_count=10)
    with pytest.raises(ValueError, match=r"^segment 0-9 has a usable summary: it needs no reason$"):
        pack([], [segment(0, summary_bytes=5, reason="failed")], Budget(1000), pair_count=10)


def test_negative_budget_and_unknown_preference_are_refused():
    for budget in (Budget(-1), Budget(5, tokens=-1)):
        with pytest.raises(ValueError, match=r"^a budget cannot be negative$"):
            pack([], [], budget, pair_count=0)
    with pytest.raises(ValueError, match=r"^unknown preference 'newest'; use one of: raw, summary$"):
        pack([], [], Budget(1), pair_count=0, prefer="newest")


def test_a_token_budget_of_zero_is_a_budget_like_any_other():
    p = pack(tail(0, 1, 1, tokens=1), [], Budget(10, tokens=0), pair_count=2)
    assert p.cut == 2 and p.used_tokens == 0
    p = pack(tail(0, 1, 1, tokens=0), [], Budget(10, tokens=0), pair_count=2)
    assert p.complete and p.used_tokens == 0


# --- properties -------------------------------------------------------------------


@st.composite
def histories(draw, max_segments=6):
    """A random history: tail sizes and, per segment, pair sizes and a summary or a reason."""
    m = draw(st.integers(0, max_segments))
    tail_len = draw(st.integers(0 if m == 0 else 1, 12))
    t = tail(m * 10, *[draw(st.integers(0, 200)) for _ in range(tail_len)])
    segs = []
    for k in range(m):
        sizes = draw(st.lists(st.integers(0, 200), min_size=10, max_size=10))
        if draw(st.booleans()):
            segs.append(segment(k * 10, summary_bytes=draw(st.integers(0, 1500)), pair_bytes=sizes))
        else:
            segs.append(segment(k * 10, reason=draw(st.sampled_from(REASONS[1:])), pair_bytes=sizes))
    frame = draw(st.sampled_from([0, 0, 40]))
    told = draw(st.booleans())
    return m * 10 + tail_len, t, segs, frame, told


def _check(p, budget, pair_count):
    assert p.used_bytes <= budget
    acc = account(p)
    assert [a[0] for a in acc] == list(range(pair_count))  # every pair once, in order
    assert p.complete == all(a[1] != "omitted" for a in acc)
    # One unbroken newest stretch: omitted pairs are exactly the oldest ones, for lack of room.
    assert acc[:p.cut] == [(i, "omitted", "over_budget") for i in range(p.cut)]
    assert all(a[1] != "omitted" for a in acc[p.cut:])
    # Never a summary not cheaper than its raw pairs.
    for unit in p.summaries():
        assert unit.summary.bytes < (unit.raw_bytes if unit.raw_bytes is not None else
                                     sum(x.bytes for x in unit.raw()))


def _cost(p, t, segs, frame, sentence):
    total = sum(x.bytes for x in t if x.index >= p.cut)
    for s in segs:
        if s.from_pair >= p.cut:
            total += s.summary.bytes if s in p.summaries() else s.raw_bytes
        elif s.to_pair >= p.cut:
            total += sum(x.bytes for x in s.raw_pairs if x.index >= p.cut)
    return total + (frame if p.summaries() else 0) + sentence


@settings(max_examples=400, deadline=None)
@given(histories(), st.integers(0, 4000), st.sampled_from(["raw", "summary"]))
def test_bytes_never_exceed_the_budget_and_every_pair_is_accounted_once(history, budget, prefer):
    pair_count, t, segs, frame, told = history
    p = pack(t, segs, Budget(budget), pair_count=pair_count, prefer=prefer, summary_frame_bytes=frame,
             omission=sentence_cost if told else None)
    _check(p, budget, pair_count)
    assert (p.budget, p.pair_count, p.prefer) == (Budget(budget), pair_count, prefer)
    sentence = sentence_cost(p.cut, bool(p.summaries()))[0] if p.told_omitted else 0
    assert p.used_bytes == _cost(p, t, segs, frame, sentence)  # used is exact
    if p.told_omitted:
        assert told and p.cut > 0
    elif told and p.cut:  # not even the sentence fitted
        assert p.placed == [] and p.cut == pair_count and p.used_bytes == 0


@settings(max_examples=400, deadline=None)
@given(histories(max_segments=5), st.integers(0, 4000))
def test_prefer_raw_no_other_choice_covers_more_history_or_the_same_with_more_raw_oldest_first(history, budget):
    pair_count, t, segs, frame, _ = history
    p = pack(t, segs, Budget(budget), pair_count=pair_count, summary_frame_bytes=frame)
    _check(p, budget, pair_count)
    tail_bytes = sum(x.bytes for x in t)
    if tail_bytes > budget:
        assert p.cut >= len(segs) * 10
        return
    cheaper = [s.summary is not None and s.summary.bytes < s.raw_bytes for s in segs]
    best = None  # (segments kept, raw segments) over every assignment of whole forms
    for c in range(len(segs) + 1):
        for kept in itertools.product(*[("R", "S") if cheaper[k] else ("R",) for k in range(c, len(segs))]):
            cost = tail_bytes + sum(segs[c + i].summary.bytes if f == "S" else segs[c + i].raw_bytes
                                    for i, f in enumerate(kept)) + (frame if "S" in kept else 0)
            # Only assignments that spend fidelity oldest first (seed 002 §8): no
            # segment that could be a summary raw while an older one is a summary.
            ages = "".join(kept)
            respects_age = not any(ages[i] == "R" and cheaper[c + i] and "S" in ages[i + 1:]
                                   for i in range(len(ages)))
            if cost <= budget and respects_age:
                key = (len(segs) - c, kept.count("R"))
                best = key if best is None or key > best else best
    f = forms(p)[:len(segs)]
    assert (len(segs) - f.count("-"), f.count("R")) == best
    # Never a raw segment that could be a summary older than a summarised one.
    first_summary = f.find("S")
    assert first_summary < 0 or not any(f[k] == "R" and cheaper[k] for k in range(first_summary))


@settings(max_examples=400, deadline=None)
@given(histories(), st.integers(0, 4000))
def test_prefer_summary_reproduces_the_walk_it_replaced(history, budget):
    pair_count, t, segs, frame, _ = history
    p = pack(t, segs, Budget(budget), pair_count=pair_count, prefer="summary", summary_frame_bytes=frame)
    _check(p, budget, pair_count)
    units = [LegacyTail(x.index, x.bytes) for x in reversed(t)]
    for s in reversed(segs):
        cheaper = s.summary is not None and s.summary.bytes < s.raw_bytes
        units.append(LegacySegment(s.from_pair, s.to_pair, s.summary.bytes if cheaper else None,
                                   pairs=[(x.index, x.bytes, 0) for x in s.raw_pairs]))
    cut, summarised, raws, used, _ = legacy_pack(units, budget_bytes=budget, frame_bytes=frame)
    assert p.cut == cut and p.used_bytes == used
    assert sorted(u.from_pair for u in p.summaries()) == sorted(summarised)
    assert sorted(a.index for a in p.account() if a.as_ == "raw") == sorted(raws)


@st.composite
def token_histories(draw, max_segments=4):
    """A random history with a token count on every piece: some given now, some
    as functions counted when first needed; segments whose raw size is known
    (with or without its token count) or only known from their pairs."""
    def tokens(n):
        return n if draw(st.booleans()) else (lambda: n)

    m = draw(st.integers(0, max_segments))
    tail_len = draw(st.integers(0 if m == 0 else 1, 6))
    t = [RawPiece(m * 10 + i, draw(st.integers(0, 60)), tokens(draw(st.integers(0, 20)))) for i in range(tail_len)]
    segs, exact = [], {}
    for k in range(m):
        sizes = draw(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 20)), min_size=10, max_size=10))
        pieces = [RawPiece(k * 10 + j, b, tokens(n)) for j, (b, n) in enumerate(sizes)][::-1]
        raw_bytes, raw_tokens = sum(b for b, _ in sizes), sum(n for _, n in sizes)
        known = draw(st.sampled_from(["size and tokens", "size", "neither"]))
        summary, reason = None, draw(st.sampled_from(REASONS[1:]))
        if draw(st.booleans()):
            sb, stk = draw(st.integers(0, raw_bytes + 20)), draw(st.integers(0, raw_tokens + 5))
            summary, reason = SummaryPiece(k, "v", DIGEST, sb, tokens(stk)), None
            exact[k] = (sb, stk)
        segs.append(SegmentUnit(k * 10, k * 10 + 9, summary, reason, raw_pairs=pieces,
                                raw_bytes=None if known == "neither" else raw_bytes,
                                raw_tokens=tokens(raw_tokens) if known == "size and tokens" else None))
        exact[("raw", k)] = [(b, n) for b, n in sizes]
    exact["tail"] = [(x.bytes, x.tokens if isinstance(x.tokens, int) else x.tokens()) for x in t]
    frame_bytes, frame_tokens = draw(st.sampled_from([(0, None), (10, 3), (10, None), (0, 4)]))
    return m * 10 + tail_len, t, segs, exact, frame_bytes, frame_tokens


@settings(max_examples=400, deadline=None)
@given(token_histories(), st.integers(0, 1500), st.integers(0, 300), st.sampled_from(["raw", "summary"]),
       st.booleans())
def test_under_a_token_budget_neither_budget_is_exceeded_and_tokens_used_are_exact(history, budget, tokens, prefer,
                                                                                   told):
    pair_count, t, segs, exact, frame_bytes, frame_tokens = history
    p = pack(t, segs, Budget(budget, tokens=tokens), pair_count=pair_count, prefer=prefer,
             summary_frame_bytes=frame_bytes, summary_frame_tokens=frame_tokens,
             omission=token_sentence_cost if told else None)
    _check(p, budget, pair_count)
    assert p.used_tokens <= tokens
    summarised = {u.from_pair // 10 for u in p.summaries()}
    for k in summarised:  # never a summary not cheaper in tokens either
        assert exact[k][1] < sum(n for _, n in exact[("raw", k)])
    # What was used, recomputed from every piece given: tail pairs, summaries, raw pairs, the frame, the sentence.
    used_b = used_t = 0
    for i, (b, n) in enumerate(exact["tail"]):
        if len(segs) * 10 + i >= p.cut:
            used_b, used_t = used_b + b, used_t + n
    for k in range(len(segs)):
        if k in summarised:
            used_b, used_t = used_b + exact[k][0], used_t + exact[k][1]
            continue
        for j, (b, n) in enumerate(exact[("raw", k)]):
            if k * 10 + j >= p.cut:
                used_b, used_t = used_b + b, used_t + n
    if summarised:
        used_b, used_t = used_b + frame_bytes, used_t + (frame_tokens or 0)
    if p.told_omitted:
        sb, stk = token_sentence_cost(p.cut, bool(summarised))
        used_b, used_t = used_b + sb, used_t + stk
    assert (p.used_bytes, p.used_tokens) == (used_b, used_t)
    if told and p.cut and not p.told_omitted:  # not even the sentence fitted
        assert p.placed == [] and p.cut == pair_count
