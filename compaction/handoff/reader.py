"""Reading a text with a scope's vocabulary, once (SPEC §8: "their
vocabularies … live in one place, documented, extensible per scope";
``compaction.handoff.vocabulary``).

Pure. ``Reader`` answers "does this text say something of this category?"
with one search of the category's patterns joined into one alternation,
looks for the match itself (the vocabulary's patterns in its order) only
when that search found something, and keeps every answer per text (one
note reads the same clauses many times, and the next generation reads the
same chain again). Patterns that need a Latin letter are not tried on a
text without one, nor those that need an ideograph on a text without one,
in the alternations and in the search for the match — the same answers, a
third of the work on a Chinese clause. The builder and the drift checks
read through the same ``Reader``, so a clause read by one is read for the
other.
"""

from __future__ import annotations

import re
from typing import Iterable

from . import vocabulary as v
from .reading import (_MEMO, _MEMO_TEXT, CJK_CHAR, FOLDED, LATIN_LETTER, forget_memos, forget_oldest, key_terms,
                      memoised, negated)

_MISSING = object()
# Yes/no answers kept per category: text -> bool, a dict the garbage
# collector does not walk (it holds no containers), so it may be larger
# than the readings' memo: some three generations' texts (65,536 missed the
# processor's caches: see ``reading._MEMO``).
_TESTED = 1 << 11
_READINGS: dict[int, tuple] = {}

# Which scripts a text holds: a pattern that needs a Latin letter cannot
# match a text without one (``reading.LATIN_LETTER``: with İ, ı, ſ and K,
# the Kelvin sign, which re.I folds into i, s and k), nor one that needs an
# ideograph a text without one (one ideograph, not a run: re scans ahead
# for it). Skipping those patterns changes no answer; on a Chinese clause
# it skips most English patterns, and the other way round.


def _script_of(code: int, script: str) -> bool:
    char = chr(code)
    return bool((LATIN_LETTER if script == "latin" else CJK_CHAR).match(char))


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


def _equivalents(code: int, ignore_case: bool) -> frozenset[str] | None:
    """The characters a literal matches; None when that is not certain (a
    cased character other than an ASCII letter, under re.I)."""
    char = chr(code)
    if not ignore_case or char.lower() == char.upper() == char and not char.isalpha() or "\u3400" <= char <= "\u9fff":
        return frozenset(char)
    if char.isascii() and char.isalpha():
        lower = char.lower()
        return frozenset(lower + lower.upper() + FOLDED.get(lower, ""))
    return None


def _first_chars(items, ignore_case: bool) -> frozenset[str] | None:
    """The characters every match of a parsed pattern starts with (anchors
    and word boundaries, which match no character, skipped); None when that
    is not certain — an optional first item, a wide class, a dot."""
    for op, av in items:
        name = str(op)
        if name in ("AT", "ASSERT", "ASSERT_NOT"):  # match no character
            continue
        if name == "LITERAL":
            return _equivalents(av, ignore_case)
        if name == "IN":
            found: set[str] = set()
            for kind, value in av:
                if str(kind) != "LITERAL":
                    return None
                chars = _equivalents(value, ignore_case)
                if chars is None:
                    return None
                found |= chars
            return frozenset(found) or None
        if name == "SUBPATTERN":
            _group, add_flags, del_flags, sub = av
            return _first_chars(sub, ignore_case) if not add_flags and not del_flags else None
        if name == "BRANCH":
            found = set()
            for branch in av[1]:
                chars = _first_chars(branch, ignore_case)
                if chars is None:
                    return None
                found |= chars
            return frozenset(found)
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") and av[0] >= 1:
            return _first_chars(av[2], ignore_case)
        return None
    return None  # a pattern that can match the empty text


def first_chars(pattern: re.Pattern) -> frozenset[str] | None:
    """The characters every match of ``pattern`` starts with, or None (see
    ``_first_chars``): a text holding none of them cannot match it."""
    from re import _parser

    try:
        parsed = list(_parser.parse(pattern.pattern, pattern.flags))
    except Exception:  # an unparsable pattern: assume it can start anywhere
        return None
    return _first_chars(parsed, bool(pattern.flags & re.I))


def _possible(vocabulary: v.Vocabulary) -> dict[str, dict[tuple[bool, bool], tuple[tuple, ...]]]:
    """Per category, for each (text has Latin, text has ideographs), the
    patterns such a text can match, in the vocabulary's order (Chinese
    first), each with the characters its matches start with
    (``first_chars``): a pattern none of whose first characters the text
    holds is not tried — one set test instead of a search, the same
    answers (a Chinese clause tried some 30 question patterns for its one
    or two matches)."""
    out = {}
    for category, by_language in vocabulary.patterns.items():
        patterns = [(p, _needs(p), first_chars(p)) for lang in (v.ZH, v.EN) for p in by_language.get(lang, ())]
        out[category] = {
            (latin, cjk): tuple((p, firsts) for p, (needs_latin, needs_cjk), firsts in patterns
                                if (latin or not needs_latin) and (cjk or not needs_cjk))
            for latin in (False, True) for cjk in (False, True)}
    return out


