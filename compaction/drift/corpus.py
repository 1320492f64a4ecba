"""Texts of the chain joined for substring search (SPEC §8: a quote must be
a verbatim substring, after whitespace normalisation, of a user message).

Pure. One ``str.find`` over the joined, normalised texts replaces a loop
over every message; a hit maps back to the message it is in. A hit that
spans the joiner (NUL) between two texts is not a hit.
"""

from __future__ import annotations

from bisect import bisect_right

_JOIN = "\x00"


class Corpus:
    """Normalised texts, in chain order, searchable as one string."""

    def __init__(self, texts: list[str]):
        self.texts = texts
        self.joined = _JOIN.join(texts)
        self.starts, at = [], 0
        for text in texts:
            self.starts.append(at)
            at += len(text) + 1

    def extended(self, texts: list[str]) -> "Corpus":
        """A new corpus of these texts and then ``texts`` (this one unchanged)."""
        if not texts:
            return self
        out = Corpus.__new__(Corpus)
        out.texts = self.texts + texts
        tail = _JOIN.join(texts)
        out.joined = self.joined + _JOIN + tail if self.texts else tail
        at = len(self.joined) + 1 if self.texts else 0
        out.starts = list(self.starts)
        for text in texts:
            out.starts.append(at)
            at += len(text) + 1
        return out

    def __contains__(self, words: str) -> bool:
        if _JOIN in words:
            return bool(self.holding(words))
        return bool(words) and words in self.joined

    def holding(self, words: str) -> list[int]:
        """The indices of the texts that hold ``words``, in order."""
        out: list[int] = []
        if not words:
            return out
        pos = self.joined.find(words)
        while pos != -1:
            index = bisect_right(self.starts, pos) - 1
            if pos + len(words) <= self.starts[index] + len(self.texts[index]):
                out.append(index)
                following = self.starts[index + 1] if index + 1 < len(self.starts) else len(self.joined)
            else:
                following = pos + 1  # the hit spans a joiner: not within one text
            pos = self.joined.find(words, following)
        return out

    def closest(self, words: str) -> int | None:
        """The index of the text sharing the longest run of characters with
        ``words`` — at least a third of them, two or more — the earliest on
        ties; None when none shares that much. A text shares a run of ``n``
        characters exactly when it holds one of the ``n``-character slices
        of ``words``, so the longest run is found by halving on ``n`` over
        the joined texts, without comparing message by message."""
        least = max(2, len(words) // 3)
        if not self._shares(words, least):
            return None
        low, high = least, len(words)  # a run of ``low`` is shared; find the longest
        while low < high:
            middle = (low + high + 1) // 2
            if self._shares(words, middle):
                low = middle
            else:
                high = middle - 1
        return min(self.holding(words[start:start + low])[0] for start in range(len(words) - low + 1)
                   if words[start:start + low] in self)

    def _shares(self, words: str, size: int) -> bool:
        return size <= len(words) and any(words[start:start + size] in self for start in range(len(words) - size + 1))
