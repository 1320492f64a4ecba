"""SPEC §6 packing as a pure choice of forms: prefer=raw (the smallest c, then
the smallest s) and prefer=summary (the seed 000 walk), never a summary that
costs more than its source — pure, no database."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from compaction.context.choice import (
    OMITTED,
    PARTIAL,
    RAW,
    SUMMARY,
    ZERO,
    Choice,
    Cost,
    SegmentCost,
    choose_prefer_raw,
    choose_prefer_summary,
)


def seg(raw=100, summary=None, *, tokens=None, summary_tokens=None, pairs=None):
    """A segment of ten pairs of ``raw / 10`` bytes each (or ``pairs``)."""
    pair_costs = [Cost(p, (tokens or 0) // 10) for p in pairs] if pairs else [Cost(raw // 10, (tokens or 0) // 10)] * 10
    raw_cost = sum(pair_costs, ZERO)
    return SegmentCost(raw=raw_cost, summary=None if summary is None else Cost(summary, summary_tokens or 0),
                       pairs=pair_costs)


def tail(*sizes):
    return [Cost(s) for s in sizes]


def forms(choice: Choice) -> list[str]:
    return [choice.segment_form(k) for k in range(choice.segment_count)]


def raw_choice(segments, budget, *, tail_sizes=(10, 10), **kw):
    return choose_prefer_raw(tail=tail(*tail_sizes), segments=segments, budget_bytes=budget, **kw)


def summary_choice(segments, budget, *, tail_sizes=(10, 10), **kw):
    return choose_prefer_summary(tail=tail(*tail_sizes), segments=segments, budget_bytes=budget, **kw)


class Recording(list):
    """A sequence that records which items were read."""

    def __init__(self, items):
        super().__init__(items)
        self.read: list[int] = []

    def __getitem__(self, k):
        self.read.append(k)
        return super().__getitem__(k)


# --- prefer=raw: examples ----------------------------------------------------------


def test_generous_budget_gives_the_whole_history_raw():
    segments = [seg(100, 30), seg(100, 30), seg(100, 30)]
    choice = raw_choice(segments, 10_000)
    assert forms(choice) == [RAW, RAW, RAW] and choice.complete
    assert choice.cost == Cost(320) and choice.summaries == () and choice.switch == 0


def test_budget_exactly_everything_raw_gives_everything_raw():
    choice = raw_choice([seg(100, 30), seg(100, 30)], 220)
    assert forms(choice) == [RAW, RAW] and choice.cost == Cost(220)


def test_budget_one_byte_short_of_everything_raw_summarises_exactly_the_oldest_segment():
    choice = raw_choice([seg(100, 30), seg(100, 30), seg(100, 30)], 319)
    assert forms(choice) == [SUMMARY, RAW, RAW] and choice.complete
    assert choice.cost == Cost(250) and choice.switch == 1


def test_the_oldest_usable_segment_is_summarised_when_the_oldest_has_no_summary():
    choice = raw_choice([seg(100, None), seg(100, 30), seg(100, 30)], 319)
    assert forms(choice) == [RAW, SUMMARY, RAW] and choice.switch == 2


def test_a_budget_between_summarises_the_oldest_stretch_and_keeps_the_newest_raw():
    segments = [seg(100, 30) for _ in range(5)]
    # 20 tail + 3 summaries (90) + 2 raw (200) = 310 fits; 2 summaries + 3 raw = 380 does not.
    choice = raw_choice(segments, 330)
    assert forms(choice) == [SUMMARY, SUMMARY, SUMMARY, RAW, RAW]
    assert choice.cost == Cost(310) and choice.switch == 3 and choice.complete


def test_when_even_all_summaries_do_not_fit_the_oldest_segments_are_omitted():
    segments = [seg(100, 30) for _ in range(5)]
    choice = raw_choice(segments, 20 + 3 * 30 + 5)
    assert forms(choice) == [OMITTED, OMITTED, SUMMARY, SUMMARY, SUMMARY]
    assert not choice.complete and choice.omitted_pairs() == 20 and choice.cost == Cost(110)


def test_an_omitted_segment_is_whole_even_when_some_of_its_pairs_would_fit():
    choice = raw_choice([seg(100, 30), seg(100, 30)], 20 + 30 + 25)
    assert forms(choice) == [OMITTED, SUMMARY] and choice.partial_pairs == 0


def test_a_summary_not_cheaper_than_its_raw_pairs_is_never_chosen():
    choice = raw_choice([seg(100, 100), seg(100, 30)], 219)
    assert forms(choice) == [RAW, SUMMARY]
    choice = raw_choice([seg(100, 150), seg(100, 100)], 150)
    assert forms(choice) == [OMITTED, RAW] and choice.cost == Cost(120)


def test_a_summary_cheaper_in_bytes_but_not_in_tokens_is_not_chosen_under_a_token_budget():
    segments = [seg(100, 30, tokens=20, summary_tokens=20), seg(100, 30, tokens=20, summary_tokens=5)]
    choice = raw_choice(segments, 219, budget_tokens=1000)
    assert forms(choice) == [RAW, SUMMARY]
    # Without a token budget only bytes count, and the oldest is summarised.
    assert forms(raw_choice(segments, 219)) == [SUMMARY, RAW]


def test_a_token_budget_binds_like_the_byte_budget():
    segments = [seg(100, 30, tokens=50, summary_tokens=10), seg(100, 30, tokens=50, summary_tokens=10)]
    choice = raw_choice(segments, 10_000, budget_tokens=90)
    assert forms(choice) == [SUMMARY, RAW] and choice.cost == Cost(150, 60)


def test_when_the_raw_tail_does_not_fit_its_newest_pairs_that_fit_are_given_and_segments_are_not_read():
    segments = Recording([seg(100, 1)])
    choice = choose_prefer_raw(tail=tail(5, 30, 10, 10), segments=segments, budget_bytes=25)
    assert choice.first_tail_pair == 2 and choice.cost == Cost(20)
    assert forms(choice) == [OMITTED] and choice.omitted_pairs() == 12
    assert segments.read == []


def test_the_tail_walk_stops_at_the_first_pair_that_does_not_fit():
    # The oldest pair (1 byte) would fit, but history stays one unbroken stretch.
    choice = choose_prefer_raw(tail=tail(1, 50, 10), segments=[], budget_bytes=20)
    assert choice.first_tail_pair == 2 and choice.cost == Cost(10)
    assert not choice.complete and choice.omitted_pairs() == 2


def test_segments_older_than_the_first_that_cannot_be_kept_are_never_read():
    segments = Recording([seg(100, 30) for _ in range(50)])
    choose_prefer_raw(tail=tail(10), segments=segments, budget_bytes=10 + 3 * 30)
    assert sorted(set(segments.read)) == [46, 47, 48, 49]


def test_each_segment_is_read_at_most_once_so_a_thousand_segments_cost_a_thousand_reads():
    segments = Recording([seg(100, 30) for _ in range(1000)])
    choice = choose_prefer_raw(tail=tail(10), segments=segments, budget_bytes=10 + 1000 * 30 + 500 * 70)
    assert choice.complete and len(choice.summaries) == 500
    assert len(segments.read) == len(set(segments.read)) == 1000


def test_the_summary_frame_is_charged_once_when_a_summary_is_given():
    choice = raw_choice([seg(100, 30), seg(100, 30)], 20 + 60 + 7, summary_frame=Cost(7))
    assert forms(choice) == [SUMMARY, SUMMARY] and choice.cost == Cost(87)
    assert raw_choice([seg(100, 30)], 10_000, summary_frame=Cost(7)).cost == Cost(120)


def test_a_frame_that_eats_the_saving_leaves_the_segment_raw():
    # Summarising saves 1 byte but the frame costs 5: raw is cheaper.
    choice = raw_choice([seg(100, 99)], 120, summary_frame=Cost(5))
    assert forms(choice) == [RAW] and choice.cost == Cost(120)


def test_frame_can_make_a_segment_unkeepable():
    # Raw (100) does not fit in 90 left; its summary does (30) but not with a 70-byte frame.
    choice = raw_choice([seg(100, 30)], 110, summary_frame=Cost(70))
    assert forms(choice) == [OMITTED] and choice.cost == Cost(20)


def test_no_segments_and_a_fitting_tail_is_complete():
    choice = choose_prefer_raw(tail=tail(3, 4), segments=[], budget_bytes=7)
    assert choice.complete and choice.cost == Cost(7) and choice.first_segment == 0 == choice.segment_count


def test_negative_or_non_integer_budgets_and_negative_costs_are_refused_naming_what_is_wrong():
    for choose in (choose_prefer_raw, choose_prefer_summary):
        for bad in (-1, 1.5, True, None):
            with pytest.raises(ValueError, match=f"^budget_bytes must be a non-negative integer, got {bad!r}$"):
                choose(tail=[], segments=[], budget_bytes=bad)
        for bad in (-1, 1.5, False):
            with pytest.raises(ValueError, match=f"^budget_tokens must be a non-negative integer, got {bad!r}$"):
                choose(tail=[], segments=[], budget_bytes=1, budget_tokens=bad)
        with pytest.raises(ValueError, match=r"^tail pair 1 has a negative cost"):
            choose(tail=[Cost(1), Cost(-1)], segments=[], budget_bytes=5)
        with pytest.raises(ValueError, match=r"^tail pair 0 has a negative cost"):
            choose(tail=[Cost(1, -1)], segments=[], budget_bytes=5)
        with pytest.raises(ValueError, match=r"^segment 1's summary has a negative cost"):
            choose(tail=[], segments=[seg(), SegmentCost(Cost(5), Cost(-1))], budget_bytes=5)
        with pytest.raises(ValueError, match=r"^segment 1 has a negative cost"):
            choose(tail=[], segments=[seg(), SegmentCost(Cost(-5))], budget_bytes=5)
        with pytest.raises(ValueError, match=r"^the summary frame has a negative cost"):
            choose(tail=[], segments=[seg(100, 30)], budget_bytes=1000, summary_frame=Cost(-1))
    # The fallback to raw pairs checks each pair it gives.
    with pytest.raises(ValueError, match=r"^segment 0 pair 1 has a negative cost"):
        choose_prefer_summary(tail=[], segments=[SegmentCost(Cost(5), None, pairs=[Cost(6), Cost(-1)])],
                              budget_bytes=5)


def test_segment_form_outside_the_segments_is_an_error():
    choice = raw_choice([seg(), seg()], 1000)
    with pytest.raises(IndexError, match=r"^segment 2 is not in 0\.\.1$"):
        choice.segment_form(2)
    with pytest.raises(IndexError, match=r"^segment -1 is not in 0\.\.1$"):
        choice.segment_form(-1)


# --- prefer=summary: examples ------------------------------------------------------


def test_prefer_summary_gives_every_cheaper_summary_even_with_a_generous_budget():
    choice = summary_choice([seg(100, 30), seg(100, None), seg(100, 30)], 10_000)
    assert forms(choice) == [SUMMARY, RAW, SUMMARY] and choice.cost == Cost(20 + 30 + 100 + 30)


def test_prefer_summary_falls_back_to_raw_pairs_newest_first_and_stops_at_the_first_that_does_not_fit():
    # Segment 1's summary (1000) does not fit: its raw pairs are given newest first, 3 of them fit.
    choice = summary_choice([seg(100, 1), seg(100, 1000)], 20 + 35)
    assert forms(choice) == [OMITTED, PARTIAL] and choice.partial_pairs == 3
    assert choice.cost == Cost(50) and choice.omitted_pairs() == 17 and not choice.complete


def test_prefer_summary_a_fallback_segment_that_fits_whole_lets_older_segments_in():
    choice = summary_choice([seg(100, 5), seg(10, 1000)], 20 + 10 + 5)
    assert forms(choice) == [SUMMARY, RAW] and choice.complete


def test_prefer_summary_never_gives_a_summary_not_cheaper_than_its_raw_pairs():
    choice = summary_choice([seg(100, 100), seg(100, 150)], 10_000)
    assert forms(choice) == [RAW, RAW] and choice.cost == Cost(220)


def test_prefer_summary_charges_the_frame_with_the_first_summary_only():
    choice = summary_choice([seg(100, 30), seg(100, 30)], 10_000, summary_frame=Cost(7))
    assert choice.cost == Cost(20 + 60 + 7)
    # 10 + 7 > 16 left, so the summary falls back to raw pairs (1 byte each).
    choice = summary_choice([seg(10, 10)], 20 + 16, summary_frame=Cost(7))
    assert forms(choice) == [RAW] and choice.cost == Cost(30)


def test_prefer_summary_needs_the_pair_costs_of_a_segment_it_falls_back_on():
    message = r"^segment 0: its pair costs must be given and add up to its raw cost$"
    with pytest.raises(ValueError, match=message):
        summary_choice([SegmentCost(Cost(100), None)], 1000)
    with pytest.raises(ValueError, match=message):
        summary_choice([SegmentCost(Cost(100), None, pairs=[Cost(10)] * 9)], 1000)


def test_prefer_summary_tail_that_does_not_fit_reads_no_segment():
    segments = Recording([seg(100, 1)])
    choice = choose_prefer_summary(tail=tail(5, 30, 10), segments=segments, budget_bytes=15)
    assert choice.first_tail_pair == 2 and segments.read == []


# --- properties ---------------------------------------------------------------------


@st.composite
def histories(draw, max_segments=5):
    m = draw(st.integers(0, max_segments))
    tail_costs = [Cost(draw(st.integers(1, 60)), draw(st.integers(1, 20))) for _ in range(draw(st.integers(0, 4)))]
    segments = []
    for _ in range(m):
        pairs = [Cost(draw(st.integers(1, 40)), draw(st.integers(1, 12))) for _ in range(draw(st.integers(1, 4)))]
        raw = sum(pairs, ZERO)
        summary = None
        if draw(st.booleans()):
            # Cheaper, equal or dearer than raw, in either dimension.
            summary = Cost(draw(st.integers(0, raw.bytes + 20)), draw(st.integers(0, raw.tokens + 5)))
        segments.append(SegmentCost(raw=raw, summary=summary, pairs=pairs))
    budget = draw(st.integers(0, sum(c.bytes for c in tail_costs) + sum(s.raw.bytes for s in segments) + 10))
    tokens = draw(st.none() | st.integers(0, 200))
    frame = Cost(draw(st.sampled_from([0, 0, 3, 25])), draw(st.sampled_from([0, 2])))
    return tail_costs, segments, budget, tokens, frame


def _fits(cost, budget, tokens):
    return cost.bytes <= budget and (tokens is None or cost.tokens <= tokens)


def _cheaper(segment, tokens):
    s = segment.summary
    return s is not None and s.bytes < segment.raw.bytes and (tokens is None or s.tokens < segment.raw.tokens)


def _cost_of(choice: Choice, tail_costs, segments, frame):
    """What the choice's forms cost, recomputed from the inputs."""
    total = sum(tail_costs[choice.first_tail_pair:], ZERO)
    for k, form in enumerate(forms(choice)):
        if form == SUMMARY:
            total += segments[k].summary
        elif form == RAW:
            total += segments[k].raw
        elif form == PARTIAL:
            total += sum(segments[k].pairs[len(segments[k].pairs) - choice.partial_pairs:], ZERO)
    return total + (frame if choice.summaries else ZERO)


