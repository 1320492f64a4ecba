"""What every dataset converter shares: a deterministic clock, and
consecutive dialogues joined into conversations."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Iterator

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)


def timestamp(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def chunks(items: list, size: int) -> Iterator[list]:
    if size < 1:
        raise ValueError(f"per_conversation must be at least 1, got {size}")
    for start in range(0, len(items), size):
        yield items[start : start + size]


def join_dialogues(dialogues: list[tuple[str, dict]], min_pairs: int, pair_count) -> list[list[tuple[str, dict]]]:
    """Consecutive dialogues, as few per group as make ``min_pairs`` pairs;
    a remainder too short for a group of its own joins the last group (a
    file with fewer than ``min_pairs`` pairs in all gives none)."""
    if min_pairs < 1:
        raise ValueError(f"min_pairs must be at least 1, got {min_pairs}")
    groups: list[list[tuple[str, dict]]] = []
    current: list[tuple[str, dict]] = []
    pairs = 0
    for item in dialogues:
        current.append(item)
        pairs += pair_count(item[1])
        if pairs >= min_pairs:
            groups.append(current)
            current, pairs = [], 0
    if current and groups:
        groups[-1].extend(current)
    return groups
