"""One generation's drift-check input, read once and shared by the
checkers (SPEC §8, seed 001 §4).

Pure. ``DriftInput`` holds the note and its parent parsed into lines, every
settled message of the chain in order, and the answers several checkers
share: who gave or withheld a go-ahead and what it is now (the latest
consent or hold about a matter wins), what was abandoned and whether it was
asked for again, which values only tools and the assistant said, which
tool results prove an id, which conditions the user stated and whether a
line keeps them (``compaction.handoff.reading.keeps``).
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import Counter
from dataclasses import replace
from operator import attrgetter

from compaction.handoff import note as notes
from compaction.handoff import results
from compaction.handoff import vocabulary as v
from compaction.handoff.material import Material, ToolResult
from compaction.handoff.reader import Reader
from compaction.handoff.reader import forget_readings as reader_forget_readings
from compaction.handoff.reading import (
    TermsOf, edge_strip, key_terms, keeps, normalise, read_once, shared, unique, worth,
)
from compaction.handoff.values import same_date

from .chain import chain_index, chain_keys, remembered_chain
from .corpus import Corpus
from .reading import ChainHistory, ChainMessage, Condition, LineReading, UserReading, clauses, read_lines


class DriftInput:
    """One generation's check input, read once and shared by the checkers."""

    def __init__(self, *, note: str, parent: str | None, material: Material, chain: ChainHistory,
                 vocabulary: v.Vocabulary):
        self.text = notes.extract_summary(note)
        self.lines, self.headings = _read_note(self.text)
        self.parent_text = notes.extract_summary(parent) if parent is not None else None
        self.parent_lines = _read_note(self.parent_text)[0] if self.parent_text is not None else []
        self.material = material
        self.vocabulary = Reader(vocabulary)
        users = {m.id: m for m in chain.user_messages}
        assistants = {m.id: m for m in chain.assistant_messages}
        tools = {t.message_id: t for t in chain.tool_results}
        for pair in material.pairs:
            users.setdefault(pair.user_id, ChainMessage(pair.user_id, pair.index, pair.user_text))
            assistants.setdefault(pair.assistant_id, ChainMessage(pair.assistant_id, pair.index, pair.assistant_text))
        for result in material.tool_results:
            tools.setdefault(result.message_id, result)
        # Chain order is pair order (one user message and one answer per pair).
        user_messages = sorted(users.values(), key=_pair_index)
        self.assistants = sorted(assistants.values(), key=_pair_index)
        self.tools = sorted(tools.values(), key=_pair_index)
        keys = chain_keys(user_messages, self.assistants, self.tools)
        self.users = _user_readings(self.vocabulary, user_messages, keys[0])
        self.material_user_ids = {p.user_id for p in material.pairs}
        self._line_corpora: dict[int, tuple[list[LineReading], Corpus]] = {}
        self.chain = chain_index(self.vocabulary, self.users, self.tools, keys)

    # -- what the user said

    @read_once
    def user_corpus(self) -> Corpus:
        return self.chain.user_corpus

    def not_the_users(self, words: str) -> list[str]:
        """The assistant answers, then the tool results, that hold ``words``."""
        return ([self.assistants[i].id for i in self.chain.assistant_corpus.holding(words)]
                + [self.tools[i].message_id for i in self.chain.tool_corpus.holding(words)])

    def closest_user(self, words: str) -> UserReading | None:
        """The user message closest to ``words`` (``Corpus.closest``)."""
        index = self.user_corpus.closest(words)
        return self.users[index] if index is not None else None

    @read_once
    def users_by_term(self) -> dict[str, tuple[int, ...]]:
        """The chain order of the user messages holding each key term: a rule
        about a term looks at the messages that share it, not at all."""
        return self.chain.users_by_term

    def questions_with(self, term: str) -> tuple[int, ...]:
        """The user messages that ask a question and hold ``term`` (chain
        order); none for a term so common it tells no message apart (寄修,
        AirPods: more than a twentieth of the chain, and at least 20). The
        chain index keeps the questioning messages by term, extended
        generation by generation."""
        found = self._questions_by_term.get(term, ())
        return found if len(found) <= self._question_limit else ()

    @read_once
    def _questions_by_term(self) -> dict[str, tuple[int, ...]]:
        return self.chain.questions_by_term

    @read_once
    def _question_limit(self) -> int:
        return max(20, len(self.users) // 20)

    def closest_question(self, terms: frozenset[str]) -> int | None:
        """The chain order of the user's question that shares the most worth
        of ``terms`` (a Latin word or number worth 2, a Chinese term 1;
        ``questions_with`` each), at least 2, the latest on ties; None when
        none shares that much.

        Counted as integers, one byte per question (``ChainIndex.question_masks``):
        the masks of the terms, each times its worth, add up to every
        question's count in its byte — no byte carries into the next while
        the worths add up to 255 at most — and the highest count held, from
        the most possible down, is found by one byte search from the end,
        which gives the latest question holding it. A line of the bench's
        worst-case note shares 14 terms and some 110 orders: a ``Counter`` of
        them and the search for the latest of the highest were 105,000
        instructions at the ninth generation (callgrind), these 56,000: the
        worst-case check 1.4M instructions less per generation on average,
        the masks built as the chain grows counted (issue 14). A line sharing
        more worth than a byte holds is counted by ``_closest_counted``."""
        by_term, masks, limit = self._questions_by_term, self._question_masks, self._question_limit
        total = worth = 0
        for term in terms:
            orders = by_term.get(term)
            if orders and len(orders) <= limit:  # ``questions_with``, inlined
                total += masks[term]
                worth += 1
                if term[0].isascii():  # a Latin word or number is worth 2: added twice (no multiplication)
                    total += masks[term]
                    worth += 1
        if worth > 255:
            return self._closest_counted(terms)
        counts = total.to_bytes(len(self.users), "little")
        for top in range(worth, 1, -1):
            order = counts.rfind(top)
            if order != -1:
                return order
        return None

    def _closest_counted(self, terms: frozenset[str]) -> int | None:
        """``closest_question`` counted term by term (``Counter``)."""
        found: list[int] = []
        for term in terms:
            orders = self.questions_with(term)
            found += orders
            if orders and term[0].isascii():
                found += orders
        if not found:
            return None
        score = Counter(found)
        top = max(score.values())
        return max(order for order, count in score.items() if count == top) if top >= 2 else None

    @read_once
    def _question_masks(self) -> dict[str, int]:
        return self.chain.question_masks

    def said_by_user(self, words: str) -> bool:
        words = edge_strip(normalise(words))
        return bool(words) and words in self.user_corpus

    def users_saying(self, words: str) -> list[UserReading]:
        return [self.users[i] for i in self.user_corpus.holding(edge_strip(normalise(words)))]

    def user_said_value(self, kind: str, key) -> bool:
        if kind == "date":
            return any(same_date(key, said) for said in self.chain.user_date_keys)
        if kind == "time":
            return key in self.chain.user_clock_times
        if kind == "amount":
            return key in self.chain.user_numbers
        return key in self.user_corpus_lower

    @read_once
    def user_corpus_lower(self) -> str:
        return self.user_corpus.joined.lower()

    def value_sources(self, kind: str, key) -> list[str]:
        """The tool results, then the assistant answers, that hold a value."""
        if kind == "word":
            return ([self.tools[i].message_id for i in self._tool_lower.holding(key)]
                    + [self.assistants[i].id for i in self._assistant_lower.holding(key)])
        if kind == "date":  # the texts holding the day, in a year that is the same date (``same_date``)
            found = unique(self._holding_value(kind, key[1:]))
            if key[0] is None:
                return list(found)
            same = set(self._holding_value(kind, key)) | set(self._holding_value(kind, (None, *key[1:])))
            return [i for i in found if i in same]
        return list(unique(self._holding_value(kind, key)))

    def _holding_value(self, kind: str, key) -> list[str]:
        """The tool results, then the assistant answers, holding a value key
        (``ChainIndex.holding_value``)."""
        in_tools, in_assistants = self.chain.holding_value(kind, key)
        return [self.tools[i].message_id for i in in_tools] + [self.assistants[i].id for i in in_assistants]

    @read_once
    def _tool_lower(self) -> Corpus:
        return self.chain.tool_lower

    @read_once
    def _assistant_lower(self) -> Corpus:
        return self.chain.assistant_lower

    def per_assistant(self, name: str, read) -> tuple[tuple[str, tuple], ...]:
        """``(id, read(text))`` of the assistant answers whose reading is not
        empty, in chain order (``ChainIndex.per_assistant``: kept with the
        chain, read on from the last generation's)."""
        return self.chain.per_assistant(name, read)

    def user_asked_for(self, terms: frozenset[str]) -> bool:
        """Some clause of a user message that asks for something to be done
        (``UserReading.asking_clauses``) shares key terms worth 2 with
        ``terms``. A clause's key terms are some of its message's (a clause
        is a slice of the message cut at punctuation), so only the messages
        that share terms worth 2 with ``terms`` can hold one, and only their
        clauses' roles are read — not those of every message of the chain
        (some 1 ms of a generation's check, issue 14)."""
        by_term = self.users_by_term
        for order in sorted({order for term in terms for order in by_term.get(term, ())}):
            user = self.users[order]
            if shared(user.terms, terms) >= 2 and any(
                    shared(key_terms(clause), terms) >= 2 for clause in user.asking_clauses):
                return True
        return False

    @read_once
    def user_by_id(self) -> dict[str, UserReading]:
        return {u.message.id: u for u in self.users}

    @read_once
    def events(self) -> list[UserReading]:
        """User messages that give or withhold a go-ahead, in chain order."""
        return self.chain.events

    def final_state(self, start: UserReading, matter: frozenset[str]) -> tuple[str, UserReading]:
        """The go-ahead state of a matter after ``start``: each later consent
        or hold that names the matter (shared key terms worth 2) changes it,
        and so does the next consent or hold right after the last change when
        it names no matter of its own ("先别提交了")."""
        state, last = start.state or "consent", start
        events = self.events  # in chain order: the event after ``last`` is the next one in the list
        first = bisect_right(events, start.order, key=_order)
        nearest = first
        for i in range(first, len(events)):
            event = events[i]
            if shared(event.own_terms, matter) >= 2 or (i == nearest and worth(event.own_terms) < 2):
                state, last, nearest = event.state, event, i + 1
        return state, last

    # -- abandonments

    @read_once
    def abandons(self) -> list[tuple[UserReading, frozenset[str], frozenset[str]]]:
        """Each abandonment, the key terms its clause names itself and the
        terms borrowed from the user's previous message when the clause
        names no matter ("先不买新的了" after "AirPods Max现在多少钱？")."""
        return self.chain.abandons

    @staticmethod
    def about_dropped(found: frozenset[str], named: frozenset[str], borrowed: frozenset[str]) -> bool:
        """Whether a text is about a dropped matter: it shares what the
        abandoning clause named (worth 2, or its one term when it names only
        one), or two distinct terms of the message before a clause that
        named nothing (one shared product name is not enough: the repair and
        the dropped purchase are both AirPods)."""
        if named:
            return shared(found, named) >= min(2, worth(named))
        return len(found & borrowed) >= 2

    def resumes(self, user: UserReading) -> bool:
        """``user`` asks again for a matter an earlier message abandoned."""
        return bool(not user.abandon and user.asking_clauses and any(
            self.about_dropped(user.own_terms, named, borrowed)
            for abandoner, named, borrowed in self.abandons if abandoner.order < user.order))

    @read_once
    def _abandons_by_term(self) -> dict[str, tuple[int, ...]]:
        return self.chain.abandons_by_term

    @read_once
    def _abandon_terms(self) -> frozenset[str]:
        """The terms some abandonment is about (a text's other terms lead to none)."""
        return frozenset(self._abandons_by_term)

    def latest_dropped(self, found: frozenset[str]):
        """The latest abandonment a text with key terms ``found`` is about
        whose matter was not asked for again (``resumed``), or None. Read
        from the latest back, stopping at the first: the abandonments sharing
        a term with the text, not every one of them."""
        by_term, abandons = self._abandons_by_term, self.abandons
        for i in sorted({i for term in found & self._abandon_terms for i in by_term[term]}, reverse=True):
            abandon = abandons[i]
            if self.about_dropped(found, abandon[1], abandon[2]) and not self.resumed(*abandon):
                return abandon
        return None

    def resumed(self, abandon: UserReading, named: frozenset[str], borrowed: frozenset[str]) -> bool:
        """A later user message asks for the dropped matter again."""
        # Once asked again, always: the chain index keeps each answer with the
        # number of users it read, and a longer chain reads only the users since.
        memo, n = self.chain.resumed, len(self.users)
        known = memo.get(abandon.order)
        if known is not None and (known[1] or known[0] == n):
            return known[1]
        after = max(abandon.order + 1, known[0] if known is not None else 0)
        by_term = self.users_by_term  # each term's users in chain order: read from ``after`` on
        later = sorted({order for term in named or borrowed
                        for orders in (by_term.get(term, ()),) for order in orders[bisect_left(orders, after):]})
        found = any(
            not user.abandon and user.asking_clauses and self.about_dropped(user.own_terms, named, borrowed)
            for user in (self.users[order] for order in later) if self.about_dropped(user.terms, named, borrowed))
        memo[abandon.order] = (n, found)
        return found

    # -- tools

    def succeeded(self, result: ToolResult) -> bool:
        return results.outcome(result, self.vocabulary) is True

    def failed(self, result: ToolResult) -> bool:
        return results.outcome(result, self.vocabulary) is False

    def proves(self, result: ToolResult, ident: str) -> bool:
        """``compaction.handoff.results.proves``: the builder's done rule."""
        return results.proves(result, ident, self.vocabulary)

    # -- conditions

    def conditions_in(self, text: str, *, message_id: str | None, order: int, section: str) -> list[Condition]:
        """The user conditions ``text`` states: its clauses that match
        ``constraint``, not a question, not an abandonment."""
        out = []
        for clause in clauses(text):
            read = self.vocabulary.kept("condition", clause, lambda: self._condition(clause))
            if read is not None:
                out.append(replace(read, message_id=message_id, order=order, section=section))
        return out

    def _condition(self, clause: str) -> Condition | None:
        if self.vocabulary.matches(v.QUESTION, clause) or self.vocabulary.unnegated(v.ABANDON, clause):
            return None
        match = self.vocabulary.find(v.CONSTRAINT, clause)
        if not match:
            return None
        return Condition.of(clause, match, is_hold=self.vocabulary.matches(v.HOLD, clause))

    def as_condition(self, clause: str, match: re.Match) -> Condition:
        """A consent, hold or abandonment clause read as a condition keyed by
        its phrase, to ask whether a note keeps it."""
        return Condition.of(clause, match, is_hold=self.vocabulary.matches(v.HOLD, clause))

    def kept_anywhere(self, lines: list[LineReading], condition: Condition) -> bool:
        """Whether any of ``lines`` keeps ``condition``; only the lines holding
        its operator word can (``reading.keeps``), so only they are read."""
        entry = self._line_corpora.get(id(lines))
        if entry is None or entry[0] is not lines:
            entry = self._line_corpora[id(lines)] = (lines, Corpus([line.lower for line in lines]))
        corpus = entry[1]
        return any(keeps(lines[i], condition) for i in corpus.holding(normalise(condition.operator).lower()))

    @read_once
    def parent_terms(self) -> TermsOf:
        """The parent note's key terms, asked one by one (``reading.TermsOf``)."""
        return TermsOf(self.parent_text or "")


_order = attrgetter("order")
_pair_index = attrgetter("pair_index")  # a key read in C (some 2,700 calls of a lambda per generation)

# The last notes read (text -> its line readings, its heading lines): a
# generation's note is the next one's parent, read once for both (the note,
# its parent and one more; each some 400 objects a full garbage collection
# walks, issue 14: the parsed note itself is not kept). The readings depend
# on the note's text alone and are never changed.
_NOTES: dict[str, tuple] = {}
_NOTES_KEPT = 3


def forget_readings() -> None:
    """Forget every note, chain and text read so far (``reader.forget_readings``
    and the notes kept here): the next check reads everything afresh and
    finds the same."""
    _NOTES.clear()
    reader_forget_readings()


def _read_note(text: str) -> tuple:
    found = _NOTES.get(text)
    if found is None:
        _, lines, headings = notes.scan(text)
        found = (read_lines(lines), headings)
        while len(_NOTES) >= _NOTES_KEPT:
            _NOTES.pop(next(iter(_NOTES)), None)
        _NOTES[text] = found
    return found


def _user_readings(reader: Reader, messages: list[ChainMessage], keys: tuple[tuple, ...]) -> list[UserReading]:
    """The readings of the chain's user messages (``keys`` their keys,
    ``chain.chain_keys``), in chain order. A reading depends on its message
    and its place alone, and a chain only grows at its end: the readings the
    last index of this chain holds at the same place (same key: id, pair and
    text) are taken again, the others read anew. So readings live as long as
    the chains remembered (``chain._KEEP``), not in the memo of every text
    read, where each was an object a full garbage collection walks (issue
    14). The keys are compared as tuples, in C, all at once when the chain
    grew at its end (the usual case), place by place otherwise."""
    index = remembered_chain(reader, keys[0][0] if keys else None)
    known, known_keys = (index.users, index.keys[0]) if index is not None else ([], ())
    n = min(len(known), len(messages))
    if keys[:n] == known_keys[:n]:
        out = known[:n]
    else:
        out = [known[order] if keys[order] == known_keys[order] else UserReading(messages[order], order, reader)
               for order in range(n)]
    out += [UserReading(messages[order], order, reader) for order in range(n, len(messages))]
    return out
