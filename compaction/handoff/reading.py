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
- **Matter terms**: the key terms without the consent, hold, abandonment and
  question phrases ("先别提交了" names 提交).
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

``Reader`` reads texts with a scope's vocabulary
(``compaction.handoff.vocabulary``), each category's patterns joined into
one alternation and every answer kept. Texts read are remembered across
calls: the next generation re-reads the whole chain, and only its new
material is new.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property, wraps
from typing import Iterable

from . import vocabulary as v

KEPT_SHARE = 0.6
NEW_MATTER_WORTH = 3
# Only texts up to _MEMO_TEXT characters are remembered (a message may be
# 1 MiB), at most _MEMO per function; a full memo starts again empty.
_MEMO = 1 << 16
_MEMO_TEXT = 4096


def memoised(fn):
    """``fn(text)`` remembered per text (see the module doc)."""
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


# ---------------------------------------------------------------- normalisation

_WS = re.compile(r"\s+")
_SPACE_BY_WIDE = re.compile(r" (?=[^\x00-\x7f])|(?<=[^\x00-\x7f]) ")
EDGE = " \t\n。，,.!！?？；;、：:" + "\"'“”‘’「」『』"


@memoised
def normalise(text: str) -> str:
    """Whitespace normalisation (SPEC §8)."""
    return _SPACE_BY_WIDE.sub("", _WS.sub(" ", text).strip())


def edge_strip(text: str) -> str:
    """``text`` without punctuation, spaces and quotation marks at its edges."""
    return text.strip(EDGE)


# ---------------------------------------------------------------- key terms

_LATIN_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9\-_.]*[A-Za-z0-9]|[A-Za-z0-9]")
CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
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


@memoised
def key_terms(text: str) -> frozenset[str]:
    """The key terms of ``text`` (see the module doc)."""
    found = set()
    for token in _LATIN_TOKEN.findall(text):
        token = token.lower()
        if len(token) >= 2 and token not in _EN_STOP:
            found.add(token)
    for run in CJK_RUN.findall(text):
        for i in range(len(run) - 1):
            pair = run[i:i + 2]
            if pair[0] not in _STOP_CHARS and pair[1] not in _STOP_CHARS and pair not in _GENERIC:
                found.add(pair)
    return frozenset(found)


def is_stop_word(word: str) -> bool:
    return word.lower() in _EN_STOP


def worth(found: Iterable[str]) -> int:
    """A Latin word or number counts 2, a Chinese two-character term 1."""
    return sum(2 if term[0].isascii() else 1 for term in found)


def shared(a: frozenset[str], b: frozenset[str]) -> int:
    """The worth of the terms two texts share (2 or more: the same matter)."""
    return worth(a & b)


# ---------------------------------------------------------------- numbers and ids

_NUMBER = re.compile(r"(?<![\d.])\d[\d,]*(?:\.\d+)?(?![\d])")
_ID_TOKEN = re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9][A-Za-z0-9\-_/]{3,}(?![A-Za-z0-9])")
_ISO_DATE = re.compile(r"^\d{4}[-/.]\d{1,2}[-/.]\d{1,2}$")
_QUANTITY = re.compile(r"^\d{1,5}(?:\.\d+)?[A-Za-z]{1,3}$")  # 128GB, 15kg: an amount, not an id


def number_key(raw: str) -> str:
    return raw.replace(",", "")


@memoised
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


# ---------------------------------------------------------------- the vocabulary, read once

_MISSING = object()
_READINGS: dict[int, tuple] = {}

# Which scripts a text holds: a pattern that needs a Latin letter cannot
# match a text without one (re.I folds ſ and K, the Kelvin sign, into s and
# k, so the test is re's own), nor one that needs an ideograph a text
# without one. Skipping those patterns changes no answer; on a Chinese
# clause it skips most English patterns, and the other way round.
_HAS_LATIN = re.compile(r"[a-z]", re.I)
_HAS_CJK = CJK_RUN


