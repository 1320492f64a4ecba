"""Budget packing for the next-run projection (SPEC §6; seed 000 §6 case C;
seed 002 §8). Pure: plain data in, plain data out, no database;
``context.reader`` reads sizes and statuses, hands them here, and fetches
texts only for what this module decides to return.

**What is offered.** ``tail``: the pairs of the raw tail (pairs in no
planned segment), oldest first. ``segments``: the planned segments
``S0 … Sm-1``, oldest first, each with its raw size (known at write time:
``Segment.user_bytes + assistant_bytes``), its usable summary block if any
(``selection``), and why not otherwise. Both may be lazy sequences
(``lazy.NewestFirst``): they are read newest first and only as far as the choice
looks, so nothing older than what can be returned is read.

**Which forms** is ``context.choice``'s rule, one per preference:
``prefer=raw`` (the default) keeps the longest unbroken history and then the
most raw (the smallest ``c``, then the smallest ``s``); ``prefer=summary`` is
the seed 000 rule (every usable summary, falling back to raw pairs newest
first, stopping at the first piece that does not fit). Under either, a
summary is only given when it is strictly cheaper than its raw pairs.

**Told what it did not get** (``omission``). For ``format=openai`` the
caller passes the cost of the one sentence that says how many older pairs
were left out. When the choice leaves anything out, the sentence's largest
possible cost (every pair left out) is reserved and the choice made again
within what remains (and again, reserving more, if that choice's sentence
costs more: after summaries it needs a separator), so the sentence always
fits and the whole never exceeds the budget. If not even the sentence
fits, nothing is given.

**Account**. Every pair index appears exactly once, chronologically, as
``raw``, ``summary`` or ``omitted``. ``reason`` is ``over_budget`` for an
omitted pair (omission only ever happens for lack of room); for a raw pair
of a planned segment whose summary is not usable it says why (``selection``);
it is null otherwise — a raw-tail pair, a summary, or a raw pair whose
usable summary was not chosen (it did not fit, was not cheaper, or the
budget held the raw pairs). ``complete`` is false whenever anything was
omitted.

**What is counted.** For ``format=blocks``: the UTF-8 bytes of every text a
block carries (user texts, assistant texts, summary texts), nothing else —
SPEC §6 exactly. For ``format=openai``: the UTF-8 bytes of every message
content returned, i.e. the texts plus the framing written around summaries
and the omission sentence (``context.formats``); the framing of a block
depends only on its range, generation id, prompt version and pair indices,
so it is known before any text is read. Tokens are the sum of
``count_tokens`` over the same pieces (each text and each framing string
counted on its own); they need texts, so they are counted only for the
pieces the choice looks at — those given and the first that is not.
"""

from __future__ import annotations

from collections.abc import Sequence as SequenceABC
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Sequence, Union

from . import choice as rules
from .budget import Budget
from .choice import Cost, SegmentCost
from .lazy import Converted, NewestFirst
from .selection import OVER_BUDGET, REASONS

RAW = "raw"
SUMMARY = "summary"
OMITTED = "omitted"

PREFER_RAW = "raw"
PREFER_SUMMARY = "summary"
PREFERENCES = (PREFER_RAW, PREFER_SUMMARY)
DEFAULT_PREFER = PREFER_RAW

# A token count known now, or a function that counts it when first needed.
Lazy = Union[int, Callable[[], int]]


def _resolve(value: Lazy | None) -> int:
    if value is None:
        return 0
    return value() if callable(value) else value


@dataclass
class RawPiece:
    """One pair given raw: its user text and assistant answer. ``bytes`` is
    ``None`` for a pair given as part of a whole raw segment, whose size is
    only known together (the segment's)."""

    index: int
    bytes: int | None
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
class SegmentUnit:
    from_pair: int
    to_pair: int
    summary: SummaryPiece | None
    # Why the segment has no usable summary: required when ``summary`` is
    # None, and None when it has one.
    reason: str | None
    # The segment's raw pairs, newest first; a function so they are only read
    # when needed (the prefer=summary fallback, or when ``raw_bytes`` is unknown).
    raw_pairs: Sequence[RawPiece] | Callable[[], Sequence[RawPiece]] = ()
    # All its pairs raw, together; None: the sum of ``raw_pairs``.
    raw_bytes: int | None = None
    raw_tokens: Lazy | None = None

    def raw(self) -> Sequence[RawPiece]:
        return self.raw_pairs() if callable(self.raw_pairs) else self.raw_pairs


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
    # Chronological.
    placed: list[PlacedRaw | PlacedSummary] = field(default_factory=list)
    # Pairs [0, cut) are omitted with over_budget.
    cut: int = 0
    prefer: str = DEFAULT_PREFER
    # Whether the omission sentence (for ``cut`` pairs) is part of what is given.
    told_omitted: bool = False

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


