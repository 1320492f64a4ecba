"""Units and buckets (SPEC §9 "Buckets", seed 004 §2 分桶 token 预算 and §3 分层裁剪).

Trimming never removes a single message: it removes *units*, and a unit
is either

- a **tool ring**: one assistant message with tool calls plus every message
  that answers them (OpenAI: the run of ``tool`` messages right after it;
  Anthropic: the next user message, which holds the ``tool_result``
  blocks, and any text the user added after them) — removed or kept
  whole, which is what keeps the pairing invariant true at every step; or
- one **plain message** (a user or assistant message without tool calls,
  or a system message) — a "turn" in the report.

Each unit falls in one bucket:

``prefix`` (protected, never trimmed)
  the leading system / developer messages; later system / developer
  messages too while ``security_system_prompt`` is pinned (otherwise they
  are plain middle turns); the first message in which the user speaks
  while ``first_user_message`` is pinned. The side-effect ledger is pinned
  as well, as a note (``trim``).
``suffix`` (protected)
  the newest ``recent_tool_rings`` complete rings; the newest
  ``recent_user_turns`` messages in which the user speaks (the latest one
  always); the run's work summary (§10). Only these: plain turns between
  or after them are middle like any other (SPEC §9 names the rings and
  the latest user message; protecting the whole stretch from the oldest
  protected ring on would let a run of chatter after a few early tool
  calls outgrow any budget).
``middle``
  everything else: what trimming may remove, oldest first.

A unit that contains a protected message is protected whole (an Anthropic
ring whose result message also carries the user's latest words is kept).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from .config import FIRST_USER_MESSAGE, SECURITY_SYSTEM_PROMPT, AssemblyConfig
from .counting import CALL_OVERHEAD, MESSAGE_OVERHEAD, TextCounter, count_message
from .neutral import ANTHROPIC, Message
from .notes import WORK_SUMMARY, is_work_summary_message

RING, TURN, SYSTEM, NOTE = "ring", "turn", "system", "note"
PREFIX, SUFFIX, MIDDLE = "prefix", "suffix", "middle"


@dataclass(slots=True)
class Unit:
    kind: str  # ring | turn | system | note
    start: int  # position in the message list the units were cut from
    stop: int  # exclusive
    tokens: int | None  # None: not counted (yet); see ``measure``
    bucket: str = MIDDLE
    reason: str | None = None  # why it is protected
    has_user_turn: bool = False
    call_ids: tuple = ()
    # ``unit_floor`` while not counted: every message's overhead and every
    # call's, set once by ``split_units`` (trimming and the report read it
    # for each of the thousands of units a long run drops uncounted).
    floor: int = 0

    @property
    def protected(self) -> bool:
        return self.bucket != MIDDLE

    def positions(self) -> range:
        return range(self.start, self.stop)


def split_units(messages: Sequence[Message], format: str, tokens: Sequence[int] | None) -> list[Unit]:
    """Cut a VALID message list into units (rings and single messages).
    ``tokens``: each message's count, or None to leave every unit uncounted
    (``measure`` counts one when its size is needed)."""
    units: list[Unit] = []
    append = units.append
    n = len(messages)
    anthropic = format == ANTHROPIC
    i = 0
    while i < n:
        m = messages[i]
        role = m.role
        if role == "assistant" and m.calls:
            if anthropic:
                j = i + 2 if i + 1 < n and messages[i + 1].results else i + 1
            else:
                j = i + 1
                while j < n and messages[j].role == "tool":
                    j += 1
            # Only an Anthropic result message can also carry the user's words.
            user_turn = anthropic and j > i + 1 and messages[i + 1].is_user_turn
            size = None if tokens is None else tokens[i] + tokens[i + 1] if j == i + 2 else sum(tokens[i:j])
            calls = m.calls
            append(Unit(RING, i, j, size, MIDDLE, None, user_turn,
                        (calls[0].id,) if len(calls) == 1 else tuple([c.id for c in calls]),
                        MESSAGE_OVERHEAD * (j - i) + CALL_OVERHEAD * len(calls)))
            i = j
            continue
        if role == "user":
            kind = NOTE if is_work_summary_message(m) else TURN
            user_turn = m.is_user_turn
        else:
            kind = SYSTEM if role == "system" or role == "developer" else TURN
            user_turn = False
        append(Unit(kind, i, i + 1, None if tokens is None else tokens[i], MIDDLE, None, user_turn, (),
                    MESSAGE_OVERHEAD))
        i += 1
    return units


def assign_buckets(units: list[Unit], messages: Sequence[Message], config: AssemblyConfig) -> list[Unit]:
    """Mark each unit prefix, suffix or middle (in place; returns ``units``)."""
    def protect(unit: Unit, bucket: str, reason: str) -> None:
        if unit.bucket == MIDDLE:
            unit.bucket, unit.reason = bucket, reason

    # One pass collects what each rule looks at; the rules then apply in
    # their order (a unit keeps the first bucket and reason it is given).
    pin_security = config.pins(SECURITY_SYSTEM_PROMPT)
    summaries: list[Unit] = []
    rings: list[Unit] = []
    user_units: list[Unit] = []
    leading = True
    for unit in units:
        kind = unit.kind
        if kind == SYSTEM:
            if leading:
                protect(unit, PREFIX, "system_prompt")
            elif pin_security:
                protect(unit, PREFIX, SECURITY_SYSTEM_PROMPT)
        else:
            leading = False
            if kind == RING:
                rings.append(unit)
            elif kind == NOTE or (kind == TURN and messages[unit.start].origin == WORK_SUMMARY):
                summaries.append(unit)
        if unit.has_user_turn:
            user_units.append(unit)
    if config.pins(FIRST_USER_MESSAGE) and user_units:
        protect(user_units[0], PREFIX, FIRST_USER_MESSAGE)
    for unit in summaries:
        protect(unit, SUFFIX, "work_summary")
    if config.recent_tool_rings > 0:
        for unit in rings[-config.recent_tool_rings:]:
            protect(unit, SUFFIX, "recent_tool_ring")
    for unit in user_units[-config.recent_user_turns:]:
        protect(unit, SUFFIX, "recent_user_turn")
    return units


def measure(unit: Unit, messages: Sequence[Message], tokens: Callable[[Message], int]) -> int:
    """The unit's exact count (``tokens`` counts one message), counted once."""
    if unit.tokens is None:
        start, stop = unit.start, unit.stop
        if stop == start + 1:  # a plain message, the commonest unit
            unit.tokens = tokens(messages[start])
        else:
            unit.tokens = sum(map(tokens, messages[start:stop]))
    return unit.tokens


def unit_floor(unit: Unit) -> int:
    """The unit's exact count if known, else a lower bound in O(1): every
    message's overhead and every call's (``counting.message_floor``; the
    calls of a ring are its first message's)."""
    return unit.tokens if unit.tokens is not None else unit.floor


def floors_of(units: Iterable[Unit]) -> list[int]:
    """``unit_floor`` of each of ``units``, in one comprehension (trimming
    sums thousands)."""
    return [u.floor if u.tokens is None else u.tokens for u in units]


def plan_units(messages: Sequence[Message], format: str, config: AssemblyConfig, count: TextCounter,
               tokens: Sequence[int] | None = None) -> list[Unit]:
    if tokens is None:
        tokens = [count_message(m, count) for m in messages]
    return assign_buckets(split_units(messages, format, tokens), messages, config)
