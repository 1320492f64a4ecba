"""How the hand-off rules read a text — the one home of the reading rules the
offline builder and the drift checks share (SPEC §7, §8; seed 001 §4
"走样有三种：丢、错、多" and its table "交接单该装什么").

Pure. The builder (``compaction.handoff.builder``) must never write a note
the drift checks (``compaction.drift``) find lost or grown, so both read with
these rules and nothing else:

- **Whitespace normalisation** (SPEC §8): a run of whitespace is one space,
  and a space touching a non-ASCII character goes (Chinese carries no word
  spaces). Quotes and kept clauses are compared after it.
- **Key terms** say what a text is about: Latin words, model names and
  numbers (lower-cased, two characters or more, no stop words) and Chinese
  two-character terms without a filler character (的了吗我你先别…) and that
  are not how-words (同意, 现在, 用户, 原话…). A Latin word or number is
  worth 2, a Chinese term 1; two texts are *about the same matter* when
  the terms they share are worth 2 or more.
- **Matter terms** (``reader.Reader.matter_terms``): the key terms without
  the consent, hold, abandonment and question phrases ("先别提交了" names 提交).
- **Identifiers** (order, ticket, booking numbers): four characters or more,
  a digit among them, and a letter, a hyphen or five digits or more — a
  price (1899), a date or a capacity (128GB) is none.
- **Negation**: a consent or abandonment right after 不 / 没 / 未 / 别 /
  不再 or "don't", "not", "never", "no longer" is not one.
- **News** (``brings_news``): a text brings a new matter when it names an
  identifier, or new key terms worth 3 or more, that the note does not hold.
- **Keeping** (``keeps``): a note line keeps a user clause when it holds it
  verbatim, or holds its operator word (the constraint, consent, hold or
  abandon phrase), every number of it and at least 60% (``KEPT_SHARE``) of
  the worth of its other key terms on each side of the operator
  ("只要银色或者深空灰" kept as "黑色优先" is lost: the "only" is gone;
  "iPad的保护壳也只要银色或者深空灰" is not kept by a line on the iPad's
  colours: the case is new). A later condition with the same operator and
  other numbers about the same thing supersedes the earlier one
  (``supersedes``: "预算改成5000以内" after "预算4000以内").

Texts read are remembered across calls (``memoised``): the next generation
re-reads the whole chain, and only its new material is new. How texts are
read with a scope's vocabulary is ``compaction.handoff.reader``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import wraps
from itertools import islice
from typing import TYPE_CHECKING, Iterable

from . import vocabulary as v

if TYPE_CHECKING:
    from .reader import Reader

KEPT_SHARE = 0.6
NEW_MATTER_WORTH = 3
# Only texts up to _MEMO_TEXT characters are remembered (a message may be
# 1 MiB), at most _MEMO per function; a full memo forgets its oldest eighth
# (``forget_oldest``). The bound is a long chain's working set (a
# generation re-reads the texts of its own chain, not of every chain the
# worker ever read): each remembered reading is an object the garbage
# collector walks on every full collection (issue 14), and a lookup in a
# memo of 16,384 texts misses the processor's caches: with 1,024 the worst-case
# and typical drift checks of ``bench/drift.py`` ran 0.5 to 1 ms faster per
# generation (median) than with 16,384, the builder-note checks' p99 10.5 ms
# against 8.8, the same findings. A generation reads some 700 texts once or
# twice within its own check; the chain it re-reads is kept with the chain.
_MEMO = 1 << 10
# Key terms are sets, the objects a full collection costs most (a set is
# some 200 bytes the collector reads three times; a string or a tuple of
# strings it skips): their memo keeps the last few generations' texts only.
# ``numbers`` is not remembered at all: most texts hold none, a search costs
# less than a lookup's share of the collections, and few texts were asked twice.
_TERMS_MEMO = 1 << 10
_MEMO_TEXT = 4096


def forget_oldest(memo: dict) -> None:
    """Drop the oldest eighth of a full memo (dicts keep insertion order):
    what was read lately stays, so a chain being checked is not read again
    from scratch, as it was when a full memo started again empty. An eighth,
    not half: the texts forgotten (and the readings freed with them) are
    paid for by the reading that found the memo full, inside one check —
    half of a full memo was 1.3 ms on average and up to 4 ms of one
    generation's check, an eighth a few tenths (issue 14: the p99)."""
    for key in list(islice(memo, max(1, len(memo) // 8))):
        del memo[key]


class read_once:
    """A property computed on first use and kept in the instance (what
    ``functools.cached_property`` does, without the lock Python 3.11 takes
    on every first use: readings are built and read by one thread, and a
    check reads a few thousand of them per generation).

    The value is set as an attribute (``object.__setattr__``, so a frozen
    dataclass takes it too), not written into ``instance.__dict__``: asking
    for ``__dict__`` makes CPython build a dictionary object for the
    instance, where attributes set otherwise stay in the instance's own
    values. A chain's 900 user readings kept 900 such dictionaries, each
    another object every full garbage collection walks (issue 14)."""

    def __init__(self, fn):
        self.fn = fn
        self.name = fn.__name__
        self.__doc__ = fn.__doc__

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        value = self.fn(instance)
        object.__setattr__(instance, self.name, value)
        return value


def attributes_known(*set_by_init: str):
    """A class decorator: the attributes the class's instances are given —
    ``set_by_init`` (a dataclass's fields are found alone) and every
    ``read_once`` reading — set once on a probe instance as the class is
    made, so CPython knows them all before the first instance exists.

    CPython 3.11 keeps an instance's attributes in the instance itself,
    without a dictionary object, while their names are among those its
    class has seen; the room for names it has not seen shrinks with every
    instance made, so a reading first computed after a few hundred
    instances exist (a chain's user messages are read one reading at a
    time) gave every instance a dictionary object — each another object a
    full garbage collection walks (issue 14). The answers are the same
    either way."""

    def learn(cls):
        fields = list(getattr(cls, "__dataclass_fields__", {}))
        readings = [name for klass in reversed(cls.__mro__) for name, attr in vars(klass).items()
                    if isinstance(attr, read_once)]
        probe = object.__new__(cls)
        for name in unique(fields, set_by_init, readings):
            object.__setattr__(probe, name, None)
        return cls

    return learn


_MEMOS: list[dict] = []  # every ``memoised`` function's memo, for ``forget_memos``


def forget_memos() -> None:
    """Forget every remembered reading of ``memoised`` functions (the answers
    stay the same; they are computed again)."""
    for memo in _MEMOS:
        memo.clear()


def memoised(fn=None, *, limit: int = _MEMO):
    """``fn(text)`` remembered per text, at most ``limit`` texts (see the
    module doc); ``@memoised`` or ``@memoised(limit=…)``."""
    if fn is None:
        return lambda fn: memoised(fn, limit=limit)
    memo: dict[str, object] = {}
    _MEMOS.append(memo)

    @wraps(fn)
    def read(text: str):
        found = memo.get(text)  # a long text is never there: one lookup, then its length on a miss
        if found is None:
            found = fn(text)
            if len(text) <= _MEMO_TEXT:
                if len(memo) >= limit:
                    forget_oldest(memo)
                memo[text] = found
        return found

    return read


# ---------------------------------------------------------------- normalisation

_WS = re.compile(r"\s+")
_ANY_WS = re.compile(r"\s")  # the test alone: one class, which re scans for faster than a run
_SPACE_BY_WIDE = re.compile(r" (?=[^\x00-\x7f])|(?<=[^\x00-\x7f]) ")
EDGE = " \t\n。，,.!！?？；;、：:" + "\"'“”‘’「」『』"


@memoised
def normalise(text: str) -> str:
    """Whitespace normalisation (SPEC §8). A text without whitespace is its
    own normal form (found by one search instead of two substitutions)."""
    if not _ANY_WS.search(text):
        return text
    return _SPACE_BY_WIDE.sub("", _WS.sub(" ", text).strip())


def edge_strip(text: str) -> str:
    """``text`` without punctuation, spaces and quotation marks at its edges."""
    return text.strip(EDGE)


# ---------------------------------------------------------------- key terms

# A letter or digit, then as much of a token as ends in one (the class first,
# so re scans ahead for it rather than trying each position).
_LATIN_TOKEN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9\-_.]*[A-Za-z0-9])?")
CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
CJK_RUN = re.compile(CJK_CHAR.pattern + "+")
# The characters other than their own that re.I lets an ASCII letter match
# (found by trying every code point; ``tests/compaction/drift/
# test_corpus_and_chain.py`` checks it again), and a Latin letter as re.I
# reads [a-z]: the class written out rather than folded, because re scans
# ahead for a class that is not case-folded and tries a folded one at every
# position.
FOLDED = {"i": "İı", "k": "\u212a", "s": "ſ"}
LATIN_LETTER = re.compile("[a-zA-Z" + "".join(FOLDED.values()) + "]")
# Characters that carry no matter: particles, pronouns, copulas, connectors,
# modal and negating words.
_STOP_CHARS = frozenset("的了吗呢吧啊呀哦嗯哈么嘛啦我你您他她它们是在有这那就也都还和与或及把被给让对从到会能很太再又过着"
                        "个些其之而且并但一什怎先别不没要想可以")
# Terms that say how, not what: the note's own labels, agreeing, asking,
# timing and hedging words every matter shares would tie unrelated ones together.
_GENERIC = frozenset("""用户 助手 原话 暂缓 放弃 已放 当前 目前 已经 需要 提供 确认 告知 补充 一下 可以 现在 什么 怎么
同意 明确 还是 算了 准备 知道 觉得 应该 没有 问题 谢谢 那边 这边 直接 时候 如果 因为 所以 但是 然后 不过 其实 大概
一直 感觉 东西 情况 办法 一起 马上 今天 明天 下周 这样 那样 一样 比较 非常 特别 办理 麻烦 帮忙""".split())
_EN_STOP = frozenset("""a an the and or but to of in on for with at by from is are was were be been being it its this
that these those i me my mine you your yours we our us they their them he she his her do does did done can could
would should will shall may might must have has had not no yes please user users assistant quote what which how
when where why who whether if so just about any some there here then than also too very up out into as all get got
go want wants wanted need needs like let lets ok okay thanks thank hi hello sorry more now off one two only under
before after again ahead hold yet until wait still sure maybe really much many""".split())


def _term_chars() -> str:
    """A character class of the ideographs of ``CJK_RUN`` but the filler ones
    (``_STOP_CHARS``, all ideographs), as ranges."""
    out = []
    for low, high in ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF)):
        start = low
        for stop in sorted(ord(ch) for ch in _STOP_CHARS if low <= ord(ch) <= high):
            if start < stop:
                out.append(f"\\u{start:04x}-\\u{stop - 1:04x}")
            start = stop + 1
        if start <= high:
            out.append(f"\\u{start:04x}-\\u{high:04x}")
    return "".join(out)