def _check_shape(choice: Choice, tail_costs, segments, budget, tokens, frame):
    assert (choice.segment_count, choice.tail_count) == (len(segments), len(tail_costs))
    assert choice.cost == _cost_of(choice, tail_costs, segments, frame)
    assert _fits(choice.cost, budget, tokens)
    f = forms(choice)
    # One unbroken, newest stretch: omitted segments first, at most one partial, then given ones;
    # the tail is cut only when no segment is given.
    given = [x != OMITTED for x in f]
    assert given == sorted(given)
    assert f.count(PARTIAL) <= 1 and (PARTIAL not in f or f.index(PARTIAL) == choice.first_segment - 1)
    if choice.first_tail_pair:
        assert not any(given)
    for k in choice.summaries:
        assert _cheaper(segments[k], tokens)


@settings(max_examples=400, deadline=None)
@given(histories())
def test_prefer_raw_fits_and_is_one_unbroken_newest_stretch(history):
    tail_costs, segments, budget, tokens, frame = history
    choice = choose_prefer_raw(tail=tail_costs, segments=segments, budget_bytes=budget, budget_tokens=tokens,
                               summary_frame=frame)
    _check_shape(choice, tail_costs, segments, budget, tokens, frame)
    assert PARTIAL not in forms(choice)
    # s: S[c..s) in the cheaper form where it has one, S[s..m) raw by choice; s = c when nothing is
    # summarised (and s = m when not even the tail fits: no segment is given).
    assert choice.switch == (max(choice.summaries) + 1 if choice.summaries else choice.first_segment)


