"""Exact cl100k token counts of ASCII text without tiktoken's own pass
(issue 15: tiktoken was 302M of a cold 5,000-message assembly's 511M
instructions).

cl100k's byte-pair merges run inside the pieces its pre-tokenizer cuts the
text into, so a text's count is the sum of its pieces' counts, and a piece
counts the same wherever it stands. Two ways to cut ASCII text, both exact:

- **words**: a space that follows a character other than whitespace always
  starts a piece (no alternative of the pattern takes a space after a letter,
  digit or mark into the piece before it; the space with what follows it is
  matched from there on as if the text began there, and the word before it
  ends in a character other than whitespace, where no look-ahead or
  end-of-text test can tell it from the text's end). So a text is its first
  word plus, for every other word, the count of ``" " + word``, cutting at
  those spaces only: ``str.split`` in C when every space is one (no ``"  "``,
  no ``"\n "``, …), else a split at the spaces after something else;
- **pieces**: a word not in its table is cut with the pre-tokenizer's own
  pattern written in ``re``'s terms (``PIECES``) and each piece looked up.

A word not in its table is one token when it (with its space) is a string
of the vocabulary, else counted from its pieces (a word is a run of whole
pieces); a piece not in its table is one token when it is a string of the
vocabulary (tiktoken looks a whole piece up before any merge), else counted
by ``encode_ordinary`` (a piece cut again is itself); each is kept when
short. The vocabulary's ASCII strings (``_ONE_TOKEN``, 95,222 of cl100k's
100,256) are read once per process with tiktoken's public
``token_byte_values`` (about 30 ms, 9.5 MB here) and are static: what
tiktoken itself loads at start, not a count of any text. Every one of them
is a single piece (tested), which is what lets a word be looked up whole.
That spares the cut for a quarter of a cold run's new words, and
``encode_single_token`` (whose ``KeyError`` was most of a miss's cost) for
every new piece: the cold 5,000-message assembly 381.7M → 366.0M
instructions (callgrind).

The tables of counts are bounded (a full one starts over) and hold only
strings and integers, which the garbage collector does not walk. ``clear``
empties them (the benchmark's cold runs start empty); the vocabulary stays.
"""

from __future__ import annotations

import re

# The pre-tokenizer (tiktoken's cl100k ``pat_str``) for ASCII text: there
# ``\p{L}`` is ``[A-Za-z]`` and ``\p{N}`` is ``[0-9]``; Rust's ``\s`` (Unicode
# White_Space) is ``[\t-\r ]`` — not ``re``'s ``\s``, which also takes
# \x1c-\x1f — and its ``$`` is ``\Z``. The same alternatives in the same
# order, possessive where tiktoken's are.
_WS = r"\t-\r "
PIECES = re.compile(
    r"'(?i:[sdmt]|ll|ve|re)"
    r"|[^\r\nA-Za-z0-9]?+[A-Za-z]++"
    r"|[0-9]{1,3}+"
    rf"| ?[^{_WS}A-Za-z0-9]++[\r\n]*+"
    rf"|[{_WS}]++\Z"
    rf"|[{_WS}]*[\r\n]"
    rf"|[{_WS}]+(?![^{_WS}])"
    rf"|[{_WS}]"
)
# A space after whitespace need not start a piece (``"\n \n"`` is one
# piece, ``"  x"`` is ``" "``, ``" x"``): a text holding one is cut only at
# the spaces that follow something else (``_WORD_SPACE``, the space first so
# that ``re`` scans for it; the look-behind sees the character before it),
# its words keeping the other spaces; any other text at every space.
_SPACE_AFTER_WHITESPACE = ("  ", "\n ", "\t ", "\r ", "\x0b ", "\x0c ")
_WORD_SPACE = re.compile(rf" (?<=[^{_WS}] )")
# Each two-character search stops at every space of the text, where a search
# for one character is a ``memchr``, and most texts hold no tab, carriage
# return or form feed at all: each mark but ``"  "`` is looked for only where
# its whitespace is (the cold assembly's texts 9.4M → 3.7M instructions).
_OTHER_WHITESPACE_SPACE = tuple((mark[0], mark) for mark in _SPACE_AFTER_WHITESPACE if mark != "  ")

KEPT_CHARS = 40  # longer words and pieces are counted, not kept
TABLE_MAX = 50_000  # entries per table


class _Pieces(dict):
    """Token counts of pieces, filled on first use (bounded)."""

    encoding = None  # tiktoken's Encoding, set by ``ascii_tokens``

    def __missing__(self, piece: str) -> int:
        tokens = 1 if piece in _ONE_TOKEN else len(self.encoding.encode_ordinary(piece))
        if len(piece) <= KEPT_CHARS:  # (kept inline: a call per miss costs as much as the lookup)
            if len(self) >= TABLE_MAX:
                self.clear()
            self[piece] = tokens
        return tokens


class _Words(dict):
    """Token counts of ``prefix + word``, each from the vocabulary or its
    pieces (bounded)."""

    def __init__(self, prefix: str):
        super().__init__()
        self.prefix = prefix

    def __missing__(self, word: str) -> int:
        text = self.prefix + word
        tokens = 1 if text in _ONE_TOKEN else sum(map(_PIECE.__getitem__, PIECES.findall(text)))
        if len(word) <= KEPT_CHARS:
            if len(self) >= TABLE_MAX:
                self.clear()
            self[word] = tokens
        return tokens


_PIECE = _Pieces()
_FIRST = _Words("")  # a text's first word
_SPACED = _Words(" ")  # every other word, with the space before it


_ONE_TOKEN: frozenset[str] = frozenset()  # the vocabulary's ASCII strings, each one token


def load(encoding) -> None:
    """Read the vocabulary's ASCII strings of ``encoding`` (once per process:
    ``ascii_tokens`` does it on first use, ``tokens.load`` at start)."""
    global _ONE_TOKEN
    _ONE_TOKEN = frozenset(b.decode("ascii") for b in encoding.token_byte_values() if b.isascii())
    _PIECE.encoding = encoding


def ascii_tokens(text: str, encoding) -> int:
    """The exact count of ASCII ``text`` (``encoding`` is tiktoken's, for
    the pieces the table does not hold yet)."""
    if _PIECE.encoding is not encoding:
        load(encoding)
    if "  " in text:
        words = _WORD_SPACE.split(text)
    else:
        for char, mark in _OTHER_WHITESPACE_SPACE:
            if char in text and mark in text:
                words = _WORD_SPACE.split(text)
                break
        else:
            words = text.split(" ")
    # (the list is the split's own: taking its first word out moves a row of
    # pointers, where ``islice`` would step through every word once more)
    return _FIRST[words.pop(0)] + sum(map(_SPACED.__getitem__, words))


def clear() -> None:
    """Forget every count kept (the assembly benchmark's cold runs); the
    vocabulary, which no text taught, stays."""
    _PIECE.clear()
    _FIRST.clear()
    _SPACED.clear()


def kept() -> int:
    """How many words and pieces the tables hold."""
    return len(_PIECE) + len(_FIRST) + len(_SPACED)
