"""The account's omitted prefix, shared (SPEC §6: the cost of a projection
follows its budget, not the history's length).

A long history projected under a small budget is mostly one omitted prefix
``[0, cut)``. Its entries are the same for every conversation, so they are
built once per process (shared, read-only) together with their JSON
encoding: listing 10,000 omitted pairs then costs a slice, not 10,000 new
dicts and their encoding, and the projection's cost keeps following the
budget rather than the history.
"""

from __future__ import annotations

import threading

from .packing import OMITTED, RAW, SUMMARY, Packing, PlacedRaw
from .selection import OVER_BUDGET


class _Entry(dict):
    """A read-only account entry, shared between responses."""

    def _refuse(self, *args, **kwargs):
        raise TypeError("account entries are shared and read-only; copy one to change it")

    __setitem__ = __delitem__ = update = pop = popitem = clear = setdefault = __ior__ = _refuse


OMITTED_CACHE_MAX = 250_000
_omitted_entries: list[_Entry] = []
_omitted_json_parts: list[str] = []
_omitted_json = ""
_omitted_ends: list[int] = []
_omitted_lock = threading.Lock()


def _omitted_prefix(n: int) -> tuple[list[_Entry], str] | None:
    """Entries and compact JSON (without brackets) for omitted pairs ``[0, n)``,
    or ``None`` if ``n`` is beyond what is worth caching."""
    global _omitted_json
    if n > OMITTED_CACHE_MAX:
        return None
    if n > len(_omitted_entries):
        with _omitted_lock:
            have = len(_omitted_entries)
            if n > have:
                target = min(OMITTED_CACHE_MAX, max(n, 2 * have, 1024))
                new = [_Entry({"index": i, "as": OMITTED, "reason": OVER_BUDGET}) for i in range(have, target)]
                parts = [f'{{"index":{i},"as":"{OMITTED}","reason":"{OVER_BUDGET}"}}' for i in range(have, target)]
                ends = list(_omitted_ends)
                position = len(_omitted_json)
                for part in parts:
                    position += len(part) + (1 if position else 0)
                    ends.append(position)
                text = _omitted_json + ("," if _omitted_json else "") + ",".join(parts)
                # Publish the text before the entries: readers check the entries' length.
                _omitted_json = text
                _omitted_ends[:] = ends
                _omitted_entries.extend(new)
    return _omitted_entries[:n], (_omitted_json[: _omitted_ends[n - 1]] if n else "")


class Account(list):
    """Every pair's ``{"index", "as", "reason"}``, chronologically. The first
    ``omitted`` entries are the shared omitted prefix; ``omitted_json`` is
    their compact JSON (no brackets) when cached, for renderers to splice."""

    omitted: int = 0
    omitted_json: str | None = None


def account_entries(p: Packing) -> Account:
    cached = _omitted_prefix(p.cut)
    if cached is not None:
        account = Account(cached[0])
        account.omitted_json = cached[1]
    else:
        account = Account({"index": i, "as": OMITTED, "reason": OVER_BUDGET} for i in range(p.cut))
    account.omitted = p.cut
    for placed in p.placed:
        if isinstance(placed, PlacedRaw):
            account.append({"index": placed.piece.index, "as": RAW, "reason": placed.reason})
        else:
            account.extend(
                {"index": i, "as": SUMMARY, "reason": None} for i in range(placed.unit.from_pair, placed.unit.to_pair + 1)
            )
    return account