@settings(max_examples=400, deadline=None)
@given(histories())
def test_prefer_summary_fits_and_is_one_unbroken_newest_stretch(history):
    tail_costs, segments, budget, tokens, frame = history
    choice = choose_prefer_summary(tail=tail_costs, segments=segments, budget_bytes=budget, budget_tokens=tokens,
                                   summary_frame=frame)
    _check_shape(choice, tail_costs, segments, budget, tokens, frame)


def _all_form_vectors(segments, tokens):
    """Every assignment of omitted / raw / summary (summary only where cheaper)
    whose omitted segments are the oldest ones."""
    options = [[RAW, SUMMARY] if _cheaper(s, tokens) else [RAW] for s in segments]
    m = len(segments)
    for c in range(m + 1):
        for kept in itertools.product(*options[c:]):
            yield c, [OMITTED] * c + list(kept)


def _vector_cost(vector, tail_costs, segments, frame):
    total = sum(tail_costs, ZERO)
    for s, form in zip(segments, vector):
        total += s.summary if form == SUMMARY else s.raw if form == RAW else ZERO
    return total + (frame if SUMMARY in vector else ZERO)


def _respects_age(vector, segments, tokens):
    """No segment that could be a summary is raw while an older one is a summary (seed 002 §8)."""
    seen_raw_by_choice = False
    for s, form in zip(segments, vector):
        if form == RAW and _cheaper(s, tokens):
            seen_raw_by_choice = True
        if form == SUMMARY and seen_raw_by_choice:
            return False
    return True