class _Offer:
    """The history as ``choice`` reads it: costs looked up lazily, checked
    for contiguity when first seen."""

    def __init__(self, tail: Sequence[RawPiece], segments: Sequence[SegmentUnit], *, pair_count: int,
                 counting: bool):
        self.tail, self.segments, self.counting = tail, segments, counting
        self.pair_count = pair_count
        self.tail_start = pair_count - len(tail)
        if self.tail_start < 0 or (not len(segments) and self.tail_start):
            raise ValueError(f"{len(tail)} tail pairs and {len(segments)} segments cannot cover {pair_count} pairs")
        self.raw_pairs: dict[int, _OldestFirst] = {}
        self.tail_costs = Converted(tail, self._tail_cost)
        self.segment_costs = Converted(segments, self._segment_cost)

    def tokens(self, value: Lazy | None) -> int:
        """A token count, resolved only under a token budget (counting needs texts)."""
        return _resolve(value) if self.counting else 0

    def _tail_cost(self, i: int, piece: RawPiece) -> Cost:
        if piece.index != self.tail_start + i:
            raise ValueError(f"tail pair {i} must be pair {self.tail_start + i}, got {piece.index}")
        if piece.bytes is None:
            raise ValueError(f"tail pair {piece.index} has no size")
        return Cost(piece.bytes, self.tokens(piece.tokens))

    def _segment_cost(self, k: int, unit: SegmentUnit) -> SegmentCost:
        top = self.tail_start if k == len(self.segments) - 1 else None
        if unit.from_pair > unit.to_pair or (top is not None and unit.to_pair != top - 1):
            raise ValueError(f"segment {k} ({unit.from_pair}-{unit.to_pair}) must end just below pair "
                             f"{self.tail_start}: segments and tail must cover every pair")
        if k == 0 and unit.from_pair != 0:
            raise ValueError(f"the oldest segment must start at pair 0, not {unit.from_pair}")
        # Checked against the newer neighbour, which is always looked at first
        # (the newest segment has none: nothing looks at index m).
        if self.segment_costs.looked_at(k + 1) and self.segments[k + 1].from_pair != unit.to_pair + 1:
            raise ValueError(f"segments {k} and {k + 1} are not contiguous")
        if unit.summary is None and unit.reason not in REASONS:
            raise ValueError(f"segment {unit.from_pair}-{unit.to_pair} has no summary and no valid reason")
        if unit.summary is not None and unit.reason is not None:
            raise ValueError(f"segment {unit.from_pair}-{unit.to_pair} has a usable summary: it needs no reason")
        self.raw_pairs[k] = _OldestFirst(unit)
        pairs = Converted(self.raw_pairs[k], self._pair_cost)
        if unit.raw_bytes is not None:
            raw = Cost(unit.raw_bytes, self.tokens(unit.raw_tokens) if unit.raw_tokens is not None
                       else (sum(p.tokens for p in pairs) if self.counting else 0))
        else:
            raw = sum(pairs, rules.ZERO)
        summary = None
        if unit.summary is not None:
            summary = Cost(unit.summary.bytes, self.tokens(unit.summary.tokens))
        return SegmentCost(raw=raw, summary=summary, pairs=pairs)

    def _pair_cost(self, j: int, piece: RawPiece) -> Cost:
        if piece.bytes is None:
            raise ValueError(f"pair {piece.index} has no size")
        return Cost(piece.bytes, self.tokens(piece.tokens))


class _OldestFirst(SequenceABC):
    """A segment's raw pairs (offered newest first) oldest first, read when first needed."""

    def __init__(self, unit: SegmentUnit):
        self.unit = unit
        self._pairs: list[RawPiece] | None = None

    def pieces(self) -> list[RawPiece]:
        if self._pairs is None:
            newest_first = list(self.unit.raw())
            expected = list(range(self.unit.to_pair, self.unit.from_pair - 1, -1))
            if [p.index for p in newest_first] != expected:
                raise ValueError(f"segment {self.unit.from_pair}-{self.unit.to_pair} must offer its raw pairs "
                                 "newest first")
            self._pairs = newest_first[::-1]
        return self._pairs

    def __len__(self) -> int:
        return self.unit.to_pair - self.unit.from_pair + 1

    def __getitem__(self, j: int):
        return self.pieces()[j]


def _choose(offer: _Offer, budget: Budget, prefer: str, frame: Cost):
    choose = rules.choose_prefer_raw if prefer == PREFER_RAW else rules.choose_prefer_summary
    return choose(tail=offer.tail_costs, segments=offer.segment_costs, budget_bytes=budget.bytes,
                  budget_tokens=budget.tokens, summary_frame=frame)


def _cut(offer: _Offer, c: rules.Choice) -> int:
    """How many of the oldest pairs ``c`` leaves out."""
    if c.first_tail_pair:
        return offer.tail_start + c.first_tail_pair
    if c.partial_pairs:
        return offer.segments[c.first_segment - 1].to_pair + 1 - c.partial_pairs
    if c.first_segment < len(offer.segments):
        return offer.segments[c.first_segment].from_pair
    return offer.tail_start