def _alternations(vocabulary: v.Vocabulary,
                  possible: dict | None = None) -> dict[str, dict[tuple[bool, bool], tuple]]:
    """Per category, for each (text has Latin, text has ideographs), one
    alternation of the patterns such a text can match, and the class of the
    characters their matches start with (``first_chars``; None when one
    pattern may start anywhere). re tries an alternation whose patterns
    start with classes or anchors at every position of the text; the class,
    a quick scan, finds where a match can first start, and the alternation
    is searched from there: the same answer, less than half the time on a
    Chinese clause (a question search 0.80 -> 0.32 µs). The class leads the
    alternation too, as a look-ahead, so that a position after the first
    candidate where no match can start costs one class test, not a try of
    each pattern: the regular-expression searches of a worst-case
    generation's check 23.3M -> 17.7M instructions (callgrind, issue 14)."""
    possible = possible if possible is not None else _possible(vocabulary)
    out: dict[str, dict[tuple[bool, bool], tuple]] = {}
    for category, by_scripts in possible.items():
        out[category] = {}
        for scripts, patterns in by_scripts.items():
            scan = _scan(firsts for _, firsts in patterns)
            alternation = "|".join(f"(?:{p.pattern})" for p, _ in patterns) or r"(?!)"
            if scan is not None:
                # The class again as a look-ahead: re tries an alternation at
                # every position from the first candidate on, each of its
                # patterns in turn; the look-ahead turns a position no match
                # can start at away with one class test.
                alternation = f"(?={scan.pattern})(?:{alternation})"
            out[category][scripts] = (re.compile(alternation, re.I), scan)
    return out


def _scan(firsts: Iterable[frozenset[str] | None]) -> re.Pattern | None:
    """A class of every character in ``firsts``; None when one is unknown."""
    chars: set[str] = set()
    for found in firsts:
        if found is None:
            return None
        chars |= found
    return re.compile("[" + "".join(re.escape(c) for c in sorted(chars)) + "]") if chars else None


def _reading(vocabulary: v.Vocabulary) -> tuple[dict, dict[str, dict], dict[str, dict], dict[tuple, object], dict]:
    """Each category's alternations, compiled once per vocabulary; per kind
    of reading, the answers already given (text -> answer); per category
    the texts already tested; the values remembered by name; and each
    category's patterns a text of given scripts can match (kept with the
    vocabulary itself, so an id reused for another is never confused).

    Answers are kept per kind in dicts keyed by the text alone: the garbage
    collector walks only the values of a dict whose keys are all strings
    (not its keys), and none of a dict whose values hold no container (a
    yes/no, None, a shared answer) — each full collection walked every
    (kind, text) key of one mixed memo (issue 14)."""
    cached = _READINGS.get(id(vocabulary))
    if cached is None or cached[0] is not vocabulary:
        if len(_READINGS) > 64:
            _READINGS.clear()
        possible = _possible(vocabulary)
        compiled = _alternations(vocabulary, possible)
        cached = _READINGS[id(vocabulary)] = (vocabulary, compiled, {}, {category: {} for category in compiled}, {},
                                              possible)
    return cached[1], cached[2], cached[3], cached[4], cached[5]


def forget_readings() -> None:
    """Forget everything read so far — every vocabulary's answers and kept
    readings, and the ``memoised`` texts: a process starts reading afresh
    (tests use it so that no test passes on what another one read)."""
    _READINGS.clear()
    forget_memos()


# The four answers of ``_scripts``, made once: its memo then holds only
# strings and these, and a dict holding no new container is one the garbage
# collector never walks (issue 14).
_SCRIPTS = {(latin, cjk): (latin, cjk) for latin in (False, True) for cjk in (False, True)}


@memoised
def _scripts(text: str) -> tuple[bool, bool]:
    return _SCRIPTS[bool(LATIN_LETTER.search(text)), bool(CJK_CHAR.search(text))]


