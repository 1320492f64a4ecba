"""How a user message is read: cut into clauses, each with what it says
(SPEC §7, §8; seed 001 "交接单该装什么").

Pure. The offline builder quotes the user clause by clause, so every quote is
a verbatim substring of a user message (a clause is a slice of the message,
stripped). A message is cut at sentence ends (。！？!?；; a line break, a
full stop before a space) and then at commas, except that a short part
("算了", "好的", "Yes", "OK") stays with the part after it and, in English,
a comma inside a list ("wifi, parking, and breakfast") does not cut.

Each clause gets one **role**, from the one vocabulary
(``compaction.handoff.vocabulary``), in this order of precedence:

- ``abandon`` — the user drops a matter (不买了 / forget it);
- ``hold`` — the user puts something on hold or withdraws it (先别提交 /
  hold off), including a negated consent (不同意 / I don't agree);
- ``question`` — asking, comparing, learning, or asking the assistant for a
  list, comparison, plan, text, look-up or recommendation (seed 001: 都是提问),
  unless it is a direct request to act (帮我提交 / please file), which is a
  requirement even phrased as a question; a go-ahead asked as a question
  ("可以提交了吗？") is a question, not a consent;
- ``consent`` — a go-ahead (我同意办理 / 现在可以提交了 / go ahead);
- ``request`` — the user wants something done: a direct request to act
  (``direct_request``, where the vocabulary has it), or request words with
  a verb that acts (``action``) and no hedge (``undecided``);
- ``constraint`` — a condition: negation, only, a bound, a deadline, a
  quantity;
- ``statement`` — anything else.

A clause whose role is not ``question`` and which matches the constraint
words is a user condition (``is_condition``) whatever its role: a hold
"先别提交" is a condition too, which is why the builder keeps it quoted.

``keeps`` and ``key_terms`` answer "does this note line already keep that
clause?" exactly as the drift checks (SPEC §8, ``lost_constraint`` and
``growth_without_new_matters``) do, so the builder never drops what they
count as kept nor adds what they count as nothing new. They mirror the
drift checks' reading and must stay the same as it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import vocabulary as v

ABANDON = "abandon"
HOLD = "hold"
CONSENT = "consent"
QUESTION = "question"
REQUEST = "request"
CONSTRAINT = "constraint"
STATEMENT = "statement"
ROLES = (ABANDON, HOLD, CONSENT, QUESTION, REQUEST, CONSTRAINT, STATEMENT)

# A direct request to act is a requirement even when phrased as a question.
# The category joins the vocabulary with the drift checks; until it is
# there, reading simply does without it.
DIRECT_REQUEST = getattr(v, "DIRECT_REQUEST", "direct_request")

_SENTENCE_END = re.compile(r"[。！？!?；;\n]+|(?<![0-9])\.(?=\s|$)|…{2,}|\.{3,}")
_COMMA = re.compile(r"[，,]")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’-]*")
_EDGE_PUNCT = " \t\r\n，,。.！!；;：:、…~～"
# Negations that undo a consent just before it: 不同意 / I don't agree.
_ZH_NEGATION = re.compile(r"(不|没|未|别|不再)$")
_EN_NEGATION = re.compile(r"\b(not|don'?t|do not|never|no longer|won'?t|didn'?t)\s+(\w+\s+)?$", re.I)
# Words that mark a line as the writer's, not a user's, must not reach a
# quote: a quoted text holding them would be read as a second quote.
QUOTE_BREAKERS = re.compile(r"原话|quote:", re.I)


@dataclass(frozen=True)
class Clause:
    text: str  # verbatim slice of the message, edge punctuation stripped
    start: int  # where the slice starts in the message
    role: str
    kinds: frozenset[str]  # every vocabulary category the clause matches

    @property
    def is_condition(self) -> bool:
        return self.role != QUESTION and v.CONSTRAINT in self.kinds


def _cjk_count(text: str) -> int:
    return len(_CJK.findall(text))


def _word_count(text: str) -> int:
    return len(_WORD.findall(text))


def _is_short(text: str) -> bool:
    """A filler part that does not stand alone: 算了 / 好的 / Yes / OK."""
    return _cjk_count(text) <= 2 and _word_count(text) <= 1


def _spans(text: str) -> list[tuple[int, int]]:
    """Sentence slices of ``text`` (terminators kept with their sentence)."""
    spans, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        spans.append((start, match.end()))
        start = match.end()
    if start < len(text):
        spans.append((start, len(text)))
    return spans


def _parts(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Comma parts of one sentence, short and English list parts merged."""
    cuts = [start] + [m.end() for m in _COMMA.finditer(text, start, end)] + [end]
    parts = [(a, b) for a, b in zip(cuts, cuts[1:]) if text[a:b].strip(_EDGE_PUNCT)]
    merged: list[tuple[int, int]] = []
    pending: tuple[int, int] | None = None
    for a, b in parts:
        if pending is not None:
            a = pending[0]
            pending = None
        piece = text[a:b]
        latin = _cjk_count(piece) == 0
        previous_latin = bool(merged) and _cjk_count(text[merged[-1][0]:merged[-1][1]]) == 0
        if latin and previous_latin and _is_short(piece.strip(_EDGE_PUNCT)):
            merged[-1] = (merged[-1][0], b)  # "wifi, parking, and breakfast": a list goes on
            continue
        if _is_short(piece.strip(_EDGE_PUNCT)):
            if (a, b) != parts[-1]:
                pending = (a, b)  # "算了，" joins the next part
                continue
            if merged:
                merged[-1] = (merged[-1][0], b)  # "…左耳，订单88232" stays with what it qualifies
                continue
        if merged and latin and _cjk_count(text[merged[-1][0]:merged[-1][1]]) == 0 and (
                _word_count(piece) < 3 or _word_count(text[merged[-1][0]:merged[-1][1]]) < 3):
            merged[-1] = (merged[-1][0], b)  # an English list, not two clauses
            continue
        merged.append((a, b))
    if pending is not None:
        if merged:
            merged[-1] = (merged[-1][0], pending[1])
        else:
            merged.append(pending)
    return merged


