"""Sequences the projection reads newest first and only as far as it asks
(SPEC §6: a projection's cost follows its budget, not the history). Pure.

``NewestFirst`` turns items produced newest first (a reader's chunked
reads) into a sequence indexed oldest first, consuming the producer only
up to the oldest index asked for. ``Converted`` shows a sequence through a
conversion made once per item, when the item is first looked at.
"""

from __future__ import annotations

from collections.abc import Sequence as SequenceABC
from typing import Callable, Iterable, Sequence


class NewestFirst(SequenceABC):
    """A sequence indexed oldest first over items produced newest first,
    consumed only as far as an index asks: ``items`` yields item
    ``count - 1`` first."""

    def __init__(self, count: int, items: Iterable):
        self._count = count
        self._items = iter(items)
        self._seen: list = []

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, k: int):
        if not isinstance(k, int) or not 0 <= k < self._count:
            raise IndexError(k)
        position = self._count - 1 - k
        while len(self._seen) <= position:
            try:
                self._seen.append(next(self._items))
            except StopIteration:
                raise ValueError(f"{self._count} items announced, {len(self._seen)} produced") from None
        return self._seen[position]

    @property
    def consumed(self) -> int:
        return len(self._seen)


class Converted(SequenceABC):
    """``items`` seen through ``convert(k, item)``, each converted once, when first looked at."""

    def __init__(self, items: Sequence, convert: Callable[[int, object], object]):
        self._items = items
        self._convert = convert
        self._cache: dict[int, object] = {}

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, k: int):
        if not isinstance(k, int) or not 0 <= k < len(self._items):
            raise IndexError(k)
        if k not in self._cache:
            self._cache[k] = self._convert(k, self._items[k])
        return self._cache[k]

    def looked_at(self, k: int) -> bool:
        """Whether item ``k`` was converted already (nothing is read to say so)."""
        return k in self._cache
