"""Texts of the chain joined for substring search (SPEC §8: a quote must be
a verbatim substring, after whitespace normalisation, of a user message).

Pure. One ``str.find`` over the joined, normalised texts replaces a loop
over every message; a hit maps back to the message it is in. A hit that
spans the joiner (NUL) between two texts is not a hit.

A chain's corpus only grows (``extended``: the same texts, then new ones),
and a search's answer over the first *n* texts stays true of them. So each
corpus remembers its answers — whether words are held, which texts hold
them, which text is closest — with how many texts they were found over,
and an extended corpus starts from a copy of them: asked again, it searches
only the texts added since (``str.find`` from their start). The answers are
the same as a search of every text; only the work differs. The texts, their
offsets and the answers are tuples of strings and numbers, which the garbage
collector stops walking once it has seen them (issue 14).
"""

from __future__ import annotations

from bisect import bisect_right

_JOIN = "\x00"
_REMEMBER = 8192  # answers kept per kind; a full memo starts again empty


def _starts(at: int, texts) -> tuple[int, ...]:
    """Where each of ``texts`` starts when joined from offset ``at`` on."""
    out = []
    for text in texts:
        out.append(at)
        at += len(text) + 1
    return tuple(out)


class Corpus:
    """Normalised texts, in chain order, searchable as one string."""

    def __init__(self, texts: list[str]):
        self.texts = tuple(texts)
        self.joined = _JOIN.join(texts)
        self.starts = _starts(0, texts)
        # words -> (texts searched, answer): see the module doc.
        self._held: dict[str, tuple[int, bool]] = {}
        self._holding: dict[str, tuple[int, tuple[int, ...]]] = {}
        self._closest: dict[str, tuple[int, int | None, int]] = {}

    def extended(self, texts: list[str]) -> "Corpus":
        """A new corpus of these texts and then ``texts`` (this one unchanged)."""
        if not texts:
            return self
        out = Corpus.__new__(Corpus)
        out.texts = self.texts + tuple(texts)
        tail = _JOIN.join(texts)
        out.joined = self.joined + _JOIN + tail if self.texts else tail
        out.starts = self.starts + _starts(len(self.joined) + 1 if self.texts else 0, texts)
        out._held, out._holding, out._closest = dict(self._held), dict(self._holding), dict(self._closest)
        return out

    def _offset(self, count: int) -> int:
        """Where text ``count`` starts in ``joined`` (its end when there is none)."""
        return self.starts[count] if count < len(self.starts) else len(self.joined)

    def __contains__(self, words: str) -> bool:
        if _JOIN in words:
            return bool(self.holding(words))
        if not words:
            return False
        n = len(self.texts)
        known = self._held.get(words)
        if known is not None and (known[1] or known[0] == n):
            return known[1]
        # Searched from the end: words asked for the first time are most often
        # the newest texts' (a note's quotes of its own material), which a
        # search from the start reaches only after every older text.
        found = self.joined.rfind(words, self._offset(known[0]) if known is not None else 0) != -1
        if len(self._held) >= _REMEMBER:
            self._held = {}
        self._held[words] = (n, found)
        return found

    def holding(self, words: str) -> list[int]:
        """The indices of the texts that hold ``words``, in order."""
        if not words:
            return []
        n = len(self.texts)
        known = self._holding.get(words)
        if known is not None and known[0] == n:
            return list(known[1])
        out = (known[1] if known is not None else ()) + self._holding_from(words, known[0] if known is not None else 0)
        if len(self._holding) >= _REMEMBER:
            self._holding = {}
        self._holding[words] = (n, out)
        return list(out)

    def _holding_from(self, words: str, first: int) -> tuple[int, ...]:
        """The indices from ``first`` on of the texts that hold ``words``."""
        out: list[int] = []
        pos = self.joined.find(words, self._offset(first))
        while pos != -1:
            index = bisect_right(self.starts, pos) - 1
            if pos + len(words) <= self.starts[index] + len(self.texts[index]):
                out.append(index)
                following = self.starts[index + 1] if index + 1 < len(self.starts) else len(self.joined)
            else:
                following = pos + 1  # the hit spans a joiner: not within one text
            pos = self.joined.find(words, following)
        return tuple(out)

    def closest(self, words: str) -> int | None:
        """The index of the text sharing the longest run of characters with
        ``words`` — at least a third of them, two or more — the earliest on
        ties; None when none shares that much. A text shares a run of ``n``
        characters exactly when it holds one of the ``n``-character slices
        of ``words``, so the longest run is found by halving on ``n`` over
        the joined texts, without comparing message by message. Asked again
        after texts were added, only those are searched, for a longer run
        than the one found (the earlier text keeps a tie)."""
        n = len(self.texts)
        known = self._closest.get(words)
        if known is not None and known[0] == n:
            return known[1]
        least = max(2, len(words) // 3)
        first, index, length = 0, None, 0
        if known is not None:
            first, index, length = known
        at = self._offset(first)
        found = self._longest(words, max(least, length + 1), at)
        if found:
            index = min(self._first_holding(words[start:start + found], at)
                        for start in range(len(words) - found + 1)
                        if self.joined.find(words[start:start + found], at) != -1)
            length = found
        if len(self._closest) >= _REMEMBER:
            self._closest = {}
        self._closest[words] = (n, index, length)
        return index

    def _longest(self, words: str, least: int, at: int) -> int:
        """The longest run of ``words``, ``least`` characters or more, that
        the texts from offset ``at`` on hold; 0 when none does."""
        if not self._shares(words, least, at):
            return 0
        low, high = least, len(words)  # a run of ``low`` is shared; find the longest
        while low < high:
            middle = (low + high + 1) // 2
            if self._shares(words, middle, at):
                low = middle
            else:
                high = middle - 1
        return low

    def _first_holding(self, words: str, at: int) -> int:
        return bisect_right(self.starts, self.joined.find(words, at)) - 1

    def _shares(self, words: str, size: int, at: int = 0) -> bool:
        # Slices of ``words`` hold no joiner, so a hit is always inside one text.
        find = self.joined.find
        return size <= len(words) and any(find(words[start:start + size], at) != -1
                                          for start in range(len(words) - size + 1))
