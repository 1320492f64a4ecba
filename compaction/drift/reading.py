"""How the drift checks read a chain: its messages, a note's lines and the
user's conditions (SPEC §8, seed 001 §4).

Pure. The text rules themselves — normalisation, key terms, identifiers,
negation, what a line keeps — are ``compaction.handoff.reading``, shared
with the offline builder; this module applies them to the checks' inputs:

- ``ChainHistory``: every settled message of the chain up to the cut;
- ``UserReading``: one user message read once — its clauses, the clause
  that gives a go-ahead, holds it or abandons a matter (a consent, hold or
  abandonment inside a question, "如果我先别提交，会怎样？", is not one;
  nor one right after a negation), its key terms and matter terms;
- ``LineReading``: a note line's *own words* (its text without the
  parenthesised quote) and its *quotes* (the fragments after ``原话：`` /
  ``quote:``, ``compaction.handoff.note``);
- ``Condition``: a user condition to be kept (``reading.Phrase``) and where
  it came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from compaction.handoff import note as notes
from compaction.handoff import vocabulary as v
from compaction.handoff.material import Material, ToolResult
from compaction.handoff import clauses as cl
from compaction.handoff.clauses import classify, cut as clauses
from compaction.handoff.reader import Reader
from compaction.handoff.reading import Holding, Phrase, attributes_known, key_terms, negated, normalise, read_once

ELLIPSIS = re.compile(r"……|…|\.{3,}")


@dataclass(frozen=True)
class ChainMessage:
    """One settled message of the chain: its id, the pair it belongs to, its text."""

    id: str
    pair_index: int
    text: str


@dataclass(frozen=True)
class ChainHistory:
    """Everything the chain has settled up to this generation's cut: the user
    messages (for verbatim quotes and what the user said), the assistant
    answers (restatements, asks) and the tool results (proof of done items,
    where tool details come from) of pairs ``0 … material.to_pair``.
    ``check_note`` adds the material's own messages, so a history that
    stops at the parent's cut gives the same findings."""

    user_messages: tuple[ChainMessage, ...] = ()
    assistant_messages: tuple[ChainMessage, ...] = ()
    tool_results: tuple[ToolResult, ...] = ()

    @classmethod
    def from_materials(cls, materials: Iterable[Material]) -> "ChainHistory":
        """The history of a chain whose generations were written from
        ``materials``, in chain order."""
        users, assistants, tools = [], [], []
        for material in materials:
            for pair in material.pairs:
                users.append(ChainMessage(pair.user_id, pair.index, pair.user_text))
                assistants.append(ChainMessage(pair.assistant_id, pair.index, pair.assistant_text))
            tools.extend(material.tool_results)
        return cls(tuple(users), tuple(assistants), tuple(tools))


