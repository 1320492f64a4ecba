"""When a rolling scope writes its next hand-off note, and over which pairs
(SPEC §7 "Trigger", seed 002 §6.4–§6.6, defaults §12).

Pure: plain numbers in, planned pair ranges out. The binding counts the
tokens (``pair_tokens`` / ``note_tokens``, with ``compaction.tokens``:
tiktoken's offline encoding, or its named character estimate) and hands
them over; nothing here reads a database.

The rule, exactly as SPEC §7 states it. The material is the settled pairs
after the parent generation's cut and before the newest ``recent_turns``
pairs; each pair is two messages. A generation is planned when

- **token rule**: the material holds at least ``min_new_token_count``
  tokens; or
- **window rule**: the next run's estimate — the last note plus every
  unsummarised pair (the recent ones included) — reaches
  ``context_window_tokens × trigger_ratio`` *and* the material holds at
  least ``min_new_message_count`` messages;

and never while the material holds fewer than ``min_compact_message_count``
messages.

Batching (seed 002 §6.6): material longer than
``max_compaction_batch_messages`` is cut into consecutive batches of at most
that many messages (whole pairs), oldest first. After each batch the cut
moves forward and the rule is asked again for the next one — so a pass stops
when only the recent window is left, when what is left no longer triggers,
or after ``max_rounds_per_request`` batches.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Mapping, Sequence

from ..tokens import count_tokens

MESSAGES_PER_PAIR = 2

# Reasons a decision gives (seed 002 §11.2 logs the trigger reason).
TOKENS = "tokens"  # the token rule fired
WINDOW = "window"  # the window rule fired
NO_MATERIAL = "no_material"  # nothing between the cut and the recent window
TOO_FEW_MESSAGES = "too_few_messages"  # under min_compact_message_count
BELOW_THRESHOLDS = "below_thresholds"  # neither rule fired
WINDOW_TOO_FEW_NEW = "window_too_few_new_messages"  # window reached, but too few new messages


class ThresholdError(ValueError):
    """A threshold that cannot be used; ``field`` names it."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass(frozen=True)
class RollingThresholds:
    """A rolling scope's thresholds (seed 002 §12 defaults). Every field is
    checked on construction; a bad value raises ``ThresholdError`` naming
    the field."""

    recent_turns: int = 6
    min_new_token_count: int = 20000
    context_window_tokens: int = 96000
    trigger_ratio: float = 0.72
    min_new_message_count: int = 8
    min_compact_message_count: int = 10
    max_compaction_batch_messages: int = 200
    max_rounds_per_request: int = 30

    def __post_init__(self):
        # The least each count may be: zero where "no minimum" makes sense;
        # a window needs a token, a batch a whole pair, a pass one round.
        least = {"recent_turns": 0, "min_new_token_count": 0, "context_window_tokens": 1,
                 "min_new_message_count": 0, "min_compact_message_count": 0,
                 "max_compaction_batch_messages": MESSAGES_PER_PAIR, "max_rounds_per_request": 1}
        for name, minimum in least.items():
            value = getattr(self, name)
            # bool is an int in Python; True is not a count anyone meant.
            if isinstance(value, bool) or not isinstance(value, int):
                raise ThresholdError(name, f"must be a whole number, got {value!r}")
            if value < minimum:
                raise ThresholdError(name, f"must be at least {minimum}, got {value}")
        ratio = self.trigger_ratio
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)):
            raise ThresholdError("trigger_ratio", f"must be a number in (0, 1], got {ratio!r}")
        if not math.isfinite(ratio) or not 0 < ratio <= 1:
            raise ThresholdError("trigger_ratio", f"must be in (0, 1], got {ratio!r}")
        if self.max_compaction_batch_messages < self.min_compact_message_count:
            # Otherwise an over-long material could never be compacted: every
            # batch would be too small for the minimum.
            raise ThresholdError("max_compaction_batch_messages",
                                 f"must be at least min_compact_message_count ({self.min_compact_message_count}), "
                                 f"got {self.max_compaction_batch_messages}")

    @property
    def window_threshold(self) -> float:
        """The next-run estimate at which the window rule fires (69,120 by default)."""
        return self.context_window_tokens * self.trigger_ratio

    @property
    def batch_pairs(self) -> int:
        """Whole pairs per batch: a batch never splits a pair."""
        return self.max_compaction_batch_messages // MESSAGES_PER_PAIR

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def from_mapping(cls, values: Mapping[str, object]) -> "RollingThresholds":
        """Thresholds from a mapping (a form, a command line, stored JSON):
        missing keys take their defaults; an unknown key is an error naming it."""
        unknown = sorted(set(values) - set(cls.field_names()))
        if unknown:
            raise ThresholdError(unknown[0], f"unknown threshold; expected one of {', '.join(cls.field_names())}")
        return cls(**dict(values))

    def as_dict(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in self.field_names()}


DEFAULT_THRESHOLDS = RollingThresholds()


@dataclass(frozen=True)
class TriggerDecision:
    planned: bool
    reason: str  # TOKENS / WINDOW when planned, else why not
    material_messages: int
    material_tokens: int
    estimate_tokens: int  # last note + every unsummarised pair

    def __bool__(self) -> bool:
        return self.planned


