"""Budget packing for the next-run projection (SPEC §6; seed 000 §6 case C;
seed 002 §8). Pure: plain data in, plain data out, no database;
``context.reader`` reads sizes and statuses, hands them here, and fetches
texts only for what this module decides to return.

**Packing** (``pack``). Units are offered newest first: the raw tail (pairs
never planned, given raw with reason ``null``), then planned segments, newest
first. A segment with a usable summary is offered as one summary block (its
original user messages plus the assistant-history summary); if the block
does not fit, the segment's raw pairs are offered instead, newest first, each
with reason ``over_budget``. A segment without a usable summary offers its raw
pairs with the reason above. A piece fits when the bytes (and, if a token
budget is given, the tokens) used so far plus the piece's stay within the
budget; bytes are checked first, so tokens — which need the text — are only
counted for pieces that already fit by bytes.

The walk **stops at the first piece that does not fit**; that pair and every
older pair are omitted with ``over_budget``. So a projection is always one
unbroken, newest stretch of history: the model never reads older history
across a silent hole, and the cost of a projection follows the budget —
nothing older than the cut is read (seed 000 §6 case C: "older history may
not fit into this request").

**Account**. Every pair index appears exactly once, chronologically, as
``raw``, ``summary`` or ``omitted``. ``reason`` is ``null`` for a pair given
in its best available form (a summary; a raw-tail pair; never anything
else), otherwise it says why the pair is raw rather than summarised, or why
it is omitted (always ``over_budget``: omission only ever happens because the
budget ran out before the pair was reached). ``complete`` is false whenever
anything was omitted.

**What is counted.** For ``format=blocks``: the UTF-8 bytes of every text a
block carries (user texts, assistant texts, summary texts), nothing else —
SPEC §6 exactly. For ``format=openai``: the UTF-8 bytes of every message
content returned, i.e. the texts plus the framing this module writes around
summaries (``context.formats``); the framing of a block depends only on its
range, generation id, prompt version and pair indices, so it is known before
any text is read. Tokens are the sum of ``count_tokens`` over the same pieces
(each text and each framing string counted on its own); the per-message
overhead of the Chat Completions wire format is not counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Sequence, Union

from .budget import Budget
from .selection import OVER_BUDGET, REASONS

RAW = "raw"
SUMMARY = "summary"
OMITTED = "omitted"

# A token count known now, or a function that counts it when first needed.
Lazy = Union[int, Callable[[], int]]


def _resolve(value: Lazy | None) -> int:
    if value is None:
        return 0
    return value() if callable(value) else value



@dataclass
class RawPiece:
    """One pair given raw: its user text and assistant answer."""

    index: int
    bytes: int
    tokens: Lazy | None = None


@dataclass
class SummaryPiece:
    """One segment given as its original user messages plus the summary.
    ``bytes`` / ``tokens`` cover everything the block carries (and, for
    ``format=openai``, the block's framing)."""

    generation: int
    prompt_version: str
    source_digest: str
    bytes: int
    tokens: Lazy | None = None


@dataclass
class TailUnit:
    """A pair of the raw tail (never planned): always offered raw."""

    pair: RawPiece


@dataclass
class SegmentUnit:
    from_pair: int
    to_pair: int
    summary: SummaryPiece | None
    # Why the segment has no usable summary (required when ``summary`` is None).
    reason: str | None
    # The segment's raw pairs, newest first; a function so they are only read
    # when the summary is missing or does not fit.
    raw_pairs: Sequence[RawPiece] | Callable[[], Sequence[RawPiece]] = ()

    def raw(self) -> Sequence[RawPiece]:
        return self.raw_pairs() if callable(self.raw_pairs) else self.raw_pairs


Unit = Union[TailUnit, SegmentUnit]


@dataclass
class PlacedRaw:
    piece: RawPiece
    reason: str | None


@dataclass
class PlacedSummary:
    unit: SegmentUnit


@dataclass
class PairAccount:
    index: int
    as_: str
    reason: str | None


@dataclass
class Packing:
    budget: Budget
    pair_count: int
    used_bytes: int = 0
    used_tokens: int | None = None
    # Chronological once ``pack`` returns.
    placed: list[PlacedRaw | PlacedSummary] = field(default_factory=list)
    # Pairs [0, cut) are omitted with over_budget.
    cut: int = 0

    @property
    def complete(self) -> bool:
        return self.cut == 0

    def summaries(self) -> list[SegmentUnit]:
        return [p.unit for p in self.placed if isinstance(p, PlacedSummary)]

    def raw_pieces(self) -> list[PlacedRaw]:
        return [p for p in self.placed if isinstance(p, PlacedRaw)]

    def account(self) -> Iterator[PairAccount]:
        """Every pair index once, chronologically; omitted ranges are generated
        arithmetically, nothing is read for them."""
        for i in range(self.cut):
            yield PairAccount(i, OMITTED, OVER_BUDGET)
        for p in self.placed:
            if isinstance(p, PlacedRaw):
                yield PairAccount(p.piece.index, RAW, p.reason)
            else:
                for i in range(p.unit.from_pair, p.unit.to_pair + 1):
                    yield PairAccount(i, SUMMARY, None)

    def counts(self) -> dict[tuple[str, str | None], int]:
        """How many pairs were given in each form for each reason."""
        out: dict[tuple[str, str | None], int] = {}
        if self.cut:
            out[(OMITTED, OVER_BUDGET)] = self.cut
        for p in self.placed:
            if isinstance(p, PlacedRaw):
                key, n = (RAW, p.reason), 1
            else:
                key, n = (SUMMARY, None), p.unit.to_pair - p.unit.from_pair + 1
            out[key] = out.get(key, 0) + n
        return out


class _Walk:
    def __init__(self, budget: Budget, frame_bytes: int, frame_tokens: Lazy | None):
        self.budget = budget
        self.bytes = 0
        self.tokens = 0
        self.frame_bytes = frame_bytes
        self.frame_tokens = frame_tokens
        self.framed = False

    def take(self, nbytes: int, ntokens: Lazy | None, *, summary: bool = False) -> bool:
        extra_bytes = self.frame_bytes if summary and not self.framed else 0
        if self.bytes + nbytes + extra_bytes > self.budget.bytes:
            return False
        add_tokens = 0
        if self.budget.tokens is not None:
            add_tokens = _resolve(ntokens)
            if summary and not self.framed:
                add_tokens += _resolve(self.frame_tokens)
            if self.tokens + add_tokens > self.budget.tokens:
                return False
        self.bytes += nbytes + extra_bytes
        self.tokens += add_tokens
        if summary:
            self.framed = True
        return True


def pack(
    units: Iterable[Unit], budget: Budget, *, pair_count: int,
    summary_frame_bytes: int = 0, summary_frame_tokens: Lazy | None = None,
) -> Packing:
    """Place ``units`` (newest first, together covering pairs ``[0,
    pair_count)``) within ``budget``. ``summary_frame_*`` is charged once, with
    the first summary placed (the openai system message's preamble)."""
    if budget.bytes < 0 or (budget.tokens is not None and budget.tokens < 0):
        raise ValueError("a budget cannot be negative")
    walk = _Walk(budget, summary_frame_bytes, summary_frame_tokens)
    placed: list[PlacedRaw | PlacedSummary] = []
    cut = 0
    expected_top = pair_count  # the next unit must end just below this

    def stop_at(index: int) -> None:
        nonlocal cut
        cut = index + 1

    for unit in units:
        if isinstance(unit, TailUnit):
            if unit.pair.index != expected_top - 1:
                raise ValueError(f"units must be contiguous, newest first: got pair {unit.pair.index}, expected {expected_top - 1}")
            if not walk.take(unit.pair.bytes, unit.pair.tokens):
                stop_at(unit.pair.index)
                break
            placed.append(PlacedRaw(unit.pair, None))
            expected_top = unit.pair.index
            continue
        if unit.to_pair != expected_top - 1:
            raise ValueError(f"units must be contiguous, newest first: got segment ending {unit.to_pair}, expected {expected_top - 1}")
        if unit.summary is None and unit.reason not in REASONS:
            raise ValueError(f"segment {unit.from_pair}-{unit.to_pair} has no summary and no valid reason")
        if unit.summary is not None and walk.take(unit.summary.bytes, unit.summary.tokens, summary=True):
            placed.append(PlacedSummary(unit))
            expected_top = unit.from_pair
            continue
        reason = OVER_BUDGET if unit.summary is not None else unit.reason
        stopped = False
        raws = list(unit.raw())
        if [p.index for p in raws] != list(range(unit.to_pair, unit.from_pair - 1, -1)):
            raise ValueError(f"segment {unit.from_pair}-{unit.to_pair} must offer its raw pairs newest first")
        for piece in raws:
            if not walk.take(piece.bytes, piece.tokens):
                stop_at(piece.index)
                stopped = True
                break
            placed.append(PlacedRaw(piece, reason))
        if stopped:
            break
        expected_top = unit.from_pair
    else:
        if expected_top != 0:
            raise ValueError(f"units end at pair {expected_top}, not 0: they must cover every pair")

    placed.reverse()
    return Packing(
        budget=budget,
        pair_count=pair_count,
        used_bytes=walk.bytes,
        used_tokens=walk.tokens if budget.tokens is not None else None,
        placed=placed,
        cut=cut,
    )