def _placed(offer: _Offer, c: rules.Choice) -> list[PlacedRaw | PlacedSummary]:
    """What ``c`` gives, chronologically."""
    placed: list[PlacedRaw | PlacedSummary] = []
    if c.partial_pairs:
        unit = offer.segments[c.first_segment - 1]
        offer.segment_costs[c.first_segment - 1]  # noqa: B018 - converted (and so checked) before use
        pieces = offer.raw_pairs[c.first_segment - 1].pieces()
        placed = [PlacedRaw(p, unit.reason) for p in pieces[len(pieces) - c.partial_pairs:]]
    summaries = set(c.summaries)
    # A cut tail (first_tail_pair > 0) comes with no segment given: first_segment is m.
    for k in range(c.first_segment, len(offer.segments)):
        unit = offer.segments[k]
        if k in summaries:
            placed.append(PlacedSummary(unit))
            continue
        placed += [PlacedRaw(RawPiece(i, None), unit.reason) for i in range(unit.from_pair, unit.to_pair + 1)]
    for i in range(c.first_tail_pair, len(offer.tail)):
        placed.append(PlacedRaw(offer.tail[i], None))
    return placed


def _choose_beside_sentence(offer: _Offer, budget: Budget, prefer: str, frame: Cost,
                            sentence: Callable[[int, bool], Cost]):
    """The choice that leaves room for the sentence saying how many pairs it
    left out: ``(choice, cut, the sentence's cost)``, or ``None`` when not
    even the sentence fits. The longest sentence there can be (every pair
    left out) is reserved and the choice made within the rest; if that
    choice's sentence needs more (a separator after summaries), more is
    reserved and it is chosen again. Each round either settles or reserves
    strictly more, so the rounds end within the budget.

    Called only when the whole budget left pairs out; less room never
    covers more (under either preference coverage only grows with the
    budget), so every choice made here leaves some out too."""
    reserve = sentence(offer.pair_count, False)
    while True:
        rest = Budget(budget.bytes - reserve.bytes, None if budget.tokens is None else budget.tokens - reserve.tokens)
        if rest.bytes < 0 or (rest.tokens is not None and rest.tokens < 0):
            return None
        chosen = _choose(offer, rest, prefer, frame)
        cut = _cut(offer, chosen)
        extra = sentence(cut, bool(chosen.summaries))
        if extra.bytes <= reserve.bytes and extra.tokens <= reserve.tokens:
            return chosen, cut, extra
        reserve = Cost(max(reserve.bytes, extra.bytes), max(reserve.tokens, extra.tokens))


def pack(
    tail: Sequence[RawPiece], segments: Sequence[SegmentUnit], budget: Budget, *, pair_count: int,
    prefer: str = DEFAULT_PREFER, summary_frame_bytes: int = 0, summary_frame_tokens: Lazy | None = None,
    omission: Callable[[int, bool], tuple[int, Lazy]] | None = None,
) -> Packing:
    """Place the history (``tail`` and ``segments``, both oldest first, together
    covering pairs ``[0, pair_count)``) within ``budget`` under ``prefer``.
    ``summary_frame_*`` is charged once when any summary is given (the openai
    system message's preamble). ``omission(n, with_summaries)`` is the
    ``(bytes, tokens)`` of the sentence telling that ``n`` older pairs were
    left out, or ``None`` when nothing is to be told."""
    if prefer not in PREFERENCES:
        raise ValueError(f"unknown preference {prefer!r}; use one of: {', '.join(PREFERENCES)}")
    if budget.bytes < 0 or (budget.tokens is not None and budget.tokens < 0):
        raise ValueError("a budget cannot be negative")
    counting = budget.tokens is not None
    offer = _Offer(tail, segments, pair_count=pair_count, counting=counting)
    frame = Cost(summary_frame_bytes, offer.tokens(summary_frame_tokens))

    def sentence(n: int, with_summaries: bool) -> Cost:
        nbytes, ntokens = omission(n, with_summaries)
        return Cost(nbytes, offer.tokens(ntokens))

    chosen = _choose(offer, budget, prefer, frame)
    cut = _cut(offer, chosen)
    told, extra = False, rules.ZERO
    if cut and omission is not None:
        settled = _choose_beside_sentence(offer, budget, prefer, frame, sentence)
        if settled is None:
            # Not even the sentence fits: nothing is given.
            return Packing(budget=budget, pair_count=pair_count, used_tokens=0 if counting else None,
                           cut=pair_count, prefer=prefer)
        (chosen, cut, extra), told = settled, True
    used = chosen.cost + extra
    return Packing(
        budget=budget,
        pair_count=pair_count,
        used_bytes=used.bytes,
        used_tokens=used.tokens if counting else None,
        placed=_placed(offer, chosen),
        cut=cut,
        prefer=prefer,
        told_omitted=told,
    )
