"""Drift checks of a rolling hand-off note: lost, wrong and extra content, and
growth without new matters (SPEC §8; seed 001 §4 "走样有三种：丢、错、多",
and its table "交接单该装什么").

Pure and deterministic: no model, no database, the same findings for the
same input. ``check_note`` runs one small checker per finding code over a
note, its parent note, the generation's material and everything the chain
has settled so far (``ChainHistory``), reading every text with the one
shared vocabulary (``compaction.handoff.vocabulary``) that the offline
builder uses too. Length and content are checked separately (seed 001: a
withdrawn consent is sixty characters lost in thousands; a dropped "only"
makes the note shorter), so ``growth_without_new_matters`` looks at length
and the material only, and the other checkers never look at length.

Shared reading rules (each checker's docstring gives its own rule):

- A note line's *own words* are its text without the parenthesised quote;
  its *quotes* are the fragments after ``原话：`` / ``quote:``
  (``compaction.handoff.note``).
- Texts are compared after whitespace normalisation: runs of whitespace are
  one space, and a space touching a non-ASCII character is dropped (Chinese
  carries no word spaces).
- A user message is read clause by clause (split at sentence and clause
  punctuation); a clause that matches ``question`` is a question, and a
  consent, hold or abandonment inside a question ("如果我先别提交，会怎样？")
  is not one. A consent or abandonment right after a negation (不同意,
  "don't forget it") is not one.
- Two texts are *about the same matter* when they share key terms worth at
  least 2: a Latin word, model name or number counts 2, a Chinese
  two-character term counts 1; filler characters (的了吗我你…), single
  digits and the note's own labels (用户, 原话…) are not key terms.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import cached_property, wraps
from typing import Callable, Iterable

from compaction.handoff import note as notes
from compaction.handoff import vocabulary as v
from compaction.handoff.material import Material, ToolResult

WRONG, EXTRA, LOST, LENGTH = "wrong", "extra", "lost", "length"

QUOTE_NOT_VERBATIM = "quote_not_verbatim"
RETRACTED_CONSENT = "retracted_consent"
ABANDONED_UNMARKED = "abandoned_unmarked"
DONE_WITHOUT_PROOF = "done_without_proof"
TOOL_DETAIL_IN_REQUESTS = "tool_detail_in_requests"
QUESTION_AS_REQUIREMENT = "question_as_requirement"
ASSISTANT_ASK_AS_TODO = "assistant_ask_as_todo"
LOST_CONSTRAINT = "lost_constraint"
GROWTH_WITHOUT_NEW_MATTERS = "growth_without_new_matters"

# Each code and its kind, in the order of SPEC §8's table.
CODES: dict[str, str] = {
    QUOTE_NOT_VERBATIM: WRONG,
    RETRACTED_CONSENT: WRONG,
    ABANDONED_UNMARKED: WRONG,
    DONE_WITHOUT_PROOF: WRONG,
    TOOL_DETAIL_IN_REQUESTS: EXTRA,
    QUESTION_AS_REQUIREMENT: EXTRA,
    ASSISTANT_ASK_AS_TODO: EXTRA,
    LOST_CONSTRAINT: LOST,
    GROWTH_WITHOUT_NEW_MATTERS: LENGTH,
}

# The note may not grow at all without a new matter (seed 001: "新记录里没有
# 新事项、新条件或新限制时，摘要不比上一代长").
GROWTH_TOLERANCE_CHARS = 0
# Share of a condition's key terms a line must hold, besides its operator
# word and every number, to keep the condition.
CONDITION_COVERAGE = 0.6
# Key-term worth of a user statement's new terms that makes it a new matter.
NEW_MATTER_WORTH = 3
DETAIL_QUOTE_CHARS = 60
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


# ---------------------------------------------------------------- input / output


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


@dataclass(frozen=True)
class Finding:
    """One drift finding. ``line`` is a 1-based line number of the note text
    after ``<summary>`` unwrapping (``NoteLine.number``); a ``lost``
    finding points at the heading of the section that should have kept it;
    ``growth_without_new_matters`` is about the whole note (``section`` and
    ``line`` None). ``subject`` is the words the finding is about (a quote,
    a value, a condition, the two lengths)."""

    kind: str
    code: str
    section: str | None
    line: int | None
    message_ids: tuple[str, ...]
    detail: str
    subject: str = ""

    def as_dict(self) -> dict:
        return {"kind": self.kind, "code": self.code, "section": self.section, "line": self.line,
                "message_ids": list(self.message_ids), "detail": self.detail, "subject": self.subject}

    def sort_key(self) -> tuple:
        section = notes.SECTIONS.index(self.section) if self.section in notes.SECTIONS else len(notes.SECTIONS)
        return (self.line if self.line is not None else 10**9, section, list(CODES).index(self.code),
                self.subject, self.message_ids)


# ---------------------------------------------------------------- text helpers

_WS = re.compile(r"\s+")
_SPACE_BY_WIDE = re.compile(r" (?=[^\x00-\x7f])|(?<=[^\x00-\x7f]) ")
_EDGE = " \t\n。，,.!！?？；;、：:" + "\"'“”‘’「」『』"
_ELLIPSIS = re.compile(r"……|…|\.{3,}")
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


def _edge_strip(text: str) -> str:
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
        if _edge_strip(piece):
            out.append(piece + ("？" if question else ""))
    tail = text[start:].strip()
    if _edge_strip(tail):
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


def matter_terms(text: str, vocabulary: "_Reader") -> frozenset[str]:
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


def _short(text: str, limit: int = DETAIL_QUOTE_CHARS) -> str:
    text = normalise(text)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _ids(*groups: Iterable[str]) -> tuple[str, ...]:
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
_TIME = re.compile(r"(?<!\d)([01]?\d|2[0-3])[:：]([0-5]\d)(?!\d)")
_AMOUNT = re.compile(
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


def _number_key(raw: str) -> str:
    return raw.replace(",", "")


@_memoised
def numbers(text: str) -> frozenset[str]:
    return frozenset(_number_key(n) for n in _NUMBER.findall(text))


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


def _unnegated(vocabulary: "_Reader", category: str, text: str) -> re.Match | None:
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


class _Reader:
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

    def user(self, message: ChainMessage, order: int) -> "_UserMessage":
        """The reading of one user message at its place in the chain, kept:
        a chain only grows at its end, so earlier messages read the same."""
        return self._kept(("user", message.id, message.pair_index, message.text, order), message.text,
                          lambda: _UserMessage(message, order, self))

    def find_all(self, category: str, text: str) -> list[re.Match]:
        if not self.matches(category, text):
            return []
        return self._kept(("find_all", category, text), text, lambda: self.vocabulary.find_all(category, text))


@dataclass
class _UserMessage:
    """A user message read once: its kinds of clauses and its key terms."""

    message: ChainMessage
    order: int
    vocabulary: _Reader

    @cached_property
    def clauses(self) -> tuple[str, ...]:
        return clauses(self.message.text)

    def _clause_with(self, category: str, *, negatable: bool) -> tuple[str, re.Match] | None:
        if not self.vocabulary.matches(category, self.message.text):
            return None
        for clause in self.clauses:
            if self.vocabulary.matches(v.QUESTION, clause):
                continue
            match = (_unnegated(self.vocabulary, category, clause) if negatable
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
                                            or _unnegated(self.vocabulary, v.CONSENT, clause))):
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
class _Line:
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


def _lines(note: notes.Note) -> list[_Line]:
    out = []
    for line in note.lines:
        if notes.is_none_line(line.text):
            continue
        out.append(_Line(line.section, line.number, line.text, notes.without_quote(line.text),
                         tuple(notes.quotes(line.text))))
    return out


@dataclass(frozen=True)
class _Condition:
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
        self.vocabulary = _Reader(vocabulary)
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
        self.lines = _lines(self.note)
        self.parent_lines = _lines(self.parent) if self.parent else []
        self.headings = notes.heading_lines(self.text)
        self._resumed: dict[int, bool] = {}

    # -- what the user said

    @cached_property
    def user_corpus(self) -> str:
        return "\x00".join(u.normal for u in self.users)

    @cached_property
    def questions_by_term(self) -> dict[str, list[_UserMessage]]:
        """User messages that ask a question, by key term: the question
        proof looks at the messages sharing a line's terms, not at all."""
        index: dict[str, list[_UserMessage]] = {}
        for user in self.users:
            if user.asks_question:
                for term in user.terms:
                    index.setdefault(term, []).append(user)
        # A term half the conversation uses (寄修, AirPods) tells no message apart.
        common = max(20, len(self.users) // 20)
        return {term: users for term, users in index.items() if len(users) <= common}

    def said_by_user(self, words: str) -> bool:
        words = _edge_strip(normalise(words))
        return bool(words) and words in self.user_corpus

    def users_saying(self, words: str) -> list[_UserMessage]:
        words = _edge_strip(normalise(words))
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
        return {f"{int(h)}:{m}" for u in self.users for h, m in _TIME.findall(u.message.text)}

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
            for h, m in _TIME.findall(text):
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
            candidates = _ids(index.get(("date", key[1:]), ()))
            return [i for i in candidates if any(same_date(key, k) for _, k in dates(self._text_of[i]))]
        return list(_ids(index.get((kind, key), ())))

    @cached_property
    def _text_of(self) -> dict[str, str]:
        return {message_id: text for message_id, text in self._value_index[0]}

    @cached_property
    def asking_terms(self) -> list[frozenset[str]]:
        """The key terms of every user clause that asks for something to be done."""
        return [terms(clause) for user in self.users for clause in user.asking_clauses]

    @cached_property
    def user_by_id(self) -> dict[str, _UserMessage]:
        return {u.message.id: u for u in self.users}

    @cached_property
    def events(self) -> list[_UserMessage]:
        """User messages that give or withhold a go-ahead, in chain order."""
        return [u for u in self.users if u.state]

    def after(self, message: _UserMessage) -> list[_UserMessage]:
        return self.users[message.order + 1:]

    def previous(self, message: _UserMessage) -> _UserMessage | None:
        return self.users[message.order - 1] if message.order > 0 else None

    def final_state(self, start: _UserMessage, matter: frozenset[str]) -> tuple[str, _UserMessage]:
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
    def abandons(self) -> list[tuple[_UserMessage, frozenset[str], frozenset[str]]]:
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

    def resumed(self, abandon: _UserMessage, named: frozenset[str], borrowed: frozenset[str]) -> bool:
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

    def conditions_in(self, text: str, *, message_id: str | None, order: int, section: str) -> list[_Condition]:
        out = []
        for clause in clauses(text):
            if self.vocabulary.matches(v.QUESTION, clause) or _unnegated(self.vocabulary, v.ABANDON, clause):
                continue
            match = self.vocabulary.find(v.CONSTRAINT, clause)
            if not match:
                continue
            out.append(_Condition(clause=clause, operator=match.group(), numbers=frozenset(numbers(clause)),
                                  terms=terms(clause), message_id=message_id, order=order, section=section,
                                  is_hold=self.vocabulary.matches(v.HOLD, clause)))
        return out

    def as_condition(self, clause: str, match: re.Match) -> _Condition:
        """A consent, hold or abandonment clause read as a condition keyed by
        its phrase, to ask whether a note keeps it."""
        return _Condition(clause=clause, operator=match.group(), numbers=frozenset(numbers(clause)),
                          terms=terms(clause), message_id=None, order=-1, section=notes.REQUESTS,
                          is_hold=self.vocabulary.matches(v.HOLD, clause))

    @staticmethod
    def keeps(line: _Line, condition: _Condition) -> bool:
        """A line keeps a condition when it holds the clause verbatim, or its
        operator word, every number of it and most of its key terms."""
        if normalise(condition.operator).lower() not in line.lower:
            return False  # the verbatim clause holds its operator too
        if _edge_strip(normalise(condition.clause)) in line.normal:
            return True
        if not condition.numbers <= line.numbers:
            return False
        wanted = condition.terms - condition.numbers
        if not wanted:
            return True
        return worth(wanted & line.terms) >= CONDITION_COVERAGE * worth(wanted)

    def kept_anywhere(self, lines: list[_Line], condition: _Condition) -> bool:
        return any(self.keeps(line, condition) for line in lines)

    @cached_property
    def parent_terms(self) -> frozenset[str]:
        return terms(self.parent_text or "")

    def finding(self, code: str, *, section: str | None, line: int | None, message_ids: Iterable[str],
                detail: str, subject: str = "") -> Finding:
        return Finding(kind=CODES[code], code=code, section=section, line=line, message_ids=_ids(message_ids),
                       detail=detail, subject=subject)


# ---------------------------------------------------------------- the checkers


def check_quote_not_verbatim(d: DriftInput) -> list[Finding]:
    """wrong / quote_not_verbatim — every fragment a line quotes after
    ``原话：`` / ``quote:`` must be a verbatim substring, after whitespace
    normalisation, of some user message of the chain. Quotation marks and
    punctuation at the fragment's edges are not part of it, and a fragment
    elided with ``……`` / ``...`` is checked piece by piece. Proof: the
    assistant message or tool result that holds the words when they are not
    the user's, else the user message closest to them."""
    out = []
    for line in d.lines:
        for fragment in line.quotes:
            pieces = [p for p in _ELLIPSIS.split(fragment) if _edge_strip(normalise(p))]
            if all(d.said_by_user(p) for p in pieces):
                continue
            words = _edge_strip(normalise(fragment))
            elsewhere = [m.id for m in d.assistants if words and words in normalise(m.text)]
            elsewhere += [t.message_id for t in d.tools if words and words in normalise(t.text)]
            if elsewhere:
                ids = elsewhere[:3]
                detail = (f"The note quotes the user as saying “{_short(fragment)}”, but these are the assistant's "
                          f"or a tool's words ({', '.join(ids)}), not the user's.")
            else:
                closest = _closest_user_message(d, words)
                ids = [closest.message.id] if closest else []
                detail = (f"The note quotes the user as saying “{_short(fragment)}”, but no user message contains "
                          f"these words.")
                if closest:
                    detail += f" The closest ({closest.message.id}) says “{_short(closest.message.text)}”."
            out.append(d.finding(QUOTE_NOT_VERBATIM, section=line.section, line=line.number, message_ids=ids,
                                 detail=detail, subject=fragment))
    return out


def _closest_user_message(d: DriftInput, words: str) -> _UserMessage | None:
    """The user message sharing the longest run of characters with
    ``words`` (at least a third of them, two or more); the earliest on ties."""
    best, best_size = None, max(2, len(words) // 3)
    for user in d.users:
        text = normalise(user.message.text)
        size = difflib.SequenceMatcher(None, words, text, autojunk=False).find_longest_match(
            0, len(words), 0, len(text)).size
        if size > best_size or (best is None and size == best_size):
            best, best_size = user, size
    return best


_CONSENT_SECTIONS = (notes.REQUESTS, notes.TODOS, notes.NEXT_STEP, notes.PROGRESS)


def check_retracted_consent(d: DriftInput) -> list[Finding]:
    """wrong / retracted_consent — a line of user requests, to-dos, next step
    or progress that states a consent or go-ahead (in its own words or its
    quote; not a hold line, and not a line that records the hold itself) is
    wrong when the user's state for that consent is now *hold*. The consent
    is the quoted user message (the latest one holding a quoted consent
    fragment), or for an unquoted line the latest consenting user message
    about the same matter. Every later user consent or hold about the same
    matter changes the state (see ``DriftInput.final_state``); a consent
    restated after the hold makes the line current again. Proof: the
    consent and the hold."""
    out = []
    for line in d.lines:
        if line.section not in _CONSENT_SECTIONS or notes.is_hold(line.text) or notes.is_abandoned(line.text):
            continue
        if d.vocabulary.matches(v.HOLD, line.own):
            continue
        quoted = [q for q in line.quotes if _unnegated(d.vocabulary, v.CONSENT, q)]
        if not quoted and not _unnegated(d.vocabulary, v.CONSENT, line.own):
            continue
        line_terms = line.terms
        anchor = None
        for fragment in quoted:
            saying = d.users_saying(fragment)
            if saying and (anchor is None or saying[-1].order > anchor.order):
                anchor = saying[-1]
        if anchor is None:
            candidates = [e for e in d.events if e.consent and shared(e.own_terms, line_terms) >= 2]
            anchor = candidates[-1] if candidates else None
        if anchor is None:
            continue
        state, last = d.final_state(anchor, line_terms | anchor.terms)
        if state != "hold":
            continue
        consent_words = (anchor.consent or anchor.hold)[0]
        hold_words = last.hold[0] if last.hold else last.message.text
        out.append(d.finding(
            RETRACTED_CONSENT, section=line.section, line=line.number,
            message_ids=[anchor.message.id, last.message.id], subject=consent_words,
            detail=(f"This line still gives the user's go-ahead (“{_short(consent_words)}”, {anchor.message.id}), "
                    f"but the user withdrew or put it on hold later (“{_short(hold_words)}”, {last.message.id}) "
                    f"and has not given it again.")))
    return out


_MATTER_SECTIONS = (notes.REQUESTS, notes.TODOS, notes.NEXT_STEP)


def check_abandoned_unmarked(d: DriftInput) -> list[Finding]:
    """wrong / abandoned_unmarked — a line of user requests, to-dos or next
    step about a matter the user abandoned (an abandonment clause of a user
    message, not negated, not a question; its matter is the clause's own
    key terms, or the user's previous message when the clause names none)
    is wrong unless it is marked: it starts ``已放弃：`` / ``Abandoned:`` or
    its words or quote say the abandonment. A matter the user asked for
    again later (a request or consent about it) is not abandoned. Proof:
    the abandoning message."""
    out = []
    for line in d.lines:
        if line.section not in _MATTER_SECTIONS or notes.is_abandoned(line.text):
            continue
        if any(_unnegated(d.vocabulary, v.ABANDON, t) for t in (line.own, *line.quotes)):
            continue
        line_terms = line.terms
        dropped = [user for user, named, borrowed in d.abandons
                   if d.about_dropped(line_terms, named, borrowed) and not d.resumed(user, named, borrowed)]
        if not dropped:
            continue
        user = dropped[-1]
        words = user.abandon[0]
        out.append(d.finding(
            ABANDONED_UNMARKED, section=line.section, line=line.number, message_ids=[user.message.id],
            subject=words,
            detail=(f"The user dropped this matter (“{_short(words)}”, {user.message.id}), but the line still lists "
                    f"it without marking it abandoned with the user's words.")))
    return out


def check_done_without_proof(d: DriftInput) -> list[Finding]:
    """wrong / done_without_proof — each line under done must name an id
    (``identifiers``) that a successful tool result of the chain returned
    (``DriftInput.proves``: the result reports success — ``ok`` or its
    wording — and returned the id, or echoes it while reporting a change).
    A done line without any id, or whose ids no such result returned, is
    wrong. Proof: the failed results about its ids, else the results that
    mention them."""
    out = []
    for line in d.lines:
        if line.section != notes.DONE:
            continue
        idents = identifiers(line.own)
        if any(d.proves(result, ident) for ident in idents for result in d.tools):
            continue
        mentioning = [t for t in d.tools if any(i in t.text or i in t.arguments for i in idents)]
        failed = [t for t in mentioning if d.failed(t)]
        if not idents:
            detail = "This done item names no id, so no tool result can confirm it was done."
        else:
            detail = (f"No successful tool result returned {', '.join(idents)}; done lists only what a tool "
                      f"confirmed, with the id it returned.")
            if failed:
                detail += f" The call {failed[-1].call_id} ({failed[-1].tool}) failed: “{_short(failed[-1].text)}”."
        out.append(d.finding(DONE_WITHOUT_PROOF, section=line.section, line=line.number,
                             message_ids=[t.message_id for t in (failed or mentioning)],
                             subject=", ".join(idents), detail=detail))
    return out


def check_tool_detail_in_requests(d: DriftInput) -> list[Finding]:
    """extra / tool_detail_in_requests — a value in a user-requests line's
    own words (not its quote) that the user never said but a tool result or
    an assistant message of the chain did: a date (2026-08-31 = 8月31日 =
    Aug 31), a clock time, an amount with a currency or unit (749元, $45,
    3个工作日; single digits are too common to tell who said them), or
    tool wording (有货, 库存, 保修至, in stock — the vocabulary's
    ``tool_detail``). Bare numbers and ids (the order number) are references
    a request may carry. One finding per value; proof: the tool results and
    assistant messages that hold it."""
    out = []
    for line in d.lines:
        if line.section != notes.REQUESTS:
            continue
        for raw, kind, key in _values(d, line.own):
            if d.user_said_value(kind, key):
                continue
            sources = d.value_sources(kind, key)
            if not sources:
                continue
            out.append(d.finding(
                TOOL_DETAIL_IN_REQUESTS, section=line.section, line=line.number, message_ids=sources, subject=raw,
                detail=(f"“{raw}” in the user's requests comes from tool results or the assistant's answers "
                        f"({', '.join(sources[:3])}{' …' if len(sources) > 3 else ''}); the user never said it. "
                        f"Look-up details are looked up again, not kept as what the user asked for.")))
    return out


def _values(d: DriftInput, text: str) -> list[tuple[str, str, object]]:
    """The look-up values of ``text``: (as written, kind, comparison key), once each."""
    found: dict[tuple[str, object], str] = {}
    date_numbers = set()
    for raw, key in dates(text):
        found.setdefault(("date", key), raw)
        date_numbers |= numbers(raw)
    for h, m in _TIME.findall(text):
        found.setdefault(("time", f"{int(h)}:{m}"), f"{h}:{m}")
    for match in _AMOUNT.finditer(text):
        key = _number_key(match.group(1) or match.group(2))
        if (len(key.replace(".", "")) >= 2 or match.group(1)) and key not in date_numbers:
            found.setdefault(("amount", key), match.group().strip())
    taken_to = -1
    for match in d.vocabulary.find_all(v.TOOL_DETAIL, text):  # longest first at each position
        if match.start() >= taken_to:
            found.setdefault(("word", match.group().lower()), match.group())
            taken_to = match.end()
    return [(raw, kind, key) for (kind, key), raw in found.items()]


def check_question_as_requirement(d: DriftInput) -> list[Finding]:
    """extra / question_as_requirement — a user-requests line (not a hold or
    abandoned line) only records a question when every clause of its own
    words is a question or says the user asked (``question``: 用户询问…,
    有没有, "user asked whether"; "下个月再决定怎么修" inside a statement is
    not one) and neither its own words nor its quote ask for anything to be
    done (no direct request, consent, hold or abandonment).
    A question phrased as a request ("能不能帮我把申请提交了？") is a
    requirement. Proof: the quoted user message, else the user's question
    closest to the line."""
    out = []
    for line in d.lines:
        if line.section != notes.REQUESTS or notes.is_hold(line.text) or notes.is_abandoned(line.text):
            continue
        own = clauses(line.own)
        if not own or not all(d.vocabulary.matches(v.QUESTION, clause) for clause in own):
            continue
        texts = (line.own, *line.quotes)
        if any(d.vocabulary.matches(c, t) for c in (v.DIRECT_REQUEST, v.HOLD) for t in texts):
            continue
        if any(_unnegated(d.vocabulary, c, t) for c in (v.CONSENT, v.ABANDON) for t in texts):
            continue
        ids = [u.message.id for q in line.quotes for u in d.users_saying(q)[-1:]]
        if not ids:
            line_terms = terms(line.own)
            score: dict[int, int] = {}
            for term in line_terms:
                for user in d.questions_by_term.get(term, ()):
                    score[user.order] = score.get(user.order, 0) + (2 if term[0].isascii() else 1)
            best = max(((points, order) for order, points in score.items() if points >= 2), default=None)
            if best:
                ids = [d.users[best[1]].message.id]
        out.append(d.finding(
            QUESTION_AS_REQUIREMENT, section=line.section, line=line.number, message_ids=ids, subject=line.own,
            detail=("This line only records a question the user asked. Asking, comparing or learning is not "
                    "something to be done, so it does not belong in the user's requests.")))
    return out


def check_assistant_ask_as_todo(d: DriftInput) -> list[Finding]:
    """extra / assistant_ask_as_todo — a to-do is the assistant's ask when an
    assistant message of the chain asks the user for it (``assistant_ask``;
    the ask's clause shares key terms worth 2 with the to-do) or the to-do
    itself says it waits on the user (用户尚未提供, awaiting the user), and
    no user message asks for it (a clause about it that is a request,
    direct request or consent, not a mere question). Proof: the assistant
    messages that asked."""
    asks = []
    for message in d.assistants:
        for clause in clauses(message.text):
            match = d.vocabulary.find(v.ASSISTANT_ASK, clause)
            if match:
                asks.append((message, terms(clause[match.start():])))
    out = []
    for line in d.lines:
        if line.section != notes.TODOS:
            continue
        line_terms = line.terms
        asked = [m.id for m, ask_terms in asks if shared(line_terms, ask_terms) >= 2]
        waiting = d.vocabulary.matches(v.ASSISTANT_ASK, line.own)
        if not asked and not waiting:
            continue
        if any(shared(asking, line_terms) >= 2 for asking in d.asking_terms):
            continue
        out.append(d.finding(
            ASSISTANT_ASK_AS_TODO, section=line.section, line=line.number, message_ids=asked, subject=line.own,
            detail=(f"Only the assistant asked for this{' (' + ', '.join(asked[-3:]) + ')' if asked else ''}; "
                    f"the user never asked for it to be done, so it is not a to-do.")))
    return out


def check_lost_constraint(d: DriftInput) -> list[Finding]:
    """lost / lost_constraint — a user condition must stay in the note until
    the user withdraws it. Conditions are the clauses matching
    ``constraint`` (negation, "only", a bound, a deadline, a quantity;
    not a question, not an abandonment) of the material's user messages,
    and of the parent note's requests, to-dos and next step (its own words
    and quotes; abandoned lines excepted). A condition is withdrawn when a
    later user message of the material abandons its matter, restates it
    with the same operator and other numbers (预算改成5000以内), or — for a
    hold — gives the go-ahead again. A note keeps it when any line holds it
    verbatim, or holds its operator word, every number of it and at least
    60% of its key terms ("只要银色或者深空灰" kept as "黑色优先" is lost:
    the "only" is gone). Points at the heading of the section that should
    hold it (the parent's section, else user requests); proof: the message
    that stated it."""
    conditions: list[_Condition] = []
    for line in d.parent_lines:
        if line.section in _MATTER_SECTIONS and not notes.is_abandoned(line.text):
            for text in (line.own, *line.quotes):
                conditions += d.conditions_in(text, message_id=None, order=-1, section=line.section)
    for user in d.users:
        if user.message.id in d.material_user_ids:
            conditions += d.conditions_in(user.message.text, message_id=user.message.id, order=user.order,
                                          section=notes.REQUESTS)
    material_users = [u for u in d.users if u.message.id in d.material_user_ids]
    kept: dict[str, _Condition] = {}
    for condition in conditions:
        if _withdrawn(d, condition, material_users, conditions):
            continue
        key = _edge_strip(normalise(condition.clause))
        previous = kept.get(key)
        if previous is None or (previous.message_id is None and condition.message_id):
            kept[key] = condition
    out = []
    for key, condition in kept.items():
        if d.kept_anywhere(d.lines, condition):
            continue
        ids = [condition.message_id] if condition.message_id else [u.message.id for u in d.users_saying(key)[-1:]]
        said = f" ({ids[0]})" if ids else ""
        kept_before = " although the previous note kept it" if condition.order < 0 else ""
        out.append(d.finding(
            LOST_CONSTRAINT, section=condition.section, line=d.headings.get(condition.section), message_ids=ids,
            subject=condition.clause,
            detail=(f"The user's condition “{_short(condition.clause)}”{said} is missing from this note"
                    f"{kept_before}: no line keeps “{condition.operator}” with its values, and the user has not "
                    f"withdrawn it.")))
    return out


def _withdrawn(d: DriftInput, condition: _Condition, material_users: list[_UserMessage],
               conditions: list[_Condition]) -> bool:
    later = [u for u in material_users if u.order > condition.order]
    stating = d.user_by_id.get(condition.message_id) if condition.message_id else None
    if stating is None:
        saying = d.users_saying(condition.clause)
        stating = saying[-1] if saying else None
    for user in later:
        if user.abandon:
            for abandoner, named, borrowed in d.abandons:
                if abandoner is user and d.about_dropped(condition.terms, named, borrowed):
                    return True
    if condition.is_hold and later:
        # A hold is withdrawn by a later go-ahead about it, unless a still
        # later hold put it back (the same reading as retracted_consent).
        if stating is not None:
            state, _ = d.final_state(stating, condition.terms | stating.terms)
        else:
            state = "hold"
            for event in later:
                if event.state and shared(event.own_terms, condition.terms) >= 2:
                    state = event.state
        if state == "consent":
            return True
    for other in conditions:
        if (other.order > condition.order and other.operator == condition.operator and other.numbers
                and condition.numbers and other.numbers != condition.numbers
                and shared(other.terms - other.numbers, condition.terms - condition.numbers) >= 1):
            return True
    return False


def check_growth_without_new_matters(d: DriftInput) -> list[Finding]:
    """length / growth_without_new_matters — the note *grew* when its text
    (inside ``<summary>`` when present, surrounding whitespace removed) has
    more characters than its parent's; a first generation never grew. It
    may grow only when its material brings something new, any of: a user
    consent, hold or abandonment the parent does not keep already; a user
    condition the parent does not keep; a user statement or direct request
    (not only a question) whose key terms absent from the parent are worth
    3 or more (a new matter, not "好的，谢谢"); or a tool result that failed
    or returned a new id (a dead end or a done item). Material of questions and look-ups brings
    none, however long. Content is not judged here (seed 001: length and
    content are checked separately). Proof: the material's user messages."""
    if d.parent_text is None:
        return []
    grown = len(d.text) - len(d.parent_text)
    if grown <= GROWTH_TOLERANCE_CHARS or _brings_new(d):
        return []
    material = d.material
    ids = [p.user_id for p in material.pairs]
    return [d.finding(
        GROWTH_WITHOUT_NEW_MATTERS, section=None, line=None, message_ids=ids,
        subject=f"{len(d.parent_text)}→{len(d.text)}",
        detail=(f"The note grew from {len(d.parent_text)} to {len(d.text)} characters (+{grown}) although its "
                f"material (pairs {material.from_pair}–{material.to_pair}) brought no new matter, condition or "
                f"hold: the user asked questions or repeated what the previous note already held."))]


def _brings_new(d: DriftInput) -> bool:
    for user in d.users:
        if user.message.id not in d.material_user_ids:
            continue
        for found in (user.consent, user.hold, user.abandon):
            # A consent, hold or abandonment is new unless the parent already
            # keeps it (a hold restated a third time brings nothing).
            if found and not d.kept_anywhere(d.parent_lines, d.as_condition(*found)):
                return True
        for condition in d.conditions_in(user.message.text, message_id=user.message.id, order=user.order,
                                         section=notes.REQUESTS):
            if not d.kept_anywhere(d.parent_lines, condition):
                return True
        novel = frozenset().union(*(terms(c) for c in user.statement_clauses)) - d.parent_terms
        if worth(novel) >= NEW_MATTER_WORTH:
            return True
    for result in d.material.tool_results:
        if d.failed(result):
            return True
        if d.succeeded(result) and any(i not in result.arguments for i in identifiers(result.text)):
            return True
    return False


CHECKERS: dict[str, Callable[[DriftInput], list[Finding]]] = {
    QUOTE_NOT_VERBATIM: check_quote_not_verbatim,
    RETRACTED_CONSENT: check_retracted_consent,
    ABANDONED_UNMARKED: check_abandoned_unmarked,
    DONE_WITHOUT_PROOF: check_done_without_proof,
    TOOL_DETAIL_IN_REQUESTS: check_tool_detail_in_requests,
    QUESTION_AS_REQUIREMENT: check_question_as_requirement,
    ASSISTANT_ASK_AS_TODO: check_assistant_ask_as_todo,
    LOST_CONSTRAINT: check_lost_constraint,
    GROWTH_WITHOUT_NEW_MATTERS: check_growth_without_new_matters,
}


def check_note(note: str, *, parent: str | None, material: Material, chain: ChainHistory,
               vocabulary: v.Vocabulary = v.DEFAULT, codes: Iterable[str] | None = None) -> list[Finding]:
    """Every drift finding of one generation's note, sorted by line, section
    and code (a whole-note finding last).

    ``note`` and ``parent`` are note texts (``<summary>`` unwrapped here;
    ``parent`` None for a chain's first generation), ``material`` the
    generation's material with its tool results, ``chain`` what the chain
    settled up to this cut, ``vocabulary`` the scope's. ``codes`` limits
    the run to some checkers. Raises ``MalformedNote`` when the note (or
    its parent) is not a six-section note — the contract refuses those
    before a generation exists.
    """
    d = DriftInput(note=note, parent=parent, material=material, chain=chain, vocabulary=vocabulary)
    wanted = list(CHECKERS) if codes is None else [c for c in CHECKERS if c in set(codes)]
    unknown = set(codes or ()) - set(CHECKERS)
    if unknown:
        raise ValueError(f"unknown drift code(s): {', '.join(sorted(unknown))}")
    findings = [finding for code in wanted for finding in CHECKERS[code](d)]
    return sorted(set(findings), key=Finding.sort_key)