def decide(*, material_messages: int, material_tokens: int, note_tokens: int, unsummarised_tokens: int,
           thresholds: RollingThresholds = DEFAULT_THRESHOLDS) -> TriggerDecision:
    """The SPEC §7 rule for one material. ``unsummarised_tokens`` counts every
    pair after the cut, the recent window included (it is what the next run
    would carry raw); ``material_tokens`` only the material's pairs."""
    for name, value in (("material_messages", material_messages), ("material_tokens", material_tokens),
                        ("note_tokens", note_tokens), ("unsummarised_tokens", unsummarised_tokens)):
        if value < 0:
            raise ValueError(f"{name} cannot be negative")
    estimate = note_tokens + unsummarised_tokens

    def decision(planned: bool, reason: str) -> TriggerDecision:
        return TriggerDecision(planned, reason, material_messages, material_tokens, estimate)

    if material_messages == 0:
        return decision(False, NO_MATERIAL)
    if material_messages < thresholds.min_compact_message_count:
        return decision(False, TOO_FEW_MESSAGES)
    if material_tokens >= thresholds.min_new_token_count:
        return decision(True, TOKENS)
    if estimate >= thresholds.window_threshold:
        if material_messages >= thresholds.min_new_message_count:
            return decision(True, WINDOW)
        return decision(False, WINDOW_TOO_FEW_NEW)
    return decision(False, BELOW_THRESHOLDS)


@dataclass(frozen=True)
class PlannedBatch:
    """One planned generation: the material's pair range, inclusive."""

    from_pair: int
    to_pair: int
    reason: str  # TOKENS or WINDOW
    message_count: int
    token_count: int

    @property
    def pair_count(self) -> int:
        return self.to_pair - self.from_pair + 1


@dataclass(frozen=True)
class PlanningPass:
    batches: tuple[PlannedBatch, ...]
    # Why the pass stopped: the decision that did not fire, or "round_cap"
    # when max_rounds_per_request batches were planned.
    stopped: str
    last_decision: TriggerDecision | None


ROUND_CAP = "round_cap"


def material_bounds(*, pair_count: int, first_pair: int, recent_turns: int) -> tuple[int, int]:
    """``[first, end)`` of the material: pairs from ``first_pair`` (the one
    after the parent's cut, 0 without a parent) up to, not including, the
    newest ``recent_turns`` pairs. Empty when ``first >= end``."""
    if pair_count < 0 or first_pair < 0 or recent_turns < 0:
        raise ValueError("pair_count, first_pair and recent_turns cannot be negative")
    return first_pair, max(first_pair, pair_count - recent_turns)


def plan_pass(pair_tokens: Sequence[int], *, first_pair: int = 0, note_tokens: int = 0,
              thresholds: RollingThresholds = DEFAULT_THRESHOLDS) -> PlanningPass:
    """One planning pass (seed 002 §6.6).

    ``pair_tokens[i]`` is the token count of pair ``first_pair + i``: every
    settled pair after the parent's cut, oldest first, the recent window
    included. ``note_tokens`` is the last note's size; the notes of batches
    planned in this pass are not written yet, so it stands in for them too
    (a note is bounded by the contract's 6,000 characters, and does not grow
    without new matters).
    """
    if first_pair < 0:
        raise ValueError("first_pair cannot be negative")
    if any(t < 0 for t in pair_tokens):
        raise ValueError("pair_tokens cannot hold negative counts")
    total = len(pair_tokens)
    # Suffix sums make each round O(1) in the pairs it does not take: a pass
    # costs O(pairs), however long the unsummarised stretch.
    suffix = [0] * (total + 1)
    for i in range(total - 1, -1, -1):
        suffix[i] = suffix[i + 1] + pair_tokens[i]
    material_end = max(0, total - thresholds.recent_turns)  # offsets into pair_tokens
    cut = 0
    batches: list[PlannedBatch] = []
    decision: TriggerDecision | None = None
    while True:
        if len(batches) >= thresholds.max_rounds_per_request:
            return PlanningPass(tuple(batches), ROUND_CAP, decision)
        end = min(material_end, cut + thresholds.batch_pairs)
        pairs = max(0, end - cut)
        decision = decide(material_messages=pairs * MESSAGES_PER_PAIR,
                          material_tokens=suffix[cut] - suffix[end] if pairs else 0,
                          note_tokens=note_tokens, unsummarised_tokens=suffix[cut], thresholds=thresholds)
        if not decision.planned:
            return PlanningPass(tuple(batches), decision.reason, decision)
        batches.append(PlannedBatch(from_pair=first_pair + cut, to_pair=first_pair + end - 1,
                                    reason=decision.reason, message_count=decision.material_messages,
                                    token_count=decision.material_tokens))
        cut = end


def pair_token_count(user_text: str, assistant_text: str) -> int:
    """A pair's tokens as the next run would carry it raw: user plus answer."""
    return count_tokens(user_text) + count_tokens(assistant_text)


def note_token_count(note_text: str | None) -> int:
    return count_tokens(note_text) if note_text else 0