def split(text: str) -> list[tuple[int, str]]:
    """``(start, clause)`` for every clause of ``text``; each clause is
    exactly ``text[start:start + len(clause)]``."""
    out = []
    for s_start, s_end in _spans(text):
        for a, b in _parts(text, s_start, s_end):
            piece = text[a:b]
            lead = len(piece) - len(piece.lstrip(_EDGE_PUNCT))
            clause = piece.strip(_EDGE_PUNCT)
            if clause:
                out.append((a + lead, clause))
    return out


def _patterns(vocabulary: v.Vocabulary, category: str):
    for patterns in vocabulary.patterns.get(category, {}).values():
        yield from patterns


def matches(vocabulary: v.Vocabulary, category: str, text: str) -> bool:
    """Whether ``text`` matches ``category`` in either language; a category
    the vocabulary does not have matches nothing."""
    return any(p.search(text) for p in _patterns(vocabulary, category))


def _negated(text: str, start: int) -> bool:
    before = text[:start]
    return bool(_ZH_NEGATION.search(before[-2:]) or _EN_NEGATION.search(before[-24:]))


def _consent(vocabulary: v.Vocabulary, text: str) -> tuple[bool, bool]:
    """(has a consent, has a negated one): 不同意 withdraws rather than agrees."""
    plain = negated = False
    for pattern in _patterns(vocabulary, v.CONSENT):
        for match in pattern.finditer(text):
            if _negated(text, match.start()):
                negated = True
            else:
                plain = True
    return plain, negated


# An English imperative "Do not …" / "Don't …" is a condition, not a question,
# although it starts like "Do you …".
_IMPERATIVE_NOT = re.compile(r"^\s*(please\s+)?(do not|don'?t|never)\b", re.I)


def _requesting(kinds) -> bool:
    """A request: a direct request to act (帮我下单 / please book), or request
    words with a verb that acts and no hedge — "我要上班" acts on nothing,
    "我再想想是去天才吧还是寄修" and "要是寄修的话" decide nothing."""
    return DIRECT_REQUEST in kinds or (v.REQUEST in kinds and v.ACTION in kinds and v.UNDECIDED not in kinds)


def _is_question(vocabulary: v.Vocabulary, text: str, kinds: set[str]) -> bool:
    if v.QUESTION not in kinds or DIRECT_REQUEST in kinds:
        return False
    if _IMPERATIVE_NOT.match(text) and not re.search(r"[？?]\s*$", text):
        return matches(vocabulary, v.QUESTION, _IMPERATIVE_NOT.sub("", text))
    return True