# Every two neighbouring ideographs neither of which is a filler, in two
# searches that each start with the class (so re scans ahead for it): the
# pairs at a run's even offsets, then — after a term character, looked
# behind from the pair's first — those at its odd ones. One overlapping
# search (a look-ahead at every position) found the same pairs in 8% more
# instructions (callgrind, the bench's note lines and user messages: some
# 1.5M of a worst-case generation's check). re compiles each copy of the
# class on its own: the three more cost 116M instructions once, as the
# module is imported — some 80 generations' checks of a worker's saving.
_TERM_CLASS = f"[{_term_chars()}]"
_TERM_PAIRS = (re.compile(_TERM_CLASS * 2), re.compile(f"{_TERM_CLASS}(?<={_TERM_CLASS * 2}){_TERM_CLASS}"))


@memoised(limit=_TERMS_MEMO)
def key_terms(text: str) -> frozenset[str]:
    """The key terms of ``text`` (see the module doc)."""
    even, odd = _TERM_PAIRS
    found = set(even.findall(text))
    found.update(odd.findall(text))
    found.update(_latin_terms(text))
    return frozenset(found - _GENERIC)


def _latin_terms(text: str) -> list[str]:
    """The Latin words and numbers of ``text`` that are key terms, lower-cased."""
    out = []
    for token in _LATIN_TOKEN.findall(text):
        token = token.lower()
        if len(token) >= 2 and token not in _EN_STOP:
            out.append(token)
    return out


