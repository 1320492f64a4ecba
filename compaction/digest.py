"""The source digest (SPEC §5, seed 000 §4).

Pure and exact, so anyone can recompute it: SHA-256, lowercase hex, of the
UTF-8 bytes of ``json.dumps(pairs, ensure_ascii=False, sort_keys=True,
separators=(",", ":"))`` where ``pairs`` lists, in pair order,
``{"index": i, "user": {"id", "text"}, "assistant": {"id", "text"}}`` with
ids and texts exactly as stored. It covers user text as well as assistant
text, so a summary is tied to the whole exchange even though the summariser
only ever sees the assistant side.
"""

from __future__ import annotations

import hashlib
import json
from typing import Iterable, Mapping


def digest_input(index: int, user_id: str, user_text: str, assistant_id: str, assistant_text: str) -> dict:
    return {
        "index": index,
        "user": {"id": user_id, "text": user_text},
        "assistant": {"id": assistant_id, "text": assistant_text},
    }


def source_digest(pairs: Iterable[Mapping]) -> str:
    payload = json.dumps(list(pairs), ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def range_digest(pairs: Mapping[int, tuple[str, str, str, str]], lo: int, hi: int) -> tuple[str, list[str]]:
    """The digest over pairs ``[lo, hi]`` of ``pairs`` (index -> user id,
    user text, assistant id, assistant text, as stored) and their message
    ids; ``""`` and no ids when one of them is not paired any more."""
    if any(i not in pairs for i in range(lo, hi + 1)):
        return "", []
    members = [(i, *pairs[i]) for i in range(lo, hi + 1)]
    return (source_digest(digest_input(i, uid, utext, aid, atext) for i, uid, utext, aid, atext in members),
            [x for _, uid, _, aid, _ in members for x in (uid, aid)])
