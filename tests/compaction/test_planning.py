"""SPEC §5: segment k covers [10k, 10k+9] once there are 10k + 30 pairs."""

import pytest

from compaction.planning import is_valid_range, plan_segments, planned_segment_count


@pytest.mark.parametrize(
    "pairs, expected",
    [(0, 0), (29, 0), (30, 1), (31, 1), (39, 1), (40, 2), (41, 2), (1000, 98)],
)
def test_number_of_planned_segments(pairs, expected):
    assert planned_segment_count(pairs) == expected
    assert len(plan_segments(pairs)) == expected


def test_segment_is_not_planned_until_20_newer_pairs_exist():
    for n in range(0, 200):
        for seg in plan_segments(n):
            assert n - (seg.to_pair + 1) >= 20


def test_segments_are_consecutive_ten_pair_ranges_from_zero():
    plan = plan_segments(1000)
    assert [(s.from_pair, s.to_pair) for s in plan[:3]] == [(0, 9), (10, 19), (20, 29)]
    assert (plan[-1].from_pair, plan[-1].to_pair) == (970, 979)
    assert all(s.number * 10 == s.from_pair for s in plan)


def test_first_segment_at_30_pairs_leaves_pairs_10_to_29_raw():
    assert [(s.from_pair, s.to_pair) for s in plan_segments(30)] == [(0, 9)]


def test_range_validity():
    assert is_valid_range(0, 9) and is_valid_range(20, 29)
    assert not is_valid_range(5, 14)
    assert not is_valid_range(10, 18)
    assert not is_valid_range(10, 20)


def test_negative_pair_count_is_refused():
    with pytest.raises(ValueError, match="^pair_count cannot be negative$"):
        planned_segment_count(-1)