class TermsOf:
    """The key terms of a long text (a whole note), asked one at a time
    with ``in`` — of a term that is a key term of some text — without
    reading them all: a Chinese term (two term characters, not a how-word)
    is one of the text's exactly when the text holds it, and a Latin one
    when it is one of the text's Latin terms, which are few. A 5,800-character
    note's key terms were 3.6M instructions of every generation's check
    (issue 14: the length check asks a dozen terms of its parent); this
    reads the Latin tokens and searches each term asked."""

    def __init__(self, text: str):
        self.text = text

    @read_once
    def latin(self) -> frozenset[str]:
        return frozenset(_latin_terms(self.text))

    def __contains__(self, term: str) -> bool:
        return term in self.latin if term[0].isascii() else term in self.text


def is_stop_word(word: str) -> bool:
    return word.lower() in _EN_STOP


def worth(found: Iterable[str]) -> int:
    """A Latin word or number counts 2, a Chinese two-character term 1."""
    return sum(2 if term[0].isascii() else 1 for term in found)


def shared(a: frozenset[str], b: frozenset[str]) -> int:
    """The worth of the terms two texts share (2 or more: the same matter)."""
    return worth(a & b)


# ---------------------------------------------------------------- numbers and ids

# A digit not after a digit or a dot, and what follows it: the look-behind
# comes after the first digit (it looks at the character before it), so re
# finds each number by scanning for a digit instead of trying every position.
_NUMBER = re.compile(r"\d(?<![\d.].)[\d,]*(?:\.\d+)?(?![\d])")
_ID_TOKEN = re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9][A-Za-z0-9\-_/]{3,}(?![A-Za-z0-9])")
_ISO_DATE = re.compile(r"^\d{4}[-/.]\d{1,2}[-/.]\d{1,2}$")
_QUANTITY = re.compile(r"^\d{1,5}(?:\.\d+)?[A-Za-z]{1,3}$")  # 128GB, 15kg: an amount, not an id