def classify(text: str, vocabulary: v.Vocabulary = v.DEFAULT) -> tuple[str, frozenset[str]]:
    """A clause's role and every category it matches (see the module doc).
    The question test sees the clause with the sentence's own question mark,
    which ``read`` keeps for the last clause of a question sentence."""
    kinds = {c for c in vocabulary.patterns if matches(vocabulary, c, text)}
    consent, negated_consent = _consent(vocabulary, text)
    if not consent:
        kinds.discard(v.CONSENT)
    if v.ABANDON in kinds:
        return ABANDON, frozenset(kinds)
    if v.HOLD in kinds or negated_consent:
        return HOLD, frozenset(kinds | {v.HOLD})
    if _is_question(vocabulary, text, kinds):
        # A go-ahead asked as a question ("可以提交了吗？") agrees to nothing.
        return QUESTION, frozenset(kinds)
    if consent:
        return CONSENT, frozenset(kinds)
    if _requesting(kinds):
        return REQUEST, frozenset(kinds)
    if v.CONSTRAINT in kinds:
        return CONSTRAINT, frozenset(kinds)
    return STATEMENT, frozenset(kinds)


def read(text: str, vocabulary: v.Vocabulary = v.DEFAULT) -> list[Clause]:
    """Every clause of one user message with its role. A clause is classified
    with the question mark that closes its sentence, so "有货吗？" and
    "can I bring a dog?" read as questions although the mark is not quoted."""
    clauses = []
    for start, clause in split(text):
        end = start + len(clause)
        trailing = re.match(r"[？?]+", text[end:end + 2])
        role, kinds = classify(clause + (trailing.group() if trailing else ""), vocabulary)
        clauses.append(Clause(text=clause, start=start, role=role, kinds=kinds))
    return clauses


def quotable(clause: str) -> bool:
    """Whether a clause can stand in a quote and read back as itself."""
    return bool(clause.strip()) and not QUOTE_BREAKERS.search(clause)


# --- what a text is about: ids, names, CJK word pairs ------------------------

_ID = re.compile(r"(?<![A-Za-z0-9_-])(?:[A-Za-z]{1,8}[-_]?)?\d{3,}(?:[-_][A-Za-z0-9]+)*(?![A-Za-z0-9_])")
_DATE = re.compile(r"^\d{4}[-/.]\d{1,2}([-/.]\d{1,2})?$|^\d{1,2}[-/.]\d{1,2}$")
_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9+]*")
_STOP_WORDS = frozenset("""
a an and are as at be but by can could did do does for from get go had has have he her his how i if in into is it its
just let me more my no not now of off ok okay on or our out please should so some than that the their them then there
these they this to too up us want was we were what when where which who why will with would yes you your need like
also still again hold yet until wait ahead sure thanks thank hi hello sorry about any all one two only under before
after maybe really very much many""".split())
# Pairs that say how, not what: agreeing, timing, hedging words shared by
# every matter would tie unrelated ones together.
_STOP_PAIRS = frozenset("""同意 明确 确认 可以 现在 还是 算了 一下 准备 知道 需要 觉得 应该 没有 问题 谢谢 那边 这边 直接 已经 时候
什么 怎么 如果 因为 所以 但是 然后 不过 其实 大概 一直 感觉 东西 情况 办法 一起 马上 今天 明天 下周 这样 那样 一样 比较
非常 特别 办理 麻烦 帮忙""".split())
# Characters that make a CJK pair a function word, not a topic.
_FUNCTION_CHARS = set("的了吗呢吧啊呀嗯哦我你您他她它这那是在就都也还和与及或把被给让个些么什怎先别不没要想能会可以再又很太")


def ids(text: str) -> set[str]:
    """Identifiers in ``text``: order numbers, ticket ids, codes (dates are not ids)."""
    return {m.group() for m in _ID.finditer(text) if not _DATE.match(m.group())}