@settings(max_examples=500, deadline=None)
@given(histories(max_segments=5))
def test_prefer_raw_no_other_choice_covers_more_history_or_with_the_same_coverage_more_raw(history):
    tail_costs, segments, budget, tokens, frame = history
    assume(_fits(sum(tail_costs, ZERO), budget, tokens))  # else only the tail is cut: checked below
    choice = choose_prefer_raw(tail=tail_costs, segments=segments, budget_bytes=budget, budget_tokens=tokens,
                               summary_frame=frame)
    feasible = [(c, v) for c, v in _all_form_vectors(segments, tokens)
                if _fits(_vector_cost(v, tail_costs, segments, frame), budget, tokens)]
    best_c = min(c for c, _ in feasible)  # c = m (tail only) is always feasible here
    # Coverage: no assignment of forms at all, in any order, keeps an older segment.
    assert choice.first_segment == best_c
    # Raw: among assignments that keep as much and respect age, none has more raw segments.
    most_raw = max(v.count(RAW) for c, v in feasible if c == best_c and _respects_age(v, segments, tokens))
    assert forms(choice).count(RAW) == most_raw
    assert _respects_age(forms(choice), segments, tokens)


@settings(max_examples=200, deadline=None)
@given(histories(max_segments=3))
def test_when_the_tail_does_not_fit_both_give_the_most_newest_tail_pairs_that_fit(history):
    tail_costs, segments, budget, tokens, frame = history
    assume(not _fits(sum(tail_costs, ZERO), budget, tokens))
    best = max(n for n in range(len(tail_costs) + 1)
               if _fits(sum(tail_costs[len(tail_costs) - n:], ZERO), budget, tokens))
    for choose in (choose_prefer_raw, choose_prefer_summary):
        choice = choose(tail=tail_costs, segments=segments, budget_bytes=budget, budget_tokens=tokens,
                        summary_frame=frame)
        assert choice.tail_count - choice.first_tail_pair == best
        assert choice.first_segment == len(segments) and choice.summaries == ()