def number_key(raw: str) -> str:
    return raw.replace(",", "")


def numbers(text: str) -> frozenset[str]:
    """Every number written in ``text``, thousands separators removed."""
    return frozenset(number_key(n) for n in _NUMBER.findall(text))


def is_identifier(token: str) -> bool:
    """Whether one token (edge ``-_/`` aside) is an identifier (see the module doc)."""
    token = token.strip("-_/")
    return (len(token) >= 4 and any(ch.isdigit() for ch in token) and not _ISO_DATE.match(token)
            and not _QUANTITY.match(token)
            and (any(ch.isalpha() or ch == "-" for ch in token) or sum(ch.isdigit() for ch in token) >= 5))


@memoised
def identifiers(text: str) -> tuple[str, ...]:
    """The identifiers ``text`` names, in order, once each."""
    return unique(token.strip("-_/") for token in _ID_TOKEN.findall(text) if is_identifier(token))


def unique(*groups: Iterable[str]) -> tuple[str, ...]:
    """The items of ``groups`` in order, once each, empty ones left out."""
    seen: dict[str, None] = {}
    for group in groups:
        for item in group:
            if item:
                seen.setdefault(item, None)
    return tuple(seen)


# ---------------------------------------------------------------- negation

_NEGATION_ZH = re.compile(r"(不|没|未|别|不再)$")
_NEGATION_EN = re.compile(
    r"\b(don'?t|do not|does not|doesn'?t|did not|didn'?t|won'?t|not|never|no longer)\s+(\w+\s+)?$", re.I)