def _script_of(code: int, script: str) -> bool:
    char = chr(code)
    return bool(_HAS_LATIN.match(char)) if script == "latin" else bool(CJK_RUN.match(char))


def _requires(items, script: str) -> bool:
    """Whether every match of a parsed pattern holds a character of ``script``
    (conservative: False whenever that is not certain)."""
    for op, av in items:
        name = str(op)
        if name == "LITERAL" and _script_of(av, script):
            return True
        if name == "IN" and av and all(
                (str(kind) == "LITERAL" and _script_of(value, script))
                or (str(kind) == "RANGE" and all(_script_of(c, script) for c in range(value[0], value[1] + 1)))
                for kind, value in av):
            return True
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") and av[0] >= 1 and _requires(av[2], script):
            return True
        if name == "SUBPATTERN" and _requires(av[3], script):
            return True
        if name == "ATOMIC_GROUP" and _requires(av, script):
            return True
        if name == "BRANCH" and all(_requires(branch, script) for branch in av[1]):
            return True
    return False


def _needs(pattern: re.Pattern) -> tuple[bool, bool]:
    """(needs a Latin letter, needs an ideograph) for one vocabulary pattern."""
    from re import _parser

    try:
        parsed = list(_parser.parse(pattern.pattern, pattern.flags))
    except Exception:  # an unparsable pattern: assume it needs nothing
        return False, False
    return _requires(parsed, "latin"), _requires(parsed, "cjk")


def _alternations(vocabulary: v.Vocabulary) -> dict[str, dict[tuple[bool, bool], re.Pattern]]:
    """Per category, one alternation for each (text has Latin, text has
    ideographs) of the patterns such a text can match."""
    out = {}
    for category, by_language in vocabulary.patterns.items():
        patterns = [(p, _needs(p)) for lang in (v.ZH, v.EN) for p in by_language.get(lang, ())]
        out[category] = {
            (latin, cjk): re.compile("|".join(f"(?:{p.pattern})" for p, (needs_latin, needs_cjk) in patterns
                                              if (latin or not needs_latin) and (cjk or not needs_cjk)) or r"(?!)",
                                     re.I)
            for latin in (False, True) for cjk in (False, True)}
    return out


def _reading(vocabulary: v.Vocabulary) -> tuple[dict, dict[tuple, object], dict[str, dict]]:
    """Each category's alternations, compiled once per vocabulary, the
    answers already given for it, and per category the texts already tested
    (kept with the vocabulary itself, so an id reused for another is never
    confused)."""
    cached = _READINGS.get(id(vocabulary))
    if cached is None or cached[0] is not vocabulary:
        if len(_READINGS) > 64:
            _READINGS.clear()
        compiled = _alternations(vocabulary)
        cached = _READINGS[id(vocabulary)] = (vocabulary, compiled, {}, {category: {} for category in compiled})
    if len(cached[2]) > 8 * _MEMO:
        cached[2].clear()
    return cached[1], cached[2], cached[3]


@memoised
def _scripts(text: str) -> tuple[bool, bool]:
    return bool(_HAS_LATIN.search(text)), bool(_HAS_CJK.search(text))


