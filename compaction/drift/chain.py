"""What the chain has settled, indexed for the drift checks and extended
generation by generation (SPEC §8: every generation is checked against
everything the chain settled so far).

Pure. A chain only grows at its end, so generation *k* reads the messages
generation *k−1* read plus its own material. ``chain_index`` keeps, per
scope vocabulary and chain, the index of the last chain it saw; when the
new chain starts with exactly those messages (same ids, texts and results),
each part of the new index is built from the old one's part and the new
messages only — copied, never changed, so a check still holding the old
index reads what it read. A part is built when a check first asks for it;
one the last index never built, and any other chain (an edit, a re-check
of an old generation), is built from every message. The answers are the
same either way; only the work differs.

The parts: the user messages by key term (a rule about a term looks at the
messages sharing it; those that ask a question, apart), the user, assistant and
tool corpora (one search for a quote; lower-cased too, for tool wording), the
texts among the tool results and assistant answers that write a digit other
than 0-9, the values the user said, the go-ahead events and the abandonments.
Which tool results and assistant answers hold a value (a date, a clock time,
an amount: ``tool_detail_in_requests``) is read for each value asked about,
and kept with the number of texts read, like ``resumed``.
"""

from __future__ import annotations

import re
from operator import attrgetter
from typing import Callable

from compaction.handoff import values
from compaction.handoff.material import ToolResult
from compaction.handoff.reader import Reader
from compaction.handoff.reading import key_terms, normalise, numbers

from .corpus import Corpus
from .reading import ChainMessage, UserReading

# Chains remembered per vocabulary. A chain's generations are checked one
# after another (the engine writes them in order; ``check_drift`` recomputes
# a conversation's in order), so the last two chains cover a worker that
# checks one conversation while another's generation comes in. Each holds
# every message of its chain, read — some 2,800 objects for 900 user
# messages (a reading, its message, its key terms), 2 to 4 ms of every full
# garbage collection (issue 14) — so eight kept mostly chains that would
# never be asked for again.
_KEEP = 2