class Reader:
    """The scope's vocabulary, read once per text: a yes/no test is one
    search of the category's alternation, a match is asked of the
    vocabulary only when that search found something, and every answer is
    kept. Both languages are always tried (mixed conversations exist); a
    category the vocabulary does not have matches nothing."""

    def __init__(self, vocabulary: v.Vocabulary = v.DEFAULT):
        self.vocabulary = vocabulary
        self._any, self._memo, self._tested, self._remembered, self._possible = _reading(vocabulary)

    def kept(self, kind: str, text: str, compute):
        """``compute()`` remembered as the ``kind`` reading of ``text`` (at most
        ``_MEMO`` texts per kind; a full kind forgets its oldest eighth)."""
        if len(text) > _MEMO_TEXT:
            return compute()
        memo = self._memo.get(kind)
        if memo is None:
            memo = self._memo[kind] = {}
        found = memo.get(text, _MISSING)  # one lookup: another reading may clear the memo meanwhile
        if found is _MISSING:
            if len(memo) >= _MEMO:
                forget_oldest(memo)
            found = memo[text] = compute()
        return found

    def remembered(self, key: tuple):
        """What ``remember`` kept under ``key``, or None."""
        return self._remembered.get(key)

    def remember(self, key: tuple, value, *, limit: int) -> None:
        """Keep ``value`` under ``key`` (at most ``limit`` such values per
        first key element; the oldest goes). Kept apart from the readings,
        so forgetting readings never forgets these, nor lets them outlive
        ``limit``."""
        kind = key[0]
        names = self._remembered.setdefault((kind, "names"), [])
        if key in names:
            names.remove(key)
        names.append(key)
        while len(names) > limit:
            self._remembered.pop(names.pop(0), None)
        self._remembered[key] = value

    def matches(self, category: str, text: str) -> bool:
        tested = self._tested.get(category)
        if tested is None:
            return False
        found = tested.get(text)
        if found is None:
            found = self._search(category, tested, text, _scripts(text))
        return found

    def _search(self, category: str, tested: dict, text: str, scripts: tuple[bool, bool]) -> bool:
        """One search of ``category``'s alternation for a text of ``scripts``,
        its answer kept in ``tested`` (the category's yes/no memo)."""
        alternation, scan = self._any[category][scripts]
        if scan is None:
            found = alternation.search(text) is not None
        else:  # no match starts before the first character one can start with
            start = scan.search(text)
            found = start is not None and alternation.search(text, start.start()) is not None
        if len(text) <= _MEMO_TEXT:
            if len(tested) >= _TESTED:
                forget_oldest(tested)
            tested[text] = found
        return found

    def categories(self, text: str, categories: Iterable[str]) -> set[str]:
        """Those of ``categories`` that ``text`` matches: ``matches`` of each,
        with the text's scripts read once for all of them (a clause's role
        asks nine at once)."""
        out = set()
        scripts = None
        for category in categories:
            tested = self._tested.get(category)
            if tested is None:
                continue
            found = tested.get(text)
            if found is None:
                if scripts is None:
                    scripts = _scripts(text)
                found = self._search(category, tested, text, scripts)
            if found:
                out.add(category)
        return out

    def find(self, category: str, text: str) -> re.Match | None:
        """The first pattern's match, Chinese patterns first (the vocabulary's order)."""
        if not self.matches(category, text):
            return None
        return self.kept("find " + category, text, lambda: self._find(category, text))

    def _tried(self, category: str, text: str):
        """The patterns of ``category`` that may match ``text``, in order:
        those of its scripts (``_possible``) whose matches can start with
        one of its characters (``first_chars``)."""
        chars = set(text)
        return (pattern for pattern, firsts in self._possible[category][_scripts(text)]
                if firsts is None or not firsts.isdisjoint(chars))

    def _find(self, category: str, text: str) -> re.Match | None:
        return next(filter(None, (pattern.search(text) for pattern in self._tried(category, text))), None)

    def find_all(self, category: str, text: str, *, keep: bool = True) -> list[re.Match]:
        """Every match, by position then length (longest first); only the
        patterns the text's scripts can match are tried (the others find
        nothing in it). Kept per text unless ``keep`` is false."""
        if not self.matches(category, text):
            return []
        if not keep:
            return self._find_all(category, text)
        return self.kept("find_all " + category, text, lambda: self._find_all(category, text))

    def _find_all(self, category: str, text: str) -> list[re.Match]:
        return sorted([m for pattern in self._tried(category, text) for m in pattern.finditer(text)],
                      key=lambda m: (m.start(), -(m.end() - m.start())))

    def unnegated(self, category: str, text: str) -> re.Match | None:
        """The first match of ``category`` that no negation undoes."""
        for match in self.find_all(category, text):
            if not negated(text, match.start()):
                return match
        return None

    def without(self, text: str, categories: Iterable[str], *, keep: bool = True) -> str:
        """``text`` with every match of ``categories`` blanked out (the matches
        kept per text unless ``keep`` is false)."""
        spans = sorted(m.span() for c in categories for m in self.find_all(c, text, keep=keep))
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
        names AirPods and Max, not 多少. Read each time it is asked, nothing
        kept: the drift checks ask it once per user message, whose reading
        keeps the answer as long as its chain is remembered
        (``drift.reading.UserReading.own_terms``); kept here as well, each
        set and the matches it was read from were objects every full garbage
        collection walked, for a message never asked again (issue 14)."""
        return key_terms(self.without(text, (v.CONSENT, v.HOLD, v.ABANDON, v.QUESTION), keep=False))