def topics(text: str) -> set[str]:
    """The words that say what ``text`` is about: ids, Latin words (product
    names), CJK character pairs that are not function words."""
    found = {f"#{i.lower()}" for i in ids(text)}
    found |= {w.lower() for w in _LATIN_WORD.findall(text) if len(w) >= 2 and w.lower() not in _STOP_WORDS}
    for run in re.findall(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+", text):
        for i in range(len(run) - 1):
            pair = run[i:i + 2]
            if not (set(pair) & _FUNCTION_CHARS) and pair not in _STOP_PAIRS:
                found.add(pair)
    return found


def ids_conflict(a: set[str], b: set[str]) -> bool:
    """Both name ids and share none: 订单66001 and 订单66002 are two matters."""
    ids_a = {t for t in a if t.startswith("#")}
    ids_b = {t for t in b if t.startswith("#")}
    return bool(ids_a and ids_b and not ids_a & ids_b)


def affinity(a: set[str], b: set[str]) -> int:
    """How strongly two topic sets point at the same matter: a shared id
    counts 3, a shared name 2, a shared CJK pair 1. Two texts that each name
    ids, none of them shared, are about different things (订单66001 and
    订单66002): 0."""
    if ids_conflict(a, b):
        return 0
    score = 0
    for token in a & b:
        score += 3 if token.startswith("#") else 1 if _CJK.match(token) else 2
    return score


# --- what the drift checks count as "kept" ----------------------------------
# The builder must never write a note the drift checks (SPEC §8) find lost or
# grown, so it asks "does this line already keep that clause?" the way they
# do: the clause verbatim, or its operator word, every number of it and at
# least 60% of its key terms (Chinese two-character terms without filler
# characters, Latin words of two letters or more).

_KEY_STOP_CHARS = set("的了吗呢吧啊呀哦嗯哈么嘛啦我你您他她它们是在有这那就也都还和与或及把被给让"
                      "对从到会能很太再又过着个些其之而且并但一")
_KEY_GENERIC = {"用户", "助手", "原话", "暂缓", "放弃", "已放", "当前", "目前", "已经", "需要", "提供", "确认", "告知", "补充",
                "一下", "可以", "现在", "什么", "怎么"}
_KEY_LATIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9\-_.]*[A-Za-z0-9]|[A-Za-z0-9]")
_KEY_EN_STOP = set("""a an the and or but to of in on for with at by from is are was were be been being it its this that these
those i me my mine you your yours we our they their them he she his her do does did done can could would should will
shall may might must have has had not no yes please user users assistant quote what which how when where why who
whether if so just about any some there here then than also too very up out into as all get got want wants wanted
need needs like would let lets ok okay thanks thank hi hello""".split())
_KEY_NUMBER = re.compile(r"(?<![\d.])\d[\d,]*(?:\.\d+)?(?![\d])")
_WS = re.compile(r"\s+")
_SPACE_BY_WIDE = re.compile(r" (?=[^\x00-\x7f])|(?<=[^\x00-\x7f]) ")
_KEY_EDGE = " \t\n。，,.!！?？；;、：:" + "\"'“”‘’「」『』"
KEPT_SHARE = 0.6


def normalise(text: str) -> str:
    """Whitespace normalisation (SPEC §8): one space for a run, none beside a
    non-ASCII character."""
    return _SPACE_BY_WIDE.sub("", _WS.sub(" ", text).strip())


def key_terms(text: str) -> frozenset[str]:
    found = set()
    for token in _KEY_LATIN.findall(text):
        token = token.lower()
        if len(token) >= 2 and token not in _KEY_EN_STOP:
            found.add(token)
    for run in re.findall(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+", text):
        for i in range(len(run) - 1):
            pair = run[i:i + 2]
            if pair[0] not in _KEY_STOP_CHARS and pair[1] not in _KEY_STOP_CHARS and pair not in _KEY_GENERIC:
                found.add(pair)
    return frozenset(found)


def key_worth(terms) -> int:
    """A Latin word or number counts 2, a Chinese two-character term 1."""
    return sum(2 if term[0].isascii() else 1 for term in terms)


def key_numbers(text: str) -> set[str]:
    return {n.replace(",", "") for n in _KEY_NUMBER.findall(text)}


def operator(vocabulary: v.Vocabulary, clause: str, categories=(v.CONSTRAINT,)) -> str | None:
    """The phrase that makes a clause a condition (or a hold, a consent):
    the first pattern of the first category that matches."""
    for category in categories:
        match = vocabulary.find(category, clause) if category in vocabulary.patterns else None
        if match:
            return match.group()
    return None


def keeps(text: str, clause: str, vocabulary: v.Vocabulary = v.DEFAULT, categories=(v.CONSTRAINT,)) -> bool:
    """Whether ``text`` (a note line, or several) keeps ``clause``."""
    normal = normalise(text)
    if normalise(clause).strip(_KEY_EDGE) in normal:
        return True
    word = operator(vocabulary, clause, categories)
    if word is None or word.lower() not in normal.lower():
        return False
    if not key_numbers(clause) <= key_numbers(normal):
        return False
    wanted = key_terms(clause) - key_numbers(clause)
    if not wanted:
        return True
    return key_worth(wanted & key_terms(normal)) >= KEPT_SHARE * key_worth(wanted)
