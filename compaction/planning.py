"""The default segment plan (SPEC §5, seed 000 §3).

Pure. Segment ``k`` covers pairs ``[10k, 10k+9]`` and is a candidate once the
conversation has at least ``10k + 30`` pairs, so at least 20 newer pairs always
stay raw. With ``N`` pairs there are ``max(0, (N - 20) // 10)`` candidates.
"""

from __future__ import annotations

from dataclasses import dataclass

SEGMENT_SIZE = 10
RAW_TAIL_MIN = 20


@dataclass(frozen=True)
class PlannedRange:
    number: int
    from_pair: int
    to_pair: int


def planned_segment_count(pair_count: int) -> int:
    if pair_count < 0:
        raise ValueError("pair_count cannot be negative")
    return max(0, (pair_count - RAW_TAIL_MIN) // SEGMENT_SIZE)


def plan_segments(pair_count: int) -> list[PlannedRange]:
    return [
        PlannedRange(number=k, from_pair=k * SEGMENT_SIZE, to_pair=k * SEGMENT_SIZE + SEGMENT_SIZE - 1)
        for k in range(planned_segment_count(pair_count))
    ]


def is_valid_range(from_pair: int, to_pair: int) -> bool:
    """A range may be claimed only if it starts on a multiple of 10 and holds 10 pairs."""
    return from_pair >= 0 and from_pair % SEGMENT_SIZE == 0 and to_pair - from_pair + 1 == SEGMENT_SIZE