# --- prefer=summary is the rule packing had before prefer existed ------------------


@settings(max_examples=300, deadline=None)
@given(histories(max_segments=5))
def test_prefer_summary_matches_the_walk_it_replaced_when_every_summary_is_cheaper(history):
    from tests.compaction.context.legacy_packing import Segment, Tail, legacy_pack

    tail_costs, segments, budget, tokens, frame = history
    segments = [s if _cheaper(s, tokens) else SegmentCost(s.raw, None, s.pairs) for s in segments]
    choice = choose_prefer_summary(tail=tail_costs, segments=segments, budget_bytes=budget, budget_tokens=tokens,
                                   summary_frame=frame)

    # The same history as the old walk's units, newest first, pairs numbered oldest first.
    sizes = [len(s.pairs) for s in segments]
    starts = [sum(sizes[:k]) for k in range(len(segments))]
    pair_count = sum(sizes) + len(tail_costs)
    units = [Tail(sum(sizes) + i, c.bytes, c.tokens) for i, c in reversed(list(enumerate(tail_costs)))]
    for k in range(len(segments) - 1, -1, -1):
        s, lo = segments[k], starts[k]
        units.append(Segment(lo, lo + sizes[k] - 1, None if s.summary is None else s.summary.bytes,
                             0 if s.summary is None else s.summary.tokens,
                             pairs=[(lo + j, p.bytes, p.tokens) for j, p in reversed(list(enumerate(s.pairs)))]))
    cut, summarised, _, used, used_tokens = legacy_pack(units, budget_bytes=budget, budget_tokens=tokens,
                                                        frame_bytes=frame.bytes, frame_tokens=frame.tokens)

    assert used == choice.cost.bytes
    if tokens is not None:
        assert used_tokens == choice.cost.tokens
    assert cut == pair_count - (choice.tail_count - choice.first_tail_pair) - sum(
        sizes[k] for k in range(choice.first_segment, len(segments))) - choice.partial_pairs
    assert sorted(starts.index(f) for f in summarised) == list(choice.summaries)
