"""Whether removing a unit leaves a valid request (SPEC §9: trimming never
breaks tool pairing; seed 004 §3).

Pure. A unit is *closed* when removing it from a valid message list leaves
the list valid: a plain message carries no call and no result; a ring's
results answer exactly its own calls, each once, and (OpenAI) no result of
the ring's run is left after it. Trimming checks each run of removals with
``first_open_unit`` before it removes them, in O(size of the units) — the
incremental form of the validator (``validator``), which checks the whole
output again at the end.
"""

from __future__ import annotations

from typing import Sequence

from .buckets import RING, Unit
from .neutral import ANTHROPIC, Message


def unit_is_closed(unit: Unit, messages: Sequence[Message], format: str) -> bool:
    """Whether removing ``unit`` from a VALID list leaves it valid: a plain
    message carries no call and no result; a ring's results answer exactly
    its own calls, and (OpenAI) no result of the ring's run is left after
    it. O(size of the unit) — the incremental form of the validator that
    trimming relies on after each removal."""
    return first_open_unit((unit,), messages, format) is None


def first_open_unit(units: Sequence[Unit], messages: Sequence[Message], format: str) -> Unit | None:
    """The first of ``units`` that is not closed (``unit_is_closed``), or
    None: a run of removals checked in one pass."""
    n = len(messages)
    anthropic = format == ANTHROPIC
    for unit in units:
        first = messages[unit.start]
        if unit.kind != RING:
            if unit.stop != unit.start + 1 or first.calls or first.results:
                return unit
            continue
        after_ok = anthropic or unit.stop >= n or messages[unit.stop].role != "tool"
        if unit.stop == unit.start + 2 and len(first.calls) == 1:  # the common ring: one call, one result
            answer = messages[unit.start + 1]
            if not (after_ok and not answer.calls and len(answer.results) == 1
                    and answer.results[0].call_id == first.calls[0].id):
                return unit
        elif not (after_ok and _answers_exactly(unit, messages)):
            return unit
    return None


def _answers_exactly(unit: Unit, messages: Sequence[Message]) -> bool:
    """A ring's results answer exactly its own calls, each once."""
    first = messages[unit.start]
    calls = {c.id for c in first.calls}
    answered = set()
    for pos in range(unit.start + 1, unit.stop):
        m = messages[pos]
        if m.calls:
            return False
        for r in m.results:
            if r.call_id not in calls or r.call_id in answered:
                return False
            answered.add(r.call_id)
    return answered == calls
