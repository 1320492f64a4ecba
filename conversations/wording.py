"""Whether a text says a value: one rule for every place that asks (pure).

Case-insensitive; a value that begins or ends with a letter or digit must
not run on into one ("12" is not in "2012", "AA" not in "AAA"). Chinese
needs no boundaries: its words are not separated. The dataset facts are
kept and measured by it (``samples.mentions``); the extractive summariser
asks it whether a fact is stated already (``compaction.extraction``).
"""

from __future__ import annotations

import functools
import re

_ASCII_WORD = re.compile(r"[A-Za-z0-9]")


@functools.lru_cache(maxsize=65536)
def value_pattern(value: str) -> re.Pattern:
    """The pattern that finds ``value`` (non-empty) as a word of a text."""
    head = r"(?<![A-Za-z0-9])" if _ASCII_WORD.match(value[0]) else ""
    tail = r"(?![A-Za-z0-9])" if _ASCII_WORD.match(value[-1]) else ""
    return re.compile(head + re.escape(value) + tail, re.IGNORECASE)