def negated(text: str, start: int) -> bool:
    """Whether what starts at ``start`` follows a negation: 不同意, "don't agree"."""
    before = text[max(0, start - 24):start]
    return bool(_NEGATION_ZH.search(before[-2:]) or _NEGATION_EN.search(before))


# ---------------------------------------------------------------- keeping


class Holding:
    """What a note line (or several joined) holds, read once for ``keeps``."""

    def __init__(self, text: str):
        self.held = text

    @read_once
    def normal(self) -> str:
        return normalise(self.held)

    @read_once
    def lower(self) -> str:
        return self.normal.lower()

    @read_once
    def terms(self) -> frozenset[str]:
        return key_terms(self.held)

    @read_once
    def numbers(self) -> frozenset[str]:
        return numbers(self.normal)


@dataclass(frozen=True)
class Phrase:
    """A user clause to be kept, keyed by its operator word (the phrase that
    makes it a condition, a consent, a hold or an abandonment): its numbers,
    its key terms, and apart the terms of what it is about (before the
    operator: "iPad的保护壳也") and of its value (after it: "银色或者深空灰")."""

    clause: str
    operator: str
    numbers: frozenset[str]
    terms: frozenset[str]
    subject: frozenset[str] = frozenset()
    value: frozenset[str] = frozenset()

    @classmethod
    def of(cls, clause: str, match: re.Match, **more) -> "Phrase":
        found = numbers(clause)
        return cls(clause=clause, operator=match.group(), numbers=found, terms=key_terms(clause),
                   subject=key_terms(clause[:match.start()]) - found, value=key_terms(clause[match.end():]) - found,
                   **more)


def _covered(wanted: frozenset[str], held: frozenset[str]) -> bool:
    return worth(wanted & held) >= KEPT_SHARE * worth(wanted)


def keeps(line: Holding, phrase: Phrase) -> bool:
    """Whether ``line`` keeps ``phrase``: verbatim, or its operator, every
    number of it and ``KEPT_SHARE`` of the worth of its key terms — on each
    side of the operator, so that "iPad的保护壳也只要银色或者深空灰的" is not
    kept by a line about the iPad's colours alone (what it is about is new)."""
    if normalise(phrase.operator).lower() not in line.lower:
        return False  # the verbatim clause holds its operator too
    if edge_strip(normalise(phrase.clause)) in line.normal:
        return True
    if not phrase.numbers <= line.numbers:
        return False
    return _covered(phrase.subject, line.terms) and _covered(phrase.value, line.terms)


def supersedes(new: Phrase, old: Phrase) -> bool:
    """A later condition replaces an earlier one when it restates it with
    the same operator and other numbers about the same thing (a shared key
    term besides the numbers): "预算改成5000以内" replaces "预算4000以内"."""
    return (new.operator == old.operator and bool(new.numbers) and bool(old.numbers) and new.numbers != old.numbers
            and shared(new.terms - new.numbers, old.terms - old.numbers) >= 1)


def brings_news(text: str, known: "frozenset[str] | TermsOf") -> bool:
    """Whether ``text`` names what ``known`` (the key terms of what a note
    holds already) does not — a new matter: an identifier (SPEC §8: 取消订单
    66002 beside 66001 is a second matter), or new key terms worth
    ``NEW_MATTER_WORTH`` or more (not "好的，谢谢")."""
    novel = frozenset(term for term in key_terms(text) if term not in known)
    return worth(novel) >= NEW_MATTER_WORTH or any(i.lower() in novel for i in identifiers(text))


def keeps_text(reader: "Reader", text: str, clause: str, categories=(v.CONSTRAINT,)) -> bool:
    """Whether ``text`` keeps ``clause``, its operator the first match of
    the first of ``categories`` that it has: verbatim only when it has none."""
    for category in categories:
        match = reader.find(category, clause)
        if match:
            return keeps(Holding(text), Phrase.of(clause, match))
    return edge_strip(normalise(clause)) in normalise(text)
