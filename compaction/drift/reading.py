"""How the drift checks read notes, messages and tool results (SPEC §8, seed 001 §4).

Pure. ``DriftInput`` is one generation's check input, read once: the note
and its parent parsed into lines, every settled message of the chain in
order, and the answers several checkers share (who gave or withheld a
go-ahead, what was abandoned, which values only tools and the assistant
said, which conditions a line keeps). Every text is read with the scope's
vocabulary (``compaction.handoff.vocabulary``), the words the offline
builder uses too.

Reading rules the checkers share:

- A note line's *own words* are its text without the parenthesised quote;
  its *quotes* are the fragments after ``原话：`` / ``quote:``
  (``compaction.handoff.note``).
- Texts are compared after whitespace normalisation: runs of whitespace are
  one space, and a space touching a non-ASCII character is dropped (Chinese
  carries no word spaces).
- A user message is read clause by clause (split at sentence and clause
  punctuation and at ``：``); a clause that matches ``question`` is a
  question, and a consent, hold or abandonment inside a question
  ("如果我先别提交，会怎样？") is not one. A consent or abandonment right
  after a negation (不同意, "don't forget it") is not one.
- Two texts are *about the same matter* when they share key terms worth at
  least 2: a Latin word, model name or number counts 2, a Chinese
  two-character term counts 1; filler characters (的了吗我你…), single
  digits and the note's own labels (用户, 原话…) are not key terms.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property, wraps
from typing import Iterable

from compaction.handoff import note as notes
from compaction.handoff import vocabulary as v
from compaction.handoff.material import Material, ToolResult

# Share of a condition's key terms a line must hold, besides its operator
# word and every number, to keep the condition.
CONDITION_COVERAGE = 0.6
# Texts read are remembered across checks: the next generation re-reads the
# whole chain, and only its new material is new. Only texts up to
# _MEMO_TEXT characters are kept (a message may be 1 MiB), at most _MEMO
# per function; a full memo starts again empty.
_MEMO = 1 << 16
_MEMO_TEXT = 4096


def _memoised(fn):
    memo: dict[str, object] = {}

    @wraps(fn)
    def read(text: str):
        if len(text) > _MEMO_TEXT:
            return fn(text)
        found = memo.get(text)
        if found is None:
            if len(memo) >= _MEMO:
                memo.clear()
            found = memo[text] = fn(text)
        return found

    return read


# ---------------------------------------------------------------- the chain


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


# ---------------------------------------------------------------- text helpers

_WS = re.compile(r"\s+")
_SPACE_BY_WIDE = re.compile(r" (?=[^\x00-\x7f])|(?<=[^\x00-\x7f]) ")
_EDGE = " \t\n。，,.!！?？；;、：:" + "\"'“”‘’「」『』"
ELLIPSIS = re.compile(r"……|…|\.{3,}")
_CLAUSE_END = re.compile(r"[，。；！？：\n;!?]+|,(?!\d)|:(?!\d)|\.(?=\s|$)")
_LATIN_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9\-_.]*[A-Za-z0-9]|[A-Za-z0-9]")
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_NUMBER = re.compile(r"(?<![\d.])\d[\d,]*(?:\.\d+)?(?![\d])")

# Characters that carry no matter: particles, pronouns, copulas, connectors.
_STOP_CHARS = set("的了吗呢吧啊呀哦嗯哈么嘛啦我你您他她它们是在有这那就也都还和与或及把被给让对从到会能很太再又过着个些其之而且并但一")
# The note's own labels and the ask verbs: they say how a line is written, not what it is about.
_GENERIC = {"用户", "助手", "原话", "暂缓", "放弃", "已放", "当前", "目前", "已经", "需要", "提供", "确认", "告知", "补充",
            "一下", "可以", "现在", "什么", "怎么"}
_EN_STOP = set("""a an the and or but to of in on for with at by from is are was were be been being it its this that
these those i me my mine you your yours we our they their them he she his her do does did done can could would should
will shall may might must have has had not no yes please user users assistant quote what which how when where why who
whether if so just about any some there here then than also too very up out into as all get got want wants wanted
need needs like would let lets ok okay thanks thank hi hello""".split())


@_memoised
def normalise(text: str) -> str:
    """Whitespace normalisation (SPEC §8): runs of whitespace become one
    space; a space touching a non-ASCII character goes."""
    return _SPACE_BY_WIDE.sub("", _WS.sub(" ", text).strip())


def edge_strip(text: str) -> str:
    return text.strip(_EDGE)


@_memoised
def clauses(text: str) -> tuple[str, ...]:
    """``text`` cut at clause and sentence punctuation; each clause keeps a
    closing ``？`` / ``?`` (it tells a question) and loses other trailing
    punctuation."""
    out, start = [], 0
    for match in _CLAUSE_END.finditer(text):
        piece = text[start:match.end()]
        start = match.end()
        question = "?" in match.group() or "？" in match.group()
        piece = piece[:len(piece) - len(match.group())].strip()
        if edge_strip(piece):
            out.append(piece + ("？" if question else ""))
    tail = text[start:].strip()
    if edge_strip(tail):
        out.append(tail)
    return tuple(out)


@_memoised
def terms(text: str) -> frozenset[str]:
    """Key terms of ``text``: Latin words, model names and numbers
    (lower-cased, two characters or more, no stop words) and Chinese
    two-character terms without filler characters or note labels."""
    found = set()
    for token in _LATIN_TOKEN.findall(text):
        token = token.lower()
        if len(token) >= 2 and token not in _EN_STOP:
            found.add(token)
    for run in _CJK_RUN.findall(text):
        for i in range(len(run) - 1):
            bigram = run[i:i + 2]
            if bigram[0] not in _STOP_CHARS and bigram[1] not in _STOP_CHARS and bigram not in _GENERIC:
                found.add(bigram)
    return frozenset(found)


def matter_terms(text: str, vocabulary: "Reader") -> frozenset[str]:
    """Key terms without the consent, hold, abandonment and question phrases
    themselves: "先别提交了" names 提交, "AirPods Max现在多少钱？" names
    AirPods and Max, not 多少."""
    spans = [m.span() for c in (v.CONSENT, v.HOLD, v.ABANDON, v.QUESTION) for m in vocabulary.find_all(c, text)]
    for start, end in sorted(spans, reverse=True):
        text = text[:start] + " " + text[end:]
    return terms(text)


def worth(found: Iterable[str]) -> int:
    """A Latin word or number counts 2, a Chinese two-character term 1."""
    found = tuple(found)
    latin = sum(1 for term in found if term[0].isascii())
    return len(found) + latin


def shared(a: frozenset[str], b: frozenset[str]) -> int:
    return worth(a & b)


def unique_ids(*groups: Iterable[str]) -> tuple[str, ...]:
    seen: list[str] = []
    for group in groups:
        for item in group:
            if item and item not in seen:
                seen.append(item)
    return tuple(seen)


# Values that come from look-ups rather than from the user (SPEC §8
# tool_detail_in_requests): dates, clock times and amounts with a currency
# or unit. Bare numbers and ids are references a request may carry (seed
# 001: keep the order number, look the details up again).
_DATE_FORMS = (
    re.compile(r"(?<!\d)(\d{4})\s*[-/.年]\s*(\d{1,2})\s*[-/.月]\s*(\d{1,2})\s*[日号]?(?!\d)"),
    re.compile(r"(?<![\d年\-/.])()(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]"),
)
_MONTHS = {m: i for i, names in enumerate(
    (("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
     ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
     ("december", "dec")), start=1) for m in names}
_MONTH_NAME = "|".join(sorted(_MONTHS, key=len, reverse=True))
_EN_DATE_FORMS = (
    re.compile(rf"\b({_MONTH_NAME})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b", re.I),
    re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH_NAME})\b", re.I),
)
CLOCK_TIME = re.compile(r"(?<!\d)([01]?\d|2[0-3])[:：]([0-5]\d)(?!\d)")
AMOUNT = re.compile(
    r"[$¥￥]\s?(\d[\d,]*(?:\.\d+)?)"
    r"|(\d[\d,]*(?:\.\d+)?)\s*(?:元|块|美元|人民币|RMB|USD|dollars?|%|％|个工作日|工作日|天|小时|分钟|周|个月)", re.I)
_ID_TOKEN = re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9][A-Za-z0-9\-_/]{3,}(?![A-Za-z0-9])")
_ISO_DATE = re.compile(r"^\d{4}[-/.]\d{1,2}[-/.]\d{1,2}$")


@_memoised
def dates(text: str) -> tuple[tuple[str, tuple[int | None, int, int]], ...]:
    """Each date written in ``text`` with its (year or None, month, day) key."""
    found = []
    for form in _DATE_FORMS:
        for m in form.finditer(text):
            month, day = int(m.group(2)), int(m.group(3))
            if 1 <= month <= 12 and 1 <= day <= 31:
                found.append((m.group().strip(), (int(m.group(1)) if m.group(1) else None, month, day)))
    for i, form in enumerate(_EN_DATE_FORMS):
        for m in form.finditer(text):
            name, day = (m.group(1), m.group(2)) if i == 0 else (m.group(2), m.group(1))
            if 1 <= int(day) <= 31:
                found.append((m.group().strip(), (None, _MONTHS[name.lower()], int(day))))
    return tuple(found)


def same_date(a: tuple[int | None, int, int], b: tuple[int | None, int, int]) -> bool:
    """2026-08-31, 8月31日 and "Aug 31" are one date; 2026-08-31 and
    2027-08-31 (a delivery and a warranty end) are two."""
    return a[1:] == b[1:] and (a[0] is None or b[0] is None or a[0] == b[0])


def number_key(raw: str) -> str:
    return raw.replace(",", "")


@_memoised
def numbers(text: str) -> frozenset[str]:
    return frozenset(number_key(n) for n in _NUMBER.findall(text))


@_memoised
def identifiers(text: str) -> tuple[str, ...]:
    """Ids a done line or a tool result names: four characters or more, a
    digit among them, and a letter, a hyphen or five digits or more (so a
    price such as 1899 is not an id); dates are not ids."""
    out = []
    for token in _ID_TOKEN.findall(text):
        token = token.strip("-_/")
        if (len(token) >= 4 and any(c.isdigit() for c in token) and not _ISO_DATE.match(token)
                and (any(c.isalpha() or c == "-" for c in token) or sum(c.isdigit() for c in token) >= 5)):
            if token not in out:
                out.append(token)
    return tuple(out)


# ---------------------------------------------------------------- reading with the vocabulary

_NEGATION_EN = re.compile(r"\b(don'?t|do not|does not|doesn'?t|did not|didn'?t|not|never)\s+(\w+\s+)?$", re.I)


def _negated(text: str, start: int) -> bool:
    before = text[max(0, start - 16):start]
    return before[-1:] in ("不", "没", "未") or bool(_NEGATION_EN.search(before))


def unnegated(vocabulary: "Reader", category: str, text: str) -> re.Match | None:
    for match in vocabulary.find_all(category, text):
        if not _negated(text, match.start()):
            return match
    return None


_MISSING = object()
_READINGS: dict[int, tuple[v.Vocabulary, dict[str, re.Pattern], dict[tuple, object]]] = {}


def _reading(vocabulary: v.Vocabulary) -> tuple[dict[str, re.Pattern], dict[tuple, object]]:
    """Each category's patterns as one alternation, compiled once per
    vocabulary, and the answers already given for it (kept with the
    vocabulary itself, so an id reused for another is never confused)."""
    cached = _READINGS.get(id(vocabulary))
    if cached is None or cached[0] is not vocabulary:
        if len(_READINGS) > 64:
            _READINGS.clear()
        compiled = {category: re.compile("|".join(f"(?:{p.pattern})" for lang in (notes.ZH, notes.EN)
                                                  for p in by_language.get(lang, ())) or r"(?!)", re.I)
                    for category, by_language in vocabulary.patterns.items()}
        cached = _READINGS[id(vocabulary)] = (vocabulary, compiled, {})
    if len(cached[2]) > 8 * _MEMO:
        cached[2].clear()
    return cached[1], cached[2]


class Reader:
    """The scope's vocabulary, read once per text: a yes/no test is one
    search of the category's patterns joined into one alternation, a match
    is asked of the vocabulary only when that search found something, and
    every answer is kept (one note reads the same clauses many times, and
    the next generation reads the same chain again)."""

    def __init__(self, vocabulary: v.Vocabulary):
        self.vocabulary = vocabulary
        self._any, self._memo = _reading(vocabulary)

    def _kept(self, key: tuple, text: str, compute):
        if len(text) > _MEMO_TEXT:
            return compute()
        found = self._memo.get(key, _MISSING)  # one lookup: another check may clear the memo meanwhile
        if found is _MISSING:
            found = self._memo[key] = compute()
        return found

    def matches(self, category: str, text: str) -> bool:
        return self._kept(("matches", category, text), text, lambda: self._any[category].search(text) is not None)

    def find(self, category: str, text: str) -> re.Match | None:
        if not self.matches(category, text):
            return None
        return self._kept(("find", category, text), text, lambda: self.vocabulary.find(category, text))

    def user(self, message: ChainMessage, order: int) -> "UserReading":
        """The reading of one user message at its place in the chain, kept:
        a chain only grows at its end, so earlier messages read the same."""
        return self._kept(("user", message.id, message.pair_index, message.text, order), message.text,
                          lambda: UserReading(message, order, self))

    def find_all(self, category: str, text: str) -> list[re.Match]:
        if not self.matches(category, text):
            return []
        return self._kept(("find_all", category, text), text, lambda: self.vocabulary.find_all(category, text))


@dataclass
class UserReading:
    """A user message read once: its kinds of clauses and its key terms."""

    message: ChainMessage
    order: int
    vocabulary: Reader

    @cached_property
    def clauses(self) -> tuple[str, ...]:
        return clauses(self.message.text)

    def _clause_with(self, category: str, *, negatable: bool) -> tuple[str, re.Match] | None:
        if not self.vocabulary.matches(category, self.message.text):
            return None
        for clause in self.clauses:
            if self.vocabulary.matches(v.QUESTION, clause):
                continue
            match = (unnegated(self.vocabulary, category, clause) if negatable
                     else self.vocabulary.find(category, clause))
            if match:
                return clause, match
        return None

    @cached_property
    def hold(self) -> tuple[str, re.Match] | None:
        return self._clause_with(v.HOLD, negatable=False)

    @cached_property
    def consent(self) -> tuple[str, re.Match] | None:
        found = self._clause_with(v.CONSENT, negatable=True)
        # A clause that gives and holds at once ("我同意，但先别提交" is two
        # clauses; "同意但暂缓" one) is a hold.
        if found and self.vocabulary.matches(v.HOLD, found[0]):
            return None
        return found

    @cached_property
    def abandon(self) -> tuple[str, re.Match] | None:
        return self._clause_with(v.ABANDON, negatable=True)

    @property
    def state(self) -> str | None:
        """``hold`` or ``consent`` when the message changes a go-ahead; a hold wins."""
        return "hold" if self.hold else ("consent" if self.consent else None)

    @cached_property
    def own_terms(self) -> frozenset[str]:
        """The matter the message names (``matter_terms``)."""
        return matter_terms(self.message.text, self.vocabulary)

    @cached_property
    def terms(self) -> frozenset[str]:
        return terms(self.message.text)

    @cached_property
    def normal(self) -> str:
        return normalise(self.message.text)

    @cached_property
    def asking_clauses(self) -> list[str]:
        """Clauses that ask for something to be done: a request, direct
        request or consent that is not a mere question (a direct request
        counts even when phrased as a question)."""
        out = []
        for clause in self.clauses:
            direct = self.vocabulary.matches(v.DIRECT_REQUEST, clause)
            question = self.vocabulary.matches(v.QUESTION, clause)
            if direct or (not question and (self.vocabulary.matches(v.REQUEST, clause)
                                            or unnegated(self.vocabulary, v.CONSENT, clause))):
                out.append(clause)
        return out

    @cached_property
    def asks_question(self) -> bool:
        return any(self.vocabulary.matches(v.QUESTION, c) for c in self.clauses)

    @cached_property
    def statement_clauses(self) -> list[str]:
        """Clauses that say something rather than only ask: not a question,
        or a direct request phrased as one."""
        return [c for c in self.clauses
                if not self.vocabulary.matches(v.QUESTION, c) or self.vocabulary.matches(v.DIRECT_REQUEST, c)]


@dataclass(eq=False)
class LineReading:
    """A note line read once: its own words, its quotes, and what the
    checkers compare (normalised text, key terms, numbers)."""

    section: str
    number: int
    text: str
    own: str  # the line's own words, without its quote
    quotes: tuple[str, ...]

    @cached_property
    def full(self) -> str:
        return self.own + " " + " ".join(self.quotes)

    @cached_property
    def normal(self) -> str:
        return normalise(self.full)

    @cached_property
    def lower(self) -> str:
        return self.normal.lower()

    @cached_property
    def terms(self) -> frozenset[str]:
        return terms(self.full)

    @cached_property
    def numbers(self) -> frozenset[str]:
        return numbers(self.normal)


def read_lines(note: notes.Note) -> list[LineReading]:
    out = []
    for line in note.lines:
        if notes.is_none_line(line.text):
            continue
        out.append(LineReading(line.section, line.number, line.text, notes.without_quote(line.text),
                         tuple(notes.quotes(line.text))))
    return out


@dataclass(frozen=True)
class Condition:
    """A user condition: the clause that states it, its operator word (the
    constraint phrase), its numbers and key terms, and where it came from."""

    clause: str
    operator: str
    numbers: frozenset[str]
    terms: frozenset[str]
    message_id: str | None
    order: int  # chain order of the stating message; -1 for a parent's
    section: str  # where a note should keep it
    is_hold: bool


class DriftInput:
    """One generation's check input, read once and shared by the checkers."""

    def __init__(self, *, note: str, parent: str | None, material: Material, chain: ChainHistory,
                 vocabulary: v.Vocabulary):
        self.text = notes.extract_summary(note)
        self.note = notes.parse(self.text)
        self.parent_text = notes.extract_summary(parent) if parent is not None else None
        self.parent = notes.parse(self.parent_text) if self.parent_text is not None else None
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
        self.users = [self.vocabulary.user(m, i) for i, m in enumerate(
            sorted(users.values(), key=lambda m: m.pair_index))]
        self.assistants = sorted(assistants.values(), key=lambda m: m.pair_index)
        self.tools = sorted(tools.values(), key=lambda t: t.pair_index)
        self.material_user_ids = {p.user_id for p in material.pairs}
        self.lines = read_lines(self.note)
        self.parent_lines = read_lines(self.parent) if self.parent else []
        self.headings = notes.heading_lines(self.text)
        self._resumed: dict[int, bool] = {}

    # -- what the user said

    @cached_property
    def user_corpus(self) -> str:
        return "\x00".join(u.normal for u in self.users)

    @cached_property
    def questions_by_term(self) -> dict[str, list[UserReading]]:
        """User messages that ask a question, by key term: the question
        proof looks at the messages sharing a line's terms, not at all."""
        index: dict[str, list[UserReading]] = {}
        for user in self.users:
            if user.asks_question:
                for term in user.terms:
                    index.setdefault(term, []).append(user)
        # A term half the conversation uses (寄修, AirPods) tells no message apart.
        common = max(20, len(self.users) // 20)
        return {term: users for term, users in index.items() if len(users) <= common}

    def said_by_user(self, words: str) -> bool:
        words = edge_strip(normalise(words))
        return bool(words) and words in self.user_corpus

    def users_saying(self, words: str) -> list[UserReading]:
        words = edge_strip(normalise(words))
        if not words or words not in self.user_corpus:
            return []
        return [u for u in self.users if words in u.normal]

    @cached_property
    def user_date_keys(self) -> set[tuple[int | None, int, int]]:
        return {key for u in self.users for _, key in dates(u.message.text)}

    @cached_property
    def user_numbers(self) -> set[str]:
        return {n for u in self.users for n in numbers(u.message.text)}

    @cached_property
    def user_clock_times(self) -> set[str]:
        return {f"{int(h)}:{m}" for u in self.users for h, m in CLOCK_TIME.findall(u.message.text)}

    def user_said_value(self, kind: str, key) -> bool:
        if kind == "date":
            return any(same_date(key, said) for said in self.user_date_keys)
        if kind == "time":
            return key in self.user_clock_times
        if kind == "amount":
            return key in self.user_numbers
        return key in self.user_corpus.lower()

    @cached_property
    def _value_index(self) -> tuple[list[tuple[str, str]], dict]:
        """The texts that are not the user's (tool results, then assistant
        answers, in chain order) and the dates, times and numbers each holds."""
        texts = [(t.message_id, t.text) for t in self.tools] + [(m.id, m.text) for m in self.assistants]
        index: dict[tuple[str, object], list[str]] = {}
        for message_id, text in texts:
            for _, key in dates(text):
                index.setdefault(("date", key[1:]), []).append(message_id)
            for h, m in CLOCK_TIME.findall(text):
                index.setdefault(("time", f"{int(h)}:{m}"), []).append(message_id)
            for n in numbers(text):
                index.setdefault(("amount", n), []).append(message_id)
        return texts, index

    def value_sources(self, kind: str, key) -> list[str]:
        """The tool results and assistant answers that hold a value."""
        texts, index = self._value_index
        if kind == "word":
            return [message_id for message_id, text in texts if key in text.lower()]
        if kind == "date":
            candidates = unique_ids(index.get(("date", key[1:]), ()))
            return [i for i in candidates if any(same_date(key, k) for _, k in dates(self._text_of[i]))]
        return list(unique_ids(index.get((kind, key), ())))

    @cached_property
    def _text_of(self) -> dict[str, str]:
        return {message_id: text for message_id, text in self._value_index[0]}

    @cached_property
    def asking_terms(self) -> list[frozenset[str]]:
        """The key terms of every user clause that asks for something to be done."""
        return [terms(clause) for user in self.users for clause in user.asking_clauses]

    @cached_property
    def user_by_id(self) -> dict[str, UserReading]:
        return {u.message.id: u for u in self.users}

    @cached_property
    def events(self) -> list[UserReading]:
        """User messages that give or withhold a go-ahead, in chain order."""
        return [u for u in self.users if u.state]

    def after(self, message: UserReading) -> list[UserReading]:
        return self.users[message.order + 1:]

    def previous(self, message: UserReading) -> UserReading | None:
        return self.users[message.order - 1] if message.order > 0 else None

    def final_state(self, start: UserReading, matter: frozenset[str]) -> tuple[str, UserReading]:
        """The go-ahead state of a matter after ``start``: each later consent
        or hold that names the matter (shared key terms worth 2) changes it,
        and so does the next consent or hold right after the last change when
        it names no matter of its own ("先别提交了")."""
        state, last = start.state or "consent", start
        for event in self.events:
            if event.order <= start.order:
                continue
            nearest = next((e for e in self.events if e.order > last.order), None)
            if shared(event.own_terms, matter) >= 2 or (event is nearest and worth(event.own_terms) < 2):
                state, last = event.state, event
        return state, last

    # -- abandonments

    @cached_property
    def abandons(self) -> list[tuple[UserReading, frozenset[str], frozenset[str]]]:
        """Each abandonment, the key terms its clause names itself and the
        terms borrowed from the user's previous message when the clause
        names no matter ("先不买新的了" after "AirPods Max现在多少钱？")."""
        out = []
        for user in self.users:
            if not user.abandon:
                continue
            clause, match = user.abandon
            named = terms(clause[:match.start()] + " " + clause[match.end():])
            previous = self.previous(user)
            borrowed = previous.own_terms if not named and previous is not None else frozenset()
            out.append((user, named, borrowed))
        return out

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

    def resumed(self, abandon: UserReading, named: frozenset[str], borrowed: frozenset[str]) -> bool:
        """A later user message asks for the dropped matter again."""
        key = abandon.order
        if key not in self._resumed:
            self._resumed[key] = any(
                not user.abandon and user.asking_clauses and self.about_dropped(user.own_terms, named, borrowed)
                for user in self.after(abandon) if self.about_dropped(user.terms, named, borrowed))
        return self._resumed[key]

    # -- tools

    def succeeded(self, result: ToolResult) -> bool:
        if result.ok is not None:
            return result.ok
        return self.vocabulary.matches(v.SUCCESS, result.text) and not self.vocabulary.matches(v.FAILURE, result.text)

    def failed(self, result: ToolResult) -> bool:
        if result.ok is not None:
            return not result.ok
        return self.vocabulary.matches(v.FAILURE, result.text)

    def proves(self, result: ToolResult, ident: str) -> bool:
        """A successful result proves an id it returned: one not in the
        call's arguments, or one it echoes while reporting a change
        (``cancelled``, ``已取消``); a look-up that echoes the order number
        proves nothing was done."""
        if not self.succeeded(result) or ident not in result.text:
            return False
        return ident not in result.arguments or self.vocabulary.matches(v.SUCCESS, result.text)

    # -- conditions

    def conditions_in(self, text: str, *, message_id: str | None, order: int, section: str) -> list[Condition]:
        out = []
        for clause in clauses(text):
            if self.vocabulary.matches(v.QUESTION, clause) or unnegated(self.vocabulary, v.ABANDON, clause):
                continue
            match = self.vocabulary.find(v.CONSTRAINT, clause)
            if not match:
                continue
            out.append(Condition(clause=clause, operator=match.group(), numbers=frozenset(numbers(clause)),
                                  terms=terms(clause), message_id=message_id, order=order, section=section,
                                  is_hold=self.vocabulary.matches(v.HOLD, clause)))
        return out

    def as_condition(self, clause: str, match: re.Match) -> Condition:
        """A consent, hold or abandonment clause read as a condition keyed by
        its phrase, to ask whether a note keeps it."""
        return Condition(clause=clause, operator=match.group(), numbers=frozenset(numbers(clause)),
                          terms=terms(clause), message_id=None, order=-1, section=notes.REQUESTS,
                          is_hold=self.vocabulary.matches(v.HOLD, clause))

    @staticmethod
    def keeps(line: LineReading, condition: Condition) -> bool:
        """A line keeps a condition when it holds the clause verbatim, or its
        operator word, every number of it and most of its key terms."""
        if normalise(condition.operator).lower() not in line.lower:
            return False  # the verbatim clause holds its operator too
        if edge_strip(normalise(condition.clause)) in line.normal:
            return True
        if not condition.numbers <= line.numbers:
            return False
        wanted = condition.terms - condition.numbers
        if not wanted:
            return True
        return worth(wanted & line.terms) >= CONDITION_COVERAGE * worth(wanted)

    def kept_anywhere(self, lines: list[LineReading], condition: Condition) -> bool:
        return any(self.keeps(line, condition) for line in lines)

    @cached_property
    def parent_terms(self) -> frozenset[str]:
        return terms(self.parent_text or "")
