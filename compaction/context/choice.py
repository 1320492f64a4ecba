"""Which form each piece of history takes in the next-run projection
(SPEC §6 "Packing"; seed 000 §6 case C; seed 002 §8).

Pure: costs in, a choice out, no database and no text. The projection reads
sizes, asks here what to give, and fetches texts only for what is given.

**Inputs.** Every cost is a ``Cost(bytes, tokens)``; tokens only matter when
a token budget is given. ``tail`` holds the raw tail's pairs (pairs in no
planned segment), oldest first. ``segments`` holds the planned segments
``S0 … Sm-1``, oldest first, each with the cost of its pairs raw together,
the cost of its summary block (``None`` when it has no usable summary), and,
for the ``prefer=summary`` fallback only, each pair's raw cost.
``summary_frame`` is charged once when any summary is given (the
``format=openai`` preamble).

**Never a summary that costs more than its source** (SPEC §6 "Usable
summary"). A summary counts as the segment's cheaper form only when it is
strictly cheaper than the segment's raw pairs in every budgeted dimension
(bytes; and tokens when a token budget is given). Otherwise the segment is
given raw, under either preference.

**prefer=raw** (the default) — fidelity is spent only where the budget forces
it, oldest first (seed 002 §8: fidelity falls with age). The raw tail is
given raw. Of the segments, choose the smallest ``c`` (the longest unbroken
history), then the smallest ``s ≥ c`` (the most raw), such that the tail,
``S[c..s)`` each in its cheaper form and ``S[s..m)`` raw fit together;
``S[0..c)`` is omitted. If even the raw tail does not fit, its newest pairs
that fit are given and everything older is omitted. So a generous budget
gives the whole history raw, and no segment that could have been summarised
is raw while an older one is a summary.

Why two sums suffice: for a fixed ``c`` the cost of ``(c, s)`` is the all-raw
cost while ``S[c..s)`` holds no summary, and at least the all-cheaper cost
(``s = m``) once it does; so ``c`` can be kept exactly when one of those two
fits. Both only grow as ``c`` moves older, so walking the segments newest
first and stopping at the first ``c`` that fails finds the smallest ``c``,
and one more pass over ``S[c..m)`` finds ``s``. Nothing older than ``S[c-1]``
is read: pass a lazy sequence and the reads follow the budget, not the
history (issue 4's target: a projection's cost follows its budget).

**prefer=summary** — the seed 000 rule, a stable, cache-friendly prefix: the
tail newest first, then the segments newest first, each as its summary when
it has a cheaper one and it fits, else its raw pairs newest first; the first
piece that does not fit ends the walk, and it and everything older are
omitted. This is what ``packing.pack`` does, plus the cheaper-only rule.

Either way the result is one unbroken, newest stretch of history and its
cost never exceeds the budget.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

SUMMARY = "summary"
RAW = "raw"
PARTIAL = "partial"  # prefer=summary only: the segment's newest pairs raw, its older ones omitted
OMITTED = "omitted"


@dataclass(frozen=True, slots=True)
class Cost:
    bytes: int
    tokens: int = 0

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.bytes + other.bytes, self.tokens + other.tokens)

    def __sub__(self, other: Cost) -> Cost:
        return Cost(self.bytes - other.bytes, self.tokens - other.tokens)


ZERO = Cost(0, 0)


@dataclass(frozen=True, slots=True)
class SegmentCost:
    raw: Cost  # all its pairs raw, together
    summary: Cost | None = None  # its summary block; None when it has no usable summary
    pairs: Sequence[Cost] = ()  # each pair raw, oldest first; read only by the prefer=summary fallback


@dataclass(frozen=True)
class Choice:
    """What is given. Segments ``[first_segment, segment_count)`` are given
    whole (those in ``summaries`` as their summary, the others raw); under
    ``prefer=summary`` the newest ``partial_pairs`` pairs of segment
    ``first_segment - 1`` are given raw too. Tail pairs
    ``[first_tail_pair, tail_count)`` are given; ``first_tail_pair > 0``
    only when no segment is given at all."""

    segment_count: int
    tail_count: int
    first_segment: int
    summaries: tuple[int, ...]
    cost: Cost
    partial_pairs: int = 0
    first_tail_pair: int = 0
    switch: int | None = None  # prefer=raw: s, the oldest segment given raw by choice

    @property
    def complete(self) -> bool:
        return self.first_segment == 0 and self.first_tail_pair == 0

    def segment_form(self, k: int) -> str:
        if not 0 <= k < self.segment_count:
            raise IndexError(f"segment {k} is not in 0..{self.segment_count - 1}")
        if k >= self.first_segment:
            return SUMMARY if k in self.summaries else RAW
        if k == self.first_segment - 1 and self.partial_pairs:
            return PARTIAL
        return OMITTED

    def omitted_pairs(self, segment_size: int = 10) -> int:
        """How many of the oldest pairs are left out, with segments of ``segment_size`` pairs."""
        if self.first_tail_pair:
            return self.segment_count * segment_size + self.first_tail_pair
        return self.first_segment * segment_size - self.partial_pairs


class _Limit:
    __slots__ = ("bytes", "tokens")

    def __init__(self, budget_bytes: int, budget_tokens: int | None):
        _check_budget("budget_bytes", budget_bytes)
        if budget_tokens is not None:
            _check_budget("budget_tokens", budget_tokens)
        self.bytes = budget_bytes
        self.tokens = budget_tokens

    def fits(self, cost: Cost) -> bool:
        return cost.bytes <= self.bytes and (self.tokens is None or cost.tokens <= self.tokens)

    def cheaper(self, summary: Cost | None, raw: Cost) -> bool:
        """Whether ``summary`` may stand for ``raw``: strictly cheaper in every budgeted dimension."""
        return summary is not None and summary.bytes < raw.bytes and (
            self.tokens is None or summary.tokens < raw.tokens)


def _check_budget(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")


def _checked(cost: Cost, what: str) -> Cost:
    if cost.bytes < 0 or cost.tokens < 0:
        raise ValueError(f"{what} has a negative cost: {cost}")
    return cost


def _give_tail(tail: Sequence[Cost], limit: _Limit) -> tuple[Cost, int]:
    """The tail newest first: what it costs and the oldest pair given."""
    used = ZERO
    for i in range(len(tail) - 1, -1, -1):
        after = used + _checked(tail[i], f"tail pair {i}")
        if not limit.fits(after):
            return used, i + 1
        used = after
    return used, 0


def _open(tail: Sequence[Cost], budget_bytes: int, budget_tokens: int | None,
          summary_frame: Cost) -> tuple[_Limit, Cost, Cost, int]:
    """What both preferences start from: the limit, the checked frame, and
    the raw tail given newest first (its cost, the oldest pair given)."""
    limit = _Limit(budget_bytes, budget_tokens)
    summary_frame = _checked(summary_frame, "the summary frame")
    used, first_tail = _give_tail(tail, limit)
    return limit, summary_frame, used, first_tail


def _segment_costs(segment: SegmentCost, k: int) -> tuple[Cost, Cost | None]:
    """Segment ``k``'s raw cost and its summary's (None: no usable summary), checked."""
    raw = _checked(segment.raw, f"segment {k}")
    summary = _checked(segment.summary, f"segment {k}'s summary") if segment.summary is not None else None
    return raw, summary


def choose_prefer_raw(*, tail: Sequence[Cost], segments: Sequence[SegmentCost], budget_bytes: int,
                      budget_tokens: int | None = None, summary_frame: Cost = ZERO) -> Choice:
    """SPEC §6 ``prefer=raw``: the smallest ``c``, then the smallest ``s``."""
    limit, summary_frame, used, first_tail = _open(tail, budget_bytes, budget_tokens, summary_frame)
    m = len(segments)
    if first_tail:
        return Choice(m, len(tail), first_segment=m, summaries=(), cost=used, first_tail_pair=first_tail, switch=m)

    # Newest first: the cost of S[c..m) all raw, and all in the cheaper form
    # plus the frame; keep c while either fits. (While no summary is among
    # them the two sums are equal and the frame, never negative, only makes
    # the second test harder: the first decides, as it must, frame-free.)
    all_raw = all_cheaper = used
    kept: list[tuple[int, Cost, Cost | None]] = []  # (k, raw, summary if cheaper), newest first
    for k in range(m - 1, -1, -1):
        raw, summary = _segment_costs(segments[k], k)
        summary = summary if limit.cheaper(summary, raw) else None
        raw_then = all_raw + raw
        cheaper_then = all_cheaper + (summary if summary is not None else raw)
        if not (limit.fits(raw_then) or limit.fits(cheaper_then + summary_frame)):
            break
        all_raw, all_cheaper = raw_then, cheaper_then
        kept.append((k, raw, summary))
    kept.reverse()
    c = kept[0][0] if kept else m

    # Oldest first from c: turn segments to their cheaper form until it fits.
    cost, summaries, s = all_raw, [], c
    for k, raw, summary in kept:
        if limit.fits(cost + summary_frame if summaries else cost):
            break
        if summary is not None:
            cost = cost - raw + summary
            summaries.append(k)
        s = k + 1
    if summaries:
        cost = cost + summary_frame
    return Choice(m, len(tail), first_segment=c, summaries=tuple(summaries), cost=cost, switch=s)


def choose_prefer_summary(*, tail: Sequence[Cost], segments: Sequence[SegmentCost], budget_bytes: int,
                          budget_tokens: int | None = None, summary_frame: Cost = ZERO) -> Choice:
    """SPEC §6 ``prefer=summary``: every cheaper summary that fits, newest first."""
    limit, summary_frame, used, first_tail = _open(tail, budget_bytes, budget_tokens, summary_frame)
    m = len(segments)
    if first_tail:
        return Choice(m, len(tail), first_segment=m, summaries=(), cost=used, first_tail_pair=first_tail)
    summaries: list[int] = []
    for k in range(m - 1, -1, -1):
        segment = segments[k]
        raw, summary = _segment_costs(segment, k)
        if limit.cheaper(summary, raw):
            block = summary + summary_frame if not summaries else summary
            if limit.fits(used + block):
                used = used + block
                summaries.append(k)
                continue
        pairs = segment.pairs
        if not pairs or sum(pairs, ZERO) != raw:
            raise ValueError(f"segment {k}: its pair costs must be given and add up to its raw cost")
        for j in range(len(pairs) - 1, -1, -1):
            after = used + _checked(pairs[j], f"segment {k} pair {j}")
            if not limit.fits(after):
                return Choice(m, len(tail), first_segment=k + 1, summaries=tuple(reversed(summaries)), cost=used,
                              partial_pairs=len(pairs) - 1 - j)
            used = after
    return Choice(m, len(tail), first_segment=0, summaries=tuple(reversed(summaries)), cost=used)
