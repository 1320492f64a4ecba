"""Deterministic trimming (SPEC §9 "Trimming", seed 004 §3 删除算法 and §4).

Given units in buckets (``buckets``) and a budget, trimming removes middle
units in a fixed order until the request fits:

1. the oldest middle **tool ring**, whole (the assistant message with its
   calls and all their results), then the next oldest, …;
2. when no middle ring is left, the oldest middle **plain turn**, FIFO;
3. a **note** takes the place of what was removed, at the point where the
   middle began:
   - when a removed ring (or a round the tool loop folded) held a
     side-effecting call and the ledger is pinned, the *ledger note*: one
     line for each side-effecting call that is no longer in the request raw
     (the others are there to read) — the work summary may come from a
     model, the ledger never does. It is counted against
     the budget like any message, so steps 1–2 go on until the request
     *with it* fits;
   - then, with ``summarize: true``, one *summary note* replaces it: a line
     per removed turn and tool call, head-and-tail cut, oldest first, plus
     the same ledger. It may spend up to ``summary_max_tokens`` of the
     budget (the ledger part is never cut); the room is made by removing
     more middle units in the same order, no more than the note needs —
     that is the trade ``summarize`` allows: raw middle for a summary of
     what went. When not even its fixed part can fit, it gives way to the
     ledger note (step ``summary_did_not_fit``);
4. if it still does not fit, assembly fails closed (``assembler``).

How SPEC §9's third step is read: after steps 1–2 the middle is empty
whenever they had to run to its end, so "replace what remains of the
middle by one summary note" is applied to the part of the middle that the
budget forced out: the note replaces it, and the raw middle that still
fits stays raw (seed 004 §4: compress the middle when it must go, keep the
ledger whatever happens).

``tighten`` (the retry helper, SPEC §9 "Retry") removes that many more
units after the request already fits: one more ring, or a plain turn when
no ring is left.

Every removal keeps the pairing invariant by construction (a ring goes
whole). It is checked incrementally, not by validating the whole view again
after each step: the assembler validated the input, and every unit removed
is checked to be *closed* (``closed.unit_is_closed``: its results answer exactly
its own calls, in O(its size)) — a valid list less a closed unit is valid,
so each intermediate view is. The property tests hold that reasoning to
the full validator: an ``observer`` sees the view after every single
removal and the validator finds nothing in it. The output is validated in
full once more by the assembler. A step's ``tokens_after`` is the running count (the notes are
counted exactly once, at the end; the report's ``tokens_after`` is exact). The ledger note's
exact count is made of its lines' counts, which the walk and the removals took already
(``counting.count_note``: with tiktoken a newline-joined text counts as its pieces), so its
text — 14,558 tokens when a 5,000-message run loses all 290 of its side effects — is not
encoded a second time.

The cost follows the budget, not the run: the middle is counted exactly
from its last candidate back (the newest plain turns, then the newest
rings) only until those counted — with the ledger note's estimate and a
lower bound of every older unit — overflow the room the protected units
leave (``forced`` below). Every older candidate is then dropped whatever
its size — each request the removal loop would weigh before it still
holds the counted ones, so it cannot fit — and is never counted: the
removals, the output and ``tokens_after`` are the same
as counting everything (``count_all``; the property tests hold the two to
the same answer). A step whose running count still holds units never
counted reports a lower bound there and says so (``tokens_exact: false``).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from itertools import accumulate, compress
from typing import Callable, Sequence

from .buckets import MIDDLE, PREFIX, RING, Unit, floors_of, measure
from .closed import first_open_unit
from .config import SIDE_EFFECT_LEDGER, AssemblyConfig
from .counting import TextCounter, count_message, count_note
from .errors import InvariantBroken
from .ledger import LedgerEntry
from .neutral import Message
from .notes import (
    LEDGER_NOTE,
    SUMMARY_NOTE,
    ledger_note_lines,
    ledger_note_text,
    note_message,
    summary_lines,
    summary_note_text,
)
from .validator import pair_results

DROP_RINGS = "drop_middle_rings"
DROP_TURNS = "drop_middle_turns"
TIGHTEN = "tighten"


@dataclass
class TrimOutcome:
    messages: list[Message]
    buckets: list[str]  # the bucket of each output message ("note" for the note)
    dropped: list[Unit]  # in the order they were removed
    note: Message | None
    tokens_after: int
    fits: bool
    summary_used: bool
    steps: list[dict] = field(default_factory=list)
    uncounted: int = 0  # middle units dropped without ever being counted


def trim(units: list[Unit], messages: Sequence[Message], *, format: str, config: AssemblyConfig,
         ledger: list[LedgerEntry], count: TextCounter, fixed_tokens: int, budget: int, tighten: int = 0,
         gone: frozenset = frozenset(), tokens: Callable[[Message], int] | None = None, count_all: bool = False,
         observer: Callable[[str, list[Message]], None] | None = None, pairs: dict | None = None) -> TrimOutcome:
    """``gone``: (input index, call id) of ledger entries already out of the
    raw messages (folded by the tool loop); the ledger note names them from
    the start. ``tokens`` counts one message exactly (the assembler's memo;
    default ``count_message``) for the units not counted yet; ``count_all``
    counts every unit instead of only those the budget needs; ``pairs``:
    ``validator.pair_results`` of ``messages`` when the caller has it."""
    if tokens is None:
        def tokens(m: Message) -> int:
            return count_message(m, count)
    kept = [True] * len(units)
    # The middle's rings, then its plain turns, each oldest first; the
    # protected units counted; the note stands where the middle began
    # (``anchor``), with no middle before the suffix (or at the end).
    ring_candidates: list[tuple[str, int]] = []
    turn_candidates: list[tuple[str, int]] = []
    protected = 0
    anchor = None
    for k, u in enumerate(units):
        if u.bucket != MIDDLE:
            protected += measure(u, messages, tokens)
            continue
        if anchor is None:
            anchor = k
        if u.kind == RING:
            ring_candidates.append((DROP_RINGS, k))
        else:
            turn_candidates.append((DROP_TURNS, k))
    if anchor is None:
        anchor = next((k for k, u in enumerate(units) if u.bucket != PREFIX), len(units))
    candidates = ring_candidates + turn_candidates
    rings = len(ring_candidates)
    by_key = {(e.index, e.call_id): n for n, e in enumerate(ledger)}
    pin_ledger = config.pins(SIDE_EFFECT_LEDGER) and bool(ledger)
    summarize = config.summarize
    results = (pairs if pairs is not None else pair_results(messages, format)) if summarize else {}

    dropped: list[Unit] = []
    # The ledger entries whose calls are no longer in the request raw: the
    # notes name exactly these (the others are there to read).
    out_of_view: set[int] = {by_key[key] for key in gone if key in by_key}
    line_tokens: dict[int, int] = {}
    header_tokens = 0
    estimate = {"tokens": 0}
    cache: dict[tuple, tuple[Message, int]] = {}

    line_texts: dict[int, str] = {}

    def line_of(n: int) -> str:
        # Each entry's line is weighed by the walk below, again when its ring
        # goes, and written in the note: formatted once.
        text = line_texts.get(n)
        if text is None:
            text = line_texts[n] = ledger[n].line()
        return text

    def gone_lines() -> list[str]:
        return [line_of(n) for n in sorted(out_of_view)]

    def header_cost() -> int:
        nonlocal header_tokens
        if not header_tokens:
            header_tokens = count_message(note_message(format, ledger_note_text([]), LEDGER_NOTE), count) + 1
        return header_tokens

    line_costs: dict[int, int] = {}

    def line_cost(n: int) -> int:
        # (counted once: the walk and the removal both weigh it)
        cost = line_costs.get(n)
        if cost is None:
            cost = line_costs[n] = count(line_of(n)) + 1
        return cost

    def account(n: int) -> None:
        header_cost()
        line_tokens[n] = line_cost(n)
        estimate["tokens"] += line_tokens[n]

    for n in sorted(out_of_view):
        account(n)

    def ledger_note() -> Message:
        key = ("ledger", len(out_of_view))
        if key not in cache:
            # Counted from its lines, which the walk and the removals counted
            # already (``count_note``): the note's text is not encoded again.
            lines = ledger_note_lines(gone_lines())
            note = note_message(format, "\n".join(lines), LEDGER_NOTE)
            cache[key] = (note, count_note(lines, count))
        return cache[key][0]

    def exact_ledger_cost() -> int:
        if pin_ledger and out_of_view:
            ledger_note()
            return cache[("ledger", len(out_of_view))][1]
        return 0

    def ledger_cost() -> int:
        # While units are being removed: the header plus a line per entry,
        # counted once each; the exact note is counted at the end.
        return header_tokens + estimate["tokens"] if pin_ledger and out_of_view else 0

    def total() -> int:
        return fixed_tokens + kept_tokens + ledger_cost()

    # ``forced``: candidates[:forced + 1] are removed whatever their size,
    # and only candidates[forced:] are ever counted. Before candidate p the
    # removal loop weighs the request without candidates[:p]: the protected
    # units, candidates[p:] and the ledger estimate L(p) (the header and a
    # line per side effect of the rings before p). Counted from the newest
    # back down to ``forced``, with F(p) the lower bounds of candidates[:p]
    # (``unit_floor``; every count is >= 0), each such request for p <= forced
    # needs at least S(forced) + F(forced) - F(p) + L(p) — S the exact
    # count of candidates[forced:] — and the minimum of that over p already
    # exceeds the room the protected units leave: so each of them is over
    # budget and candidate p goes. (Without a pinned ledger L is 0 and the
    # minimum is S(forced) alone.)
    forced = -1
    if count_all or not candidates:
        for _, k in candidates:
            measure(units[k], messages, tokens)
        kept_tokens = protected + sum(floors_of(units[k] for _, k in candidates))
    else:
        room = budget - fixed_tokens - protected
        # F(p) for every p (the walk below counts none of candidates[:p] it
        # does not reach, so these stay their floors).
        ordered = [units[k] for _, k in candidates]
        floors = [0, *accumulate(floors_of(ordered))]
        lowest = None
        if pin_ledger and by_key:
            # min over p' <= p of L(p') - F(p'), for every p: L grows only
            # at the rings (candidates[:rings]) holding a side effect.
            seen = set(out_of_view)
            growth = []
            entry = by_key.get
            for unit in ordered[:rings]:
                grown = 0
                index = messages[unit.start].index
                for cid in unit.call_ids:
                    n = entry((index, cid))
                    if n is not None and n not in seen:
                        seen.add(n)
                        grown += line_cost(n) + (0 if len(seen) > 1 else header_cost())
                growth.append(grown)
            growth.extend([0] * (len(candidates) - rings))
            ledger_at = accumulate(growth, initial=ledger_cost())
            lowest = list(accumulate(map(operator.sub, ledger_at, floors), min))
        newer = 0
        for p in range(len(candidates) - 1, -1, -1):
            newer += measure(ordered[p], messages, tokens)
            if newer + (floors[p] + lowest[p] if lowest is not None else 0) > room:
                forced = p
                break
        # While units never counted are still in the request, the running
        # count holds their lower bound (``unit_floor``); they all go by
        # ``forced``. The walk counted candidates[max(forced, 0):] exactly.
        kept_tokens = protected + floors[max(forced, 0)] + newer
    uncounted_kept = [units[k].tokens for _, k in candidates[:max(forced, 0)]].count(None)

    def summary_note(cap: int, limit: int) -> tuple[Message, int] | None:
        """The summary note of what was removed, at most ``cap`` tokens — or
        its fixed part, if larger: the ledger is never cut — or None when
        that fixed part does not fit in ``limit``."""
        ordered = sorted(dropped, key=lambda u: u.start)
        rings = sum(1 for u in ordered if u.kind == RING)
        turns = sum(u.stop - u.start for u in ordered if u.kind != RING)

        def build(shown: list[str], total_lines: int) -> tuple[Message, int]:
            note = note_message(format, summary_note_text(shown, total_lines - len(shown), (rings, turns),
                                                          gone_lines()), SUMMARY_NOTE)
            return note, count_message(note, count)

        all_lines = [line for u in ordered for line in summary_lines(messages, u.positions(), results)]
        base = build([], len(all_lines))
        if base[1] > limit:
            return None
        cap = max(cap, base[1])
        shown: list[str] = []
        used = base[1]
        for line in all_lines:
            cost = count(line) + 1
            if used + cost > cap:
                break
            shown.append(line)
            used += cost
        built = build(shown, len(all_lines))
        while built[1] > cap and shown:  # the joined text may count a little differently
            shown.pop()
            built = build(shown, len(all_lines))
        return built

    def view(note: Message | None) -> tuple[list[Message], list[str]]:
        out: list[Message] = []
        buckets: list[str] = []

        def add(lo: int, hi: int) -> None:
            for unit in compress(units[lo:hi], kept[lo:hi]):
                if unit.stop == unit.start + 1:  # (most units are one message)
                    out.append(messages[unit.start])
                    buckets.append(unit.bucket)
                else:
                    out.extend(messages[unit.start:unit.stop])
                    buckets.extend([unit.bucket] * (unit.stop - unit.start))

        add(0, anchor)
        if note is not None:
            out.append(note)
            buckets.append("note")
        add(anchor, len(units))
        return out, buckets

    steps: list[dict] = []
    phase_counts = {DROP_RINGS: 0, DROP_TURNS: 0, TIGHTEN: 0}
    phase_tokens: dict[str, int] = {}
    phase_exact: dict[str, bool] = {}
    phase_violations: dict[str, int] = {}
    current = {"phase": None}

    def check(phase: str) -> None:
        # The pairing invariant at the end of a step, kept incrementally: the
        # input passed the validator, and every removed unit was closed
        # (``closed.unit_is_closed``), so the view passes it too — without
        # validating the whole view again after each step (the property
        # tests hold the two to the same answer after every removal).
        phase_violations.setdefault(phase, 0)

    def remove(phase: str, ks) -> tuple[int, int]:
        """Units ``ks`` out of the view, in order: each refused if it is not
        closed (it would break a pair), recorded as dropped, and the side
        effects of a ring's calls booked in the ledger. Returns the sum of
        their ``unit_floor`` and how many were never counted; the caller
        keeps the running counts."""
        going = [units[k] for k in ks]
        unit = first_open_unit(going, messages, format)
        if unit is not None:
            phase_violations[phase] = phase_violations.get(phase, 0) + 1
            raise InvariantBroken(f"{phase}: unit {unit.start}..{unit.stop} is not closed")
        for k in ks:
            kept[k] = False
        dropped.extend(going)
        if by_key:
            for unit in going:
                if unit.kind == RING:
                    index = messages[unit.start].index
                    for cid in unit.call_ids:
                        n = by_key.get((index, cid))
                        if n is not None and n not in out_of_view:
                            out_of_view.add(n)
                            account(n)
        return sum(floors_of(going)), [u.tokens for u in going].count(None)

    def drop(phase: str, k: int) -> None:
        nonlocal kept_tokens, uncounted_kept
        if current["phase"] not in (None, phase):
            check(current["phase"])
        current["phase"] = phase
        floors_gone, uncounted_gone = remove(phase, (k,))
        uncounted_kept -= uncounted_gone
        kept_tokens -= floors_gone
        phase_counts[phase] += 1
        phase_exact[phase] = uncounted_kept == 0
        if observer is not None:
            observer(phase, view(ledger_note() if exact_ledger_cost() else None)[0])

    def drop_forced(stop: int) -> None:
        """``drop`` for each of candidates[:stop] in order, when no observer
        needs the view after each: the same checks and the same state, with
        the running count, the step's figures and exactness settled once per
        phase rather than once per unit (the thousands of older units a long
        run drops uncounted)."""
        nonlocal kept_tokens, uncounted_kept
        start = 0
        while start < stop:
            # (the candidates are the rings, then the turns: one phase each)
            phase = candidates[start][0]
            end = min(stop, rings) if start < rings else stop
            if current["phase"] not in (None, phase):
                check(current["phase"])
            current["phase"] = phase
            floors_gone, uncounted_gone = remove(phase, [k for _, k in candidates[start:end]])
            kept_tokens -= floors_gone
            uncounted_kept -= uncounted_gone
            phase_counts[phase] += end - start
            phase_exact[phase] = uncounted_kept == 0
            phase_tokens[phase] = total()
            start = end

    # Steps 1-2: oldest middle rings, then oldest plain turns, until the
    # request (with the ledger note once a side effect went) fits; then
    # ``tighten`` more. Candidates up to ``forced`` go without weighing (in
    # bulk unless an observer watches every removal).
    extra = tighten
    position = 0
    if observer is None and forced >= 0:
        drop_forced(forced + 1)
        position = forced + 1
    for phase, k in candidates[position:]:
        if position > forced and total() <= budget:
            if extra <= 0:
                break
            extra -= 1
            phase = TIGHTEN
        drop(phase, k)
        phase_tokens[phase] = total()
        position += 1

    # The exact ledger note may count a little differently from its running
    # estimate: go on removing units, in the same order, until it fits.
    while exact_ledger_cost() and fixed_tokens + kept_tokens + exact_ledger_cost() > budget \
            and position < len(candidates):
        phase, k = candidates[position]
        drop(phase, k)
        phase_tokens[phase] = fixed_tokens + kept_tokens + exact_ledger_cost()
        position += 1
    note = ledger_note() if exact_ledger_cost() else None
    note_cost = exact_ledger_cost()
    summary_used = False
    summary_skipped = False
    if summarize and dropped and fixed_tokens + kept_tokens + exact_ledger_cost() <= budget:
        # Step 3: the summary note takes the ledger note's place. It may use
        # up to ``summary_max_tokens``; room for it is made by removing more
        # middle units in the same order, never more than the note needs.
        room_max = budget - fixed_tokens - protected
        target = min(config.summary_max_tokens, room_max)
        while True:
            room = budget - (fixed_tokens + kept_tokens)
            wanted = summary_note(target, room_max)
            if wanted is None:  # not even its fixed part can ever fit
                summary_skipped = True
                break
            if wanted[1] <= room:
                note, note_cost = wanted
                summary_used = True
                break
            if position >= len(candidates):
                fitted = summary_note(room, room)
                if fitted is None:
                    summary_skipped = True
                else:
                    note, note_cost = fitted
                    summary_used = True
                break
            phase, k = candidates[position]
            drop(phase, k)
            phase_tokens[phase] = total()
            position += 1
        if summary_skipped:
            note = ledger_note() if exact_ledger_cost() else None
            note_cost = exact_ledger_cost()

    if uncounted_kept:
        raise InvariantBroken(f"{uncounted_kept} middle units kept without an exact count")
    if current["phase"] is not None:
        check(current["phase"])
    for phase in (DROP_RINGS, DROP_TURNS, TIGHTEN):
        if phase == TIGHTEN and not tighten:
            continue
        step = {"step": phase, "dropped": phase_counts[phase],
                "tokens_after": phase_tokens.get(phase, fixed_tokens + kept_tokens)}
        if not phase_exact.get(phase, True):
            step["tokens_exact"] = False  # a lower bound: units never counted were still in
        if phase in phase_violations:
            step["violations"] = phase_violations[phase]
        steps.append(step)

    final, buckets = view(note)
    tokens_after = fixed_tokens + kept_tokens + note_cost
    note_step = {"step": SUMMARY_NOTE if summary_used else (LEDGER_NOTE if note is not None else "no_note"),
                 "tokens": note_cost}
    if summary_skipped:
        note_step["summary_did_not_fit"] = True
    # (The note is one plain message at a unit boundary; the output, note
    # included, is validated in full by the assembler.)
    steps.append(note_step)
    return TrimOutcome(messages=final, buckets=buckets, dropped=dropped, note=note, tokens_after=tokens_after,
                       fits=tokens_after <= budget, summary_used=summary_used, steps=steps,
                       uncounted=sum(1 for u in dropped if u.tokens is None))

