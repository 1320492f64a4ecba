"""The facts a next run should still have (see below), and the one rule
that tells whether a text says a value (``mentions``)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

# --- Long conversations with the facts a next run should still have ------------
#
# For measuring what a projection keeps (bench/fidelity.py) and what a rolling
# note drifts from (SPEC §8): several dialogues concatenated into one long
# conversation, and beside it, taken from the dataset's own annotations
# rather than guessed from the text, the values that were said:
#
# - constraints: what the user stated and still holds at the end — CrossWOZ
#   ``final_goal`` values of constraint slots (those whose ``goal`` value was
#   not empty: a slot with an empty goal value is a request, and its final
#   value is the system's answer); SGD ``INFORM`` values of user turns, the
#   latest per (service, slot) when the user changed it.
# - superseded: values the user stated and later replaced (CrossWOZ ``goal``
#   values that ``final_goal`` changed; SGD earlier ``INFORM`` values of a
#   slot whose canonical value changed), each with what replaced it.
# - assistant facts: values the system turns stated to the user (CrossWOZ
#   ``Inform`` / ``Recommend`` acts; SGD ``OFFER`` / ``INFORM`` /
#   ``INFORM_COUNT`` / ``CONFIRM`` acts — a confirmation states values too,
#   often ones the user never said, such as a default date), each with its
#   ``act``, marked ``from_service`` when the value came from a service
#   result the assistant had. Questions back (``REQUEST``) state nothing.
# - service values (SGD): every value of every ``service_results`` row — tool
#   details that must not turn into user requirements.
#
# A value is kept only where its text is in the message that stated it
# (``mentions``), because what is measured is whether that text reaches the
# next run; values the annotation normalised away from the words
# ("dontcare", "True", "4" for "four") cannot be looked for and are left out.

CONSTRAINT = "constraint"
SUPERSEDED = "superseded"
ASSISTANT = "assistant"
SERVICE = "service"
MIN_VALUE_CHARS = 2  # one character ("是", "2") is found in almost any text


@dataclass(frozen=True)
class Fact:
    kind: str  # CONSTRAINT, SUPERSEDED, ASSISTANT or SERVICE
    value: str  # as the dataset annotates it; ``mentions(text, value)`` finds it in ``message_id``'s text
    message_id: str  # the message that stated it (for a constraint, the latest that did)
    dialogue: str
    domain: str  # CrossWOZ domain or SGD service
    slot: str
    canonical: str = ""  # SGD's canonical value (corrections compare these); CrossWOZ: the value
    replaced_by: str | None = None  # SUPERSEDED: the value that replaced it
    from_service: bool = False  # ASSISTANT: the value is in a service result the assistant had
    act: str = ""  # the dialogue act that stated it (SGD act, CrossWOZ intent)


@dataclass(frozen=True)
class Sample:
    """One ingest document and the facts taken from the dialogues it joins."""

    document: dict
    constraints: tuple[Fact, ...]
    superseded: tuple[Fact, ...]
    assistant_facts: tuple[Fact, ...]
    service_values: tuple[Fact, ...] = ()
    pair_count: int = 0  # the pairs SPEC §4 makes of the document
    # Which dialogue each message of the document comes from, to tell a fact
    # given back in its own dialogue from the same value said in another.
    message_dialogues: dict[str, str] = field(default_factory=dict)


_ASCII_WORD = re.compile(r"[A-Za-z0-9]")


@functools.lru_cache(maxsize=65536)
def _mention_pattern(value: str) -> re.Pattern:
    # Case-insensitive; a value that begins or ends with a letter or digit
    # must not run on into one ("12" is not in "2012", "AA" not in "AAA").
    # Chinese needs no boundaries: its words are not separated.
    head = r"(?<![A-Za-z0-9])" if _ASCII_WORD.match(value[0]) else ""
    tail = r"(?![A-Za-z0-9])" if _ASCII_WORD.match(value[-1]) else ""
    return re.compile(head + re.escape(value) + tail, re.IGNORECASE)


def mentions(text: str, value: str) -> bool:
    """Whether ``text`` says ``value`` (the rule every fact here was kept by)."""
    value = value.strip()
    if len(value) < MIN_VALUE_CHARS:
        return False
    return _mention_pattern(value).search(text) is not None


def values_of(value) -> list[str]:
    items = value if isinstance(value, list) else [value]
    return [v.strip() for v in items if isinstance(v, str) and v.strip()]


def dedupe(facts: list[Fact]) -> tuple[Fact, ...]:
    seen: set[tuple] = set()
    out = []
    for f in facts:
        key = (f.dialogue, f.domain, f.slot, f.value.lower())
        if key not in seen:
            seen.add(key)
            out.append(f)
    return tuple(out)