@attributes_known()
@dataclass
class UserReading:
    """A user message read once: its kinds of clauses and its key terms."""

    message: ChainMessage
    order: int
    vocabulary: Reader

    @read_once
    def clauses(self) -> tuple[str, ...]:
        return clauses(self.message.text)

    @read_once
    def roles(self) -> tuple[tuple[str, str], ...]:
        """Each clause with its one role (``compaction.handoff.clauses.classify``,
        the builder's reading): a hold, consent or abandonment asked as a
        question is a question (so is one that supposes, followed by the
        question: ``clauses.supposed``), a negated consent a hold."""
        roles = cl.supposed(self.clauses, [classify(clause, self.vocabulary)[0] for clause in self.clauses],
                            self.vocabulary)
        return tuple(zip(self.clauses, roles))

    def _first(self, role: str) -> str | None:
        return next((clause for clause, r in self.roles if r == role), None)

    @read_once
    def hold(self) -> tuple[str, re.Match] | None:
        if not (self.vocabulary.matches(v.HOLD, self.message.text)
                or self.vocabulary.matches(v.CONSENT, self.message.text)):
            return None
        clause = self._first(cl.HOLD)
        if clause is None:
            return None
        match = self.vocabulary.find(v.HOLD, clause) or next(
            m for m in self.vocabulary.find_all(v.CONSENT, clause) if negated(clause, m.start()))
        return clause, match

    @read_once
    def consent(self) -> tuple[str, re.Match] | None:
        if not self.vocabulary.matches(v.CONSENT, self.message.text):
            return None
        clause = self._first(cl.CONSENT)
        return (clause, self.vocabulary.unnegated(v.CONSENT, clause)) if clause is not None else None

    @read_once
    def abandon(self) -> tuple[str, re.Match] | None:
        if not self.vocabulary.matches(v.ABANDON, self.message.text):
            return None
        clause = self._first(cl.ABANDON)
        return (clause, self.vocabulary.unnegated(v.ABANDON, clause)) if clause is not None else None

    @property
    def state(self) -> str | None:
        """``hold`` or ``consent`` when the message changes a go-ahead; a hold wins."""
        return "hold" if self.hold else ("consent" if self.consent else None)

    @read_once
    def own_terms(self) -> frozenset[str]:
        """The matter the message names (``matter_terms``)."""
        return self.vocabulary.matter_terms(self.message.text)

    @read_once
    def terms(self) -> frozenset[str]:
        return key_terms(self.message.text)

    @read_once
    def normal(self) -> str:
        return normalise(self.message.text)

    @read_once
    def asking_clauses(self) -> tuple[str, ...]:
        """Clauses that ask for something to be done: a request (a direct
        request counts even when phrased as a question) or a consent."""
        return tuple(clause for clause, role in self.roles if role in (cl.REQUEST, cl.CONSENT))

    @read_once
    def questions(self) -> tuple[bool, ...]:
        """Whether each clause's role is a question (``clauses.is_question``:
        the role, without reading the rest of it). A clause without a
        question phrase is none, found by its one search: the direct-request
        search ``is_question`` makes as well is left to the clauses that
        have one (a generation's 100 new user messages were some 300 clause
        searches fewer; callgrind, ``bench/drift.py``)."""
        reader = self.vocabulary
        return tuple(reader.matches(v.QUESTION, clause) and cl.is_question(clause, reader) for clause in self.clauses)

    @read_once
    def asks_question(self) -> bool:
        return any(self.questions)

    @read_once
    def statement_clauses(self) -> tuple[str, ...]:
        """Clauses that say something rather than only ask: every clause that
        is not a question (a direct request phrased as one is a request)."""
        return tuple(clause for clause, question in zip(self.clauses, self.questions) if not question)


@attributes_known("held", "section", "number", "text", "own", "quotes")
class LineReading(Holding):
    """A note line read once: its own words, its quotes, and what ``keeps``
    compares (the own words and quotes together: normalised, key terms,
    numbers)."""

    def __init__(self, section: str, number: int, text: str, own: str, quotes: tuple[str, ...]):
        # Without a quote a line holds its own words alone: the same text as
        # ``own``, whose key terms a checker reads too (one reading for both).
        super().__init__(own + " " + " ".join(quotes) if quotes else own)
        self.section = section
        self.number = number
        self.text = text
        self.own = own  # the line's own words, without its quote
        self.quotes = quotes

    @read_once
    def marked_hold(self) -> bool:
        """The line starts with the hold marker (``暂缓：`` / ``On hold:``)."""
        return notes.is_hold(self.text)

    @read_once
    def marked_abandoned(self) -> bool:
        """The line starts with the abandoned marker (``已放弃：`` / ``Abandoned:``)."""
        return notes.is_abandoned(self.text)


def read_lines(lines: Iterable[tuple[str, int, str]]) -> list[LineReading]:
    """The readings of a note's lines, ``(section, number, text)`` as
    ``notes.scan`` gives them, the ``无`` / ``none`` placeholders left out."""
    return [LineReading(section, number, text, own, tuple(fragments))
            for section, number, text in lines if not notes.is_none_line(text)
            for own, fragments in (notes.split_quote(text),)]


@dataclass(frozen=True)
class Condition(Phrase):
    """A user condition (the clause, its operator word — the constraint,
    consent, hold or abandon phrase — its numbers and key terms) and where
    it came from."""

    message_id: str | None = None
    order: int = -1  # chain order of the stating message; -1 for a parent's
    section: str = notes.REQUESTS  # where a note should keep it
    is_hold: bool = False
