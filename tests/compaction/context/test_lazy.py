"""The lazy sequences the projection reads newest first — pure, no database."""

import pytest

from compaction.context.lazy import Converted, NewestFirst


def produced_newest_first(n, log):
    for i in range(n - 1, -1, -1):
        log.append(i)
        yield f"item {i}"


def test_newest_first_is_indexed_oldest_first_and_consumed_only_as_far_as_asked():
    log = []
    seq = NewestFirst(5, produced_newest_first(5, log))
    assert len(seq) == 5 and log == []
    assert seq[4] == "item 4" and log == [4]
    assert seq[2] == "item 2" and log == [4, 3, 2] and seq.consumed == 3
    assert seq[3] == "item 3" and log == [4, 3, 2]  # already read: nothing more consumed


def test_newest_first_refuses_indexes_out_of_range_and_a_producer_that_falls_short():
    seq = NewestFirst(2, iter(["b"]))
    with pytest.raises(IndexError, match="^2$"):
        seq[2]
    with pytest.raises(IndexError, match="^-1$"):
        seq[-1]
    assert seq.consumed == 0  # a refused index consumes nothing
    with pytest.raises(ValueError, match="2 items announced, 1 produced"):
        seq[0]
    assert list(NewestFirst(3, iter("cba"))) == ["a", "b", "c"]


def test_converted_converts_each_item_once_when_first_looked_at():
    calls = []

    def convert(k, item):
        calls.append(k)
        return item * 2

    seq = Converted([1, 2, 3], convert)
    assert not seq.looked_at(2)
    assert seq[2] == 6 and seq[2] == 6 and calls == [2] and seq.looked_at(2)
    assert sum(seq) == 12 and calls == [2, 0, 1]


def test_converted_refuses_indexes_out_of_range_and_reads_nothing_for_them():
    class Recording(list):
        def __init__(self, items):
            super().__init__(items)
            self.read = []

        def __getitem__(self, k):
            self.read.append(k)
            return super().__getitem__(k)

    items = Recording([1, 2, 3])
    seq = Converted(items, lambda k, item: item)
    for k in (3, -1, 4):
        with pytest.raises(IndexError, match=f"^{k}$"):
            seq[k]
    assert items.read == [] and not any(seq.looked_at(k) for k in (-1, 3))