class ChainIndex:
    """The index of one chain's settled messages (see the module doc)."""

    def __init__(self, users: list[UserReading], tools: list[ToolResult], keys: tuple[tuple, tuple, tuple],
                 base: "ChainIndex | None" = None):
        # The assistant answers are read from their keys, (id, pair, text):
        # tuples of strings and numbers, which the collector stops walking,
        # where each kept message object was walked by every full
        # collection (issue 14).
        self.users, self.tools, self.keys = users, tools, keys
        self.assistants = keys[1]
        self._base = base
        self._parts: dict[str, object] = {}
        # Whether each abandonment (by its user's chain order) was asked for
        # again, with the number of users read: a copy of the base's, read
        # on from there (``DriftInput.resumed``).
        self.resumed: dict[int, tuple[int, bool]] = dict(base.resumed) if base is not None else {}
        # The tool results and assistant answers holding each value asked
        # for, with the number of each read: a copy of the base's, read on
        # from there (``holding_value``).
        self.values_held: dict[tuple, tuple[int, int, tuple[int, ...], tuple[int, ...]]] = (
            dict(base.values_held) if base is not None else {})

    def part(self, name, spec=None):
        """The index part ``name`` (``_PARTS``, or ``spec``: its (empty,
        extend) pair), built once, from the base's when the base has it."""
        found = self._parts.get(name)
        if found is None:
            empty, extend = spec if spec is not None else _PARTS[name]
            base = self._base
            if base is not None and name in base._parts:
                found = extend(base._parts[name], self, len(base.users), len(base.keys[1]), len(base.tools))
            else:
                found = extend(empty(), self, 0, 0, 0)
            self._parts[name] = found
        return found

    def per_assistant(self, name: str, read: Callable[[str], tuple]) -> tuple[tuple[str, tuple], ...]:
        """``(id, read(text))`` of every assistant answer whose reading is not
        empty, in chain order: a rule about every answer (an ask the assistant
        made) reads the answers since the base's, not the chain's 900 again
        each generation. ``read`` depends on the text alone, one function per
        ``name``; built from the base's like every part."""

        def extend(old: tuple, index: "ChainIndex", _users_from: int, assistants_from: int, _tools_from: int):
            return old + tuple((id_, answer) for id_, _, text in index.assistants[assistants_from:]
                               for answer in (read(text),) if answer)

        return self.part(("per assistant", name), (tuple, extend))

    def holding_value(self, kind: str, key) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The chain orders of the tool results, and of the assistant answers,
        whose text holds the value ``(kind, key)`` (``values.dates`` — a key
        (month, day) or (year or None, month, day) —, ``clock_times``,
        ``reading.numbers``). Read for the value asked about, not for every
        value of every text: a generation's check asks about a few values,
        where reading every value of its 100 new answers and tool results
        was some 6M instructions of each worst-case and typical check of
        ``bench/drift.py`` (callgrind: the checks 3.3M and 4.6M fewer
        reading the values asked about). Only the texts that write the
        value's digits are read (``_holds_value``); each answer is kept with
        the number of texts read, and a longer chain reads only the texts
        since."""
        held = self.values_held.get((kind, key))
        tools_from, assistants_from, in_tools, in_assistants = held if held is not None else (0, 0, (), ())
        if tools_from < len(self.tools) or assistants_from < len(self.assistants):
            in_tools += _holding(kind, key, [r.text for r in self.tools[tools_from:]], tools_from,
                                 self.part("tools_other_digits"))
            in_assistants += _holding(kind, key, [text for _, _, text in self.assistants[assistants_from:]],
                                      assistants_from, self.part("assistants_other_digits"))
            self.values_held[(kind, key)] = (len(self.tools), len(self.assistants), in_tools, in_assistants)
        return in_tools, in_assistants

    def forget_base(self) -> None:
        """Parts not built yet are built from every message (the base goes, so
        a chain of indexes does not keep every generation alive)."""
        self._base = None

    users_by_term = property(lambda self: self.part("users_by_term"))
    questions_by_term = property(lambda self: self.part("questions_by_term"))
    question_masks = property(lambda self: self.part("question_masks"))
    user_corpus = property(lambda self: self.part("user_corpus"))
    assistant_corpus = property(lambda self: self.part("assistant_corpus"))
    tool_corpus = property(lambda self: self.part("tool_corpus"))
    assistant_lower = property(lambda self: self.part("assistant_lower"))
    tool_lower = property(lambda self: self.part("tool_lower"))
    user_date_keys = property(lambda self: self.part("user_date_keys"))
    user_numbers = property(lambda self: self.part("user_numbers"))
    user_clock_times = property(lambda self: self.part("user_clock_times"))
    events = property(lambda self: self.part("events"))
    abandons = property(lambda self: self.part("abandons"))
    abandons_by_term = property(lambda self: self.part("abandons_by_term"))


def _extended(index: dict, pairs) -> dict:
    """``index`` (key → tuple) with ``pairs`` appended, as a new dict whose
    changed entries are new tuples: ``index`` itself stays as it was. Tuples
    of strings and numbers, not lists: the collector stops walking them (and
    the dict holding only them) after they survive one collection, where
    each list was walked by every full collection (issue 14)."""
    added: dict = {}
    for key, item in pairs:
        found = added.get(key)
        if found is None:
            added[key] = [item]
        else:
            found.append(item)
    out = dict(index)
    for key, items in added.items():
        out[key] = out.get(key, ()) + tuple(items)
    return out


# A digit ``\d`` reads that is not one of 0-9 (a full-width ３, an Arabic-Indic
# ٣): a date's day written with one is not found by its digits' search.
_OTHER_DIGIT = re.compile(r"(?![0-9])\d")


def _other_digits(texts: list[str], first: int) -> frozenset[int]:
    """The orders (``first`` on) of ``texts`` that write a digit other than
    0-9 — usually none, found by one search of them all."""
    if not _OTHER_DIGIT.search("\n".join(texts)):
        return frozenset()
    return frozenset(first + i for i, text in enumerate(texts) if _OTHER_DIGIT.search(text))


def _holds_value(kind: str, key, text: str) -> bool:
    """Whether ``text`` holds the value: what ``values.dates`` (a date's key
    with its year, or without it: its month and day), ``values.clock_times``
    or ``reading.numbers`` read in it, asked only of a text that writes the
    value's digits — a day's (the day of 08-05 is 5, written 5 or 05), a clock
    time's minutes, or an amount's, its thousands separators aside."""
    if kind == "date":
        return any((dated[1:] if len(key) == 2 else dated) == key for _, dated in values.dates(text))
    if kind == "time":
        return any(said == key for _, said in values.clock_times(text))
    if kind == "amount":
        return key in numbers(text)
    return False


def _digits_of(kind: str, key) -> str:
    """What a text holding the value writes (see ``_holds_value``)."""
    if kind == "date":
        return str(key[-1])
    if kind == "time":
        return key.split(":")[-1]
    return key if kind == "amount" else ""


def _holding(kind: str, key, texts: list[str], first: int, other_digits: frozenset[int]) -> tuple[int, ...]:
    """The orders (``first`` on) of ``texts`` that hold the value; a text
    writing other digits (``_OTHER_DIGIT``) is read whatever it writes."""
    digits = _digits_of(kind, key)
    out = []
    for i, text in enumerate(texts, start=first):
        written = text.replace(",", "") if kind == "amount" and "," in text else text
        if (digits in written or i in other_digits) and _holds_value(kind, key, text):
            out.append(i)
    return tuple(out)


def _question_masks(old: dict, index: ChainIndex, users_from: int, *_) -> dict:
    """``old`` with the questioning users from ``users_from`` on: per key
    term, an integer holding a 1 in the byte of each questioning user's
    chain order that holds the term (``DriftInput.closest_question`` adds
    them up, one byte a count)."""
    out = dict(old)
    for user in index.users[users_from:]:
        if user.asks_question:
            bit = 1 << (8 * user.order)
            for term in user.terms:
                out[term] = out.get(term, 0) | bit
    return out


def _abandon(users: list[UserReading], user: UserReading) -> tuple[UserReading, frozenset[str], frozenset[str]]:
    """An abandonment, the key terms its clause names itself and the terms
    borrowed from the user's previous message when the clause names no
    matter ("先不买新的了" after "AirPods Max现在多少钱？")."""
    clause, match = user.abandon
    named = key_terms(clause[:match.start()] + " " + clause[match.end():])
    previous = users[user.order - 1] if user.order > 0 else None
    borrowed = previous.own_terms if not named and previous is not None else frozenset()
    return user, named, borrowed


def _abandons_by_term(old: dict, index: ChainIndex, users_from: int, *_) -> dict:
    """``old`` with the abandonments of the users from ``users_from`` on
    (indices into ``abandons``), by the terms a text must share to be about
    them (``about_dropped`` needs one at least)."""
    abandons = index.abandons
    first = len(abandons) - sum(1 for user in index.users[users_from:] if user.abandon)
    return _extended(old, ((term, i) for i in range(first, len(abandons))
                           for term in abandons[i][1] or abandons[i][2]))


# name: (the empty part, how a part grows by the messages after the given starts)
_PARTS: dict[str, tuple[Callable, Callable]] = {
    "users_by_term": (dict, lambda old, ix, u, a, t: _extended(
        old, ((term, user.order) for user in ix.users[u:] for term in user.terms))),
    "questions_by_term": (dict, lambda old, ix, u, a, t: _extended(
        old, ((term, user.order) for user in ix.users[u:] if user.asks_question for term in user.terms))),
    "question_masks": (dict, _question_masks),
    "user_corpus": (lambda: Corpus([]), lambda old, ix, u, a, t: old.extended([user.normal for user in ix.users[u:]])),
    "assistant_corpus": (lambda: Corpus([]), lambda old, ix, u, a, t: old.extended(
        [normalise(text) for _, _, text in ix.assistants[a:]])),
    "tool_corpus": (lambda: Corpus([]), lambda old, ix, u, a, t: old.extended(
        [normalise(r.text) for r in ix.tools[t:]])),
    "assistant_lower": (lambda: Corpus([]), lambda old, ix, u, a, t: old.extended(
        [text.lower() for _, _, text in ix.assistants[a:]])),
    "tool_lower": (lambda: Corpus([]), lambda old, ix, u, a, t: old.extended([r.text.lower() for r in ix.tools[t:]])),
    "assistants_other_digits": (frozenset, lambda old, ix, u, a, t: old | _other_digits(
        [text for _, _, text in ix.assistants[a:]], a)),
    "tools_other_digits": (frozenset, lambda old, ix, u, a, t: old | _other_digits([r.text for r in ix.tools[t:]], t)),
    "user_date_keys": (frozenset, lambda old, ix, u, a, t: old | {
        key for user in ix.users[u:] for _, key in values.dates(user.message.text)}),
    "user_numbers": (frozenset, lambda old, ix, u, a, t: old | {
        n for user in ix.users[u:] for n in numbers(user.message.text)}),
    "user_clock_times": (frozenset, lambda old, ix, u, a, t: old | {
        key for user in ix.users[u:] for _, key in values.clock_times(user.message.text)}),
    "events": (list, lambda old, ix, u, a, t: old + [user for user in ix.users[u:] if user.state]),
    "abandons": (list, lambda old, ix, u, a, t: old + [_abandon(ix.users, user) for user in ix.users[u:]
                                                      if user.abandon]),
    "abandons_by_term": (dict, _abandons_by_term),
}


# A message's key, (id, pair, text), and a tool result's, (id, pair, text,
# arguments, ok): read by ``attrgetter`` in C. The keys of a 900-message
# chain are made anew every generation (ChainHistory is new each time), and
# a generator building each tuple in Python was some 0.3 ms of a
# generation's check (issue 14).
_MESSAGE_KEY = attrgetter("id", "pair_index", "text")
_TOOL_KEY = attrgetter("message_id", "pair_index", "text", "arguments", "ok")


def chain_keys(users: list[ChainMessage], assistants: list[ChainMessage],
               tools: list[ToolResult]) -> tuple[tuple, tuple, tuple]:
    """The keys a chain is told from another by: its user messages', its
    assistant answers' and its tool results', each in chain order."""
    return tuple(map(_MESSAGE_KEY, users)), tuple(map(_MESSAGE_KEY, assistants)), tuple(map(_TOOL_KEY, tools))


def chain_index(reader: Reader, users: list[UserReading], tools: list[ToolResult],
                keys: tuple[tuple, tuple, tuple]) -> ChainIndex:
    """The index of a chain (``users`` read, ``keys`` its ``chain_keys``),
    built from the last index of the same chain when this chain extends it
    (see the module doc)."""
    name = _name(keys[0][0][0] if keys[0] else None)
    remembered = reader.remembered(name)
    base = None
    if remembered is not None and all(len(now) >= len(then) and now[:len(then)] == then
                                      for now, then in zip(keys, remembered.keys)):
        if all(len(now) == len(then) for now, then in zip(keys, remembered.keys)):
            return remembered
        base = remembered
        base.forget_base()
    index = ChainIndex(users, tools, keys, base)
    reader.remember(name, index, limit=_KEEP)
    return index


def _name(first_user_id: str | None) -> tuple:
    return ("chain index", first_user_id)


def remembered_chain(reader: Reader, first_user_id: str | None) -> ChainIndex | None:
    """The last index remembered of the chain whose first user message is
    ``first_user_id`` (it may be shorter, longer or another version of it)."""
    return reader.remembered(_name(first_user_id))
