"""Texts of the chain joined for substring search (SPEC §8: a quote must be
a verbatim substring, after whitespace normalisation, of a user message).

Pure. One ``str.find`` over the joined, normalised texts replaces a loop
over every message; a hit maps back to the message it is in. The joiner
(NUL) is never part of what is searched for, so no hit spans two messages.
"""

from __future__ import annotations

import difflib
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

    def __contains__(self, words: str) -> bool:
        return bool(words) and words in self.joined

    def holding(self, words: str) -> list[int]:
        """The indices of the texts that hold ``words``, in order."""
        out: list[int] = []
        if not words:
            return out
        pos = self.joined.find(words)
        while pos != -1:
            index = bisect_right(self.starts, pos) - 1
            out.append(index)
            following = self.starts[index + 1] if index + 1 < len(self.starts) else len(self.joined)
            pos = self.joined.find(words, following)
        return out

    def closest(self, words: str) -> int | None:
        """The index of the text sharing the longest run of characters with
        ``words`` — at least a third of them, two or more — the earliest on
        ties; None when none shares that much. Only texts holding some run
        of that minimum length can qualify, so only they are measured."""
        least = max(2, len(words) // 3)
        if len(words) < least:
            return None
        candidates = sorted({i for start in range(len(words) - least + 1)
                             for i in self.holding(words[start:start + least])})
        best, best_size = None, least
        for index in candidates:
            text = self.texts[index]
            size = difflib.SequenceMatcher(None, words, text, autojunk=False).find_longest_match(
                0, len(words), 0, len(text)).size
            if size > best_size or (best is None and size == best_size):
                best, best_size = index, size
        return best