class Reader:
    """The scope's vocabulary, read once per text: a yes/no test is one
    search of the category's alternation, a match is asked of the
    vocabulary only when that search found something, and every answer is
    kept. Both languages are always tried (mixed conversations exist); a
    category the vocabulary does not have matches nothing."""

    def __init__(self, vocabulary: v.Vocabulary = v.DEFAULT):
        self.vocabulary = vocabulary
        self._any, self._memo, self._tested = _reading(vocabulary)

    def kept(self, key: tuple, text: str, compute):
        """``compute()`` remembered under ``key`` (for readings of ``text``)."""
        if len(text) > _MEMO_TEXT:
            return compute()
        found = self._memo.get(key, _MISSING)  # one lookup: another reading may clear the memo meanwhile
        if found is _MISSING:
            found = self._memo[key] = compute()
        return found

    def remembered(self, key: tuple):
        """What ``remember`` kept under ``key``, or None."""
        return self._memo.get(key)

    def remember(self, key: tuple, value, *, limit: int) -> None:
        """Keep ``value`` under ``key`` (at most ``limit`` such values per
        first key element; the oldest goes)."""
        kind = key[0]
        names = self._memo.setdefault((kind, "names"), [])
        if key in names:
            names.remove(key)
        names.append(key)
        while len(names) > limit:
            self._memo.pop(names.pop(0), None)
        self._memo[key] = value

    def matches(self, category: str, text: str) -> bool:
        tested = self._tested.get(category)
        if tested is None:
            return False
        found = tested.get(text)
        if found is None:
            found = self._any[category][_scripts(text)].search(text) is not None
            if len(text) <= _MEMO_TEXT:
                if len(tested) >= _MEMO:
                    tested.clear()
                tested[text] = found
        return found

    def find(self, category: str, text: str) -> re.Match | None:
        """The first pattern's match, Chinese patterns first (the vocabulary's order)."""
        if not self.matches(category, text):
            return None
        return self.kept(("find", category, text), text, lambda: self.vocabulary.find(category, text))

    def find_all(self, category: str, text: str) -> list[re.Match]:
        """Every match, by position then length (longest first)."""
        if not self.matches(category, text):
            return []
        return self.kept(("find_all", category, text), text, lambda: self.vocabulary.find_all(category, text))

    def unnegated(self, category: str, text: str) -> re.Match | None:
        """The first match of ``category`` that no negation undoes."""
        for match in self.find_all(category, text):
            if not negated(text, match.start()):
                return match
        return None

    def without(self, text: str, categories: Iterable[str]) -> str:
        """``text`` with every match of ``categories`` blanked out."""
        spans = sorted(m.span() for c in categories for m in self.find_all(c, text))
        if not spans:
            return text
        out, at = [], 0
        for start, end in spans:
            if start >= at:
                out.append(text[at:start])
                out.append(" ")
            at = max(at, end)
        out.append(text[at:])
        return "".join(out)

    def matter_terms(self, text: str) -> frozenset[str]:
        """Key terms without the consent, hold, abandonment and question
        phrases themselves: "先别提交了" names 提交, "AirPods Max现在多少钱？"
        names AirPods and Max, not 多少."""
        return self.kept(("matter_terms", text), text,
                         lambda: key_terms(self.without(text, (v.CONSENT, v.HOLD, v.ABANDON, v.QUESTION))))


# ---------------------------------------------------------------- keeping


class Holding:
    """What a note line (or several joined) holds, read once for ``keeps``."""

    def __init__(self, text: str):
        self.held = text

    @cached_property
    def normal(self) -> str:
        return normalise(self.held)

    @cached_property
    def lower(self) -> str:
        return self.normal.lower()

    @cached_property
    def terms(self) -> frozenset[str]:
        return key_terms(self.held)

    @cached_property
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


def brings_news(text: str, known: frozenset[str]) -> bool:
    """Whether ``text`` names what ``known`` (the key terms of what a note
    holds already) does not — a new matter: an identifier (SPEC §8: 取消订单
    66002 beside 66001 is a second matter), or new key terms worth
    ``NEW_MATTER_WORTH`` or more (not "好的，谢谢")."""
    novel = key_terms(text) - known
    return worth(novel) >= NEW_MATTER_WORTH or any(i.lower() in novel for i in identifiers(text))


def keeps_text(reader: Reader, text: str, clause: str, categories=(v.CONSTRAINT,)) -> bool:
    """Whether ``text`` keeps ``clause``, its operator the first match of
    the first of ``categories`` that it has: verbatim only when it has none."""
    for category in categories:
        match = reader.find(category, clause)
        if match:
            return keeps(Holding(text), Phrase.of(clause, match))
    return edge_strip(normalise(clause)) in normalise(text)
