"""The seed 000 packing walk as it was before ``prefer`` existed — kept here,
in the tests only, as the oracle that ``prefer=summary`` must reproduce
(issue 11: "prefer=summary reproduces the old behaviour").

Units newest first: tail pairs, then segments; a segment's summary when it
fits, else its raw pairs newest first; the first piece that does not fit
ends the walk. Returns ``(cut, summarised segment starts, raw pair indices,
used bytes, used tokens)``. The one change SPEC §6 made to it, that a
summary not cheaper than its raw pairs is never given, is left to the
caller (it offers only cheaper summaries)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Tail:
    index: int
    bytes: int
    tokens: int = 0


@dataclass
class Segment:
    from_pair: int
    to_pair: int
    summary_bytes: int | None
    summary_tokens: int = 0
    # (index, bytes, tokens), newest first
    pairs: list[tuple[int, int, int]] = field(default_factory=list)


def legacy_pack(units, *, budget_bytes, budget_tokens=None, frame_bytes=0, frame_tokens=0):
    used_b = used_t = 0
    framed = False
    summaries, raws = [], []

    def take(nb, nt, summary=False):
        nonlocal used_b, used_t, framed
        eb = frame_bytes if summary and not framed else 0
        et = frame_tokens if summary and not framed else 0
        if used_b + nb + eb > budget_bytes:
            return False
        if budget_tokens is not None and used_t + nt + et > budget_tokens:
            return False
        used_b += nb + eb
        used_t += nt + et
        framed = framed or summary
        return True

    for unit in units:
        if isinstance(unit, Tail):
            if not take(unit.bytes, unit.tokens):
                return unit.index + 1, summaries, raws, used_b, used_t
            raws.append(unit.index)
            continue
        if unit.summary_bytes is not None and take(unit.summary_bytes, unit.summary_tokens, summary=True):
            summaries.append(unit.from_pair)
            continue
        for index, nb, nt in unit.pairs:
            if not take(nb, nt):
                return index + 1, summaries, raws, used_b, used_t
            raws.append(index)
    return 0, summaries, raws, used_b, used_t
