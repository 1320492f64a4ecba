"""How a user message is read: cut into clauses, each with one role
(SPEC §7, §8; seed 001 "交接单该装什么").

Pure, and the one reading of user messages: the offline builder and the
drift checks both take a clause's role from ``classify``.

**Cutting.** A message is cut at sentence ends (。！？!?；; a line break, a
full stop before a space, an ellipsis) and inside a sentence at clause marks
(，：, and , or : not between digits). ``cut`` gives every piece — the unit
the drift checks read. ``split`` gives what the builder quotes: each clause a
verbatim slice of the message, where a short part ("算了", "好的", "Yes",
"OK") stays with the part after it and, in English, a comma inside a list
("wifi, parking, and breakfast") does not cut.

**Roles**, from the one vocabulary (``compaction.handoff.vocabulary``), in
this order of precedence:

- ``abandon`` — the user drops a matter (不买了 / forget it), not right after
  a negation ("don't forget it") and not asked as a question;
- ``hold`` — the user puts something on hold or withdraws it (先别提交 /
  hold off), including a negated consent (不同意 / I don't agree), not asked
  as a question;
- ``question`` — asking, comparing, learning, or asking the assistant for a
  list, comparison, plan, text, look-up or recommendation (seed 001: 都是提问),
  unless it is a direct request to act (帮我提交 / please file), which is a
  requirement even phrased as a question; a go-ahead, a hold or a drop
  asked as a question ("可以提交了吗？", "能不能先别提交？") is a question;
- ``consent`` — a go-ahead (我同意办理 / 现在可以提交了 / go ahead);
- ``request`` — the user wants something done: a direct request to act
  (``direct_request``), or request words with a verb that acts (``action``)
  and no hedge (``undecided``);
- ``constraint`` — a condition: negation, only, a bound, a deadline, a
  quantity;
- ``statement`` — anything else.

A clause whose role is not ``question`` and which matches the constraint
words is a user condition (``is_condition``) whatever its role: a hold
"先别提交" is a condition too, which is why the builder keeps it quoted.

``topics`` and ``affinity`` say which matter a clause is about (the
builder's matter lines). Key terms, identifiers, negation and what a line
keeps are ``compaction.handoff.reading``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Sequence

from . import vocabulary as v
from .reader import Reader
from .reading import edge_strip, identifiers, key_terms, memoised, negated

ABANDON = "abandon"
HOLD = "hold"
CONSENT = "consent"
QUESTION = "question"
REQUEST = "request"
CONSTRAINT = "constraint"
STATEMENT = "statement"
ROLES = (ABANDON, HOLD, CONSENT, QUESTION, REQUEST, CONSTRAINT, STATEMENT)

# A direct request to act is a requirement even when phrased as a question.
DIRECT_REQUEST = v.DIRECT_REQUEST

# Where a message is cut: sentence ends, then clause marks inside a
# sentence (a comma or colon between digits, as in 1,899 or 10:00, is none).
_SENTENCE_END = re.compile(r"[。！？!?；;\n]+|(?<![0-9])\.(?=\s|$)|…{2,}|\.{3,}")
_CLAUSE_MARK = re.compile(r"[，：]|,(?!\d)|:(?!\d)")
_ANY_END = re.compile(f"(?:{_SENTENCE_END.pattern}|{_CLAUSE_MARK.pattern})+")
# Every match of ``_ANY_END`` starts with one of these: a class scan finds
# where the next one can start, where ``finditer`` tries every position
# against every mark (``_ends``: the same matches).
_END_START = re.compile(r"[。！？!?；;\n.…，：,:]")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’-]*")
EDGE_PUNCT = " \t\r\n，,。.！!；;：:、…~～"
# Words that mark a line as the writer's, not a user's, must not reach a
# quote: a quoted text holding them would be read as a second quote.
QUOTE_BREAKERS = re.compile(r"原话|quote:", re.I)


@dataclass(frozen=True)
class Clause:
    text: str  # verbatim slice of the message, edge punctuation stripped
    role: str
    kinds: frozenset[str]  # every vocabulary category the clause matches
    start: int = -1  # where the slice starts in the message (-1: read back from a note)

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
    cuts = [start] + [m.end() for m in _CLAUSE_MARK.finditer(text, start, end)] + [end]
    parts = [(a, b) for a, b in zip(cuts, cuts[1:]) if text[a:b].strip(EDGE_PUNCT)]
    merged: list[tuple[int, int]] = []
    pending: tuple[int, int] | None = None
    for a, b in parts:
        if pending is not None:
            a = pending[0]
            pending = None
        piece = text[a:b]
        latin = _cjk_count(piece) == 0
        previous_latin = bool(merged) and _cjk_count(text[merged[-1][0]:merged[-1][1]]) == 0
        if latin and previous_latin and _is_short(piece.strip(EDGE_PUNCT)):
            merged[-1] = (merged[-1][0], b)  # "wifi, parking, and breakfast": a list goes on
            continue
        if _is_short(piece.strip(EDGE_PUNCT)):
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
            lead = len(piece) - len(piece.lstrip(EDGE_PUNCT))
            clause = piece.strip(EDGE_PUNCT)
            if clause:
                out.append((a + lead, clause))
    return out


@memoised
def cut(text: str) -> tuple[str, ...]:
    """``text`` cut at every sentence end and clause mark, without merging:
    the unit the drift checks read (a short "算了" is a clause of its own).
    Each clause keeps a closing ``？`` / ``?`` (it tells a question) and
    loses other edge punctuation."""
    out, start = [], 0
    for match in _ends(text):
        piece = text[start:match.start()].strip()
        start = match.end()
        if edge_strip(piece):
            out.append(piece + ("？" if "?" in match.group() or "？" in match.group() else ""))
    tail = text[start:].strip()
    if edge_strip(tail):
        out.append(tail)
    return tuple(out)


def _ends(text: str):
    """``_ANY_END.finditer(text)``: each match, tried only where one of its
    first characters stands."""
    at = 0
    while True:
        candidate = _END_START.search(text, at)
        if candidate is None:
            return
        match = _ANY_END.match(text, candidate.start())
        if match is None:
            at = candidate.start() + 1
        else:
            yield match
            at = match.end()


def reader(vocabulary: v.Vocabulary | Reader) -> Reader:
    return vocabulary if isinstance(vocabulary, Reader) else Reader(vocabulary)


def matches(vocabulary: v.Vocabulary | Reader, category: str, text: str) -> bool:
    """Whether ``text`` matches ``category`` in either language; a category
    the vocabulary does not have matches nothing."""
    return reader(vocabulary).matches(category, text)


def _consent(vocabulary: Reader, text: str) -> tuple[bool, bool]:
    """(has a consent, has a negated one): 不同意 withdraws rather than agrees."""
    plain = negative = False
    for match in vocabulary.find_all(v.CONSENT, text):
        if negated(text, match.start()):
            negative = True
        else:
            plain = True
    return plain, negative


# An English imperative "Do not …" / "Don't …" is a condition, not a question,
# although it starts like "Do you …".
_IMPERATIVE_NOT = re.compile(r"^\s*(please\s+)?(do not|don'?t|never)\b", re.I)


def _requesting(kinds) -> bool:
    """A request: a direct request to act (帮我下单 / please book), or request
    words with a verb that acts and no hedge — "我要上班" acts on nothing,
    "我再想想是去天才吧还是寄修" and "要是寄修的话" decide nothing."""
    return DIRECT_REQUEST in kinds or (v.REQUEST in kinds and v.ACTION in kinds and v.UNDECIDED not in kinds)


def is_question(text: str, vocabulary: v.Vocabulary | Reader = v.DEFAULT) -> bool:
    """Whether a clause's role is ``question`` — what ``classify`` decides
    first, read without the other categories."""
    vocabulary = reader(vocabulary)
    return _is_question(vocabulary, text, vocabulary.categories(text, _QUESTION_CATEGORIES))


_QUESTION_CATEGORIES = (v.QUESTION, v.DIRECT_REQUEST)


def _is_question(vocabulary: Reader, text: str, kinds: set[str]) -> bool:
    if v.QUESTION not in kinds or DIRECT_REQUEST in kinds:
        return False
    if _IMPERATIVE_NOT.match(text) and not re.search(r"[？?]\s*$", text):
        return matches(vocabulary, v.QUESTION, _IMPERATIVE_NOT.sub("", text))
    return True


# The categories a role is read from (the others say nothing of a user clause's role).
_ROLE_CATEGORIES = (v.ABANDON, v.HOLD, v.CONSENT, v.QUESTION, v.DIRECT_REQUEST, v.REQUEST, v.ACTION, v.UNDECIDED,
                    v.CONSTRAINT)


def classify(text: str, vocabulary: v.Vocabulary | Reader = v.DEFAULT) -> tuple[str, frozenset[str]]:
    """A clause's role and every category of ``_ROLE_CATEGORIES`` it matches
    (see the module doc). The question test sees the clause with the
    sentence's own question mark, which ``read`` keeps for the last clause
    of a question sentence. Remembered per text: the builder and the drift
    checks read the same clauses."""
    vocabulary = reader(vocabulary)
    return vocabulary.kept("classify", text, lambda: _classify(text, vocabulary))


# Each answer (a role and the set of categories matched) once: there are a
# few dozen of them, and every remembered reading holding its own copy was
# two more objects each full garbage collection walks (issue 14).
_ANSWERS: dict[tuple[str, frozenset[str]], tuple[str, frozenset[str]]] = {}


def _classify(text: str, vocabulary: Reader) -> tuple[str, frozenset[str]]:
    answer = _role(text, vocabulary)
    return _ANSWERS.setdefault(answer, answer)


def _role(text: str, vocabulary: Reader) -> tuple[str, frozenset[str]]:
    kinds = vocabulary.categories(text, _ROLE_CATEGORIES)
    consent, negated_consent = _consent(vocabulary, text)
    if not consent:
        kinds.discard(v.CONSENT)
    question = _is_question(vocabulary, text, kinds)
    if v.ABANDON in kinds and not question and vocabulary.unnegated(v.ABANDON, text):
        return ABANDON, frozenset(kinds)
    if (v.HOLD in kinds or negated_consent) and not question:
        return HOLD, frozenset(kinds | {v.HOLD})
    if question:
        # A go-ahead, a hold or a drop asked as a question ("可以提交了吗？",
        # "能不能先别提交？") agrees, holds and drops nothing.
        return QUESTION, frozenset(kinds)
    if consent:
        return CONSENT, frozenset(kinds)
    if _requesting(kinds):
        return REQUEST, frozenset(kinds)
    if v.CONSTRAINT in kinds:
        return CONSTRAINT, frozenset(kinds)
    return STATEMENT, frozenset(kinds)


_SUPPOSABLE = frozenset({HOLD, CONSENT, ABANDON})


def supposed(clauses: Sequence[str], roles: Sequence[str], vocabulary: v.Vocabulary | Reader = v.DEFAULT
             ) -> list[str]:
    """``roles`` of consecutive ``clauses`` of one message, with a go-ahead,
    hold or drop that supposes (``vocabulary.SUPPOSE``) and is followed by a
    question read as that question: "如果我先别提交，会怎样？" and "if I hold
    off, what happens?" hold nothing, as "能不能先别提交？" holds nothing."""
    out = list(roles)
    for i in range(len(out) - 1):
        if out[i] in _SUPPOSABLE and out[i + 1] == QUESTION and matches(vocabulary, v.SUPPOSE, clauses[i]):
            out[i] = QUESTION
    return out


def read(text: str, vocabulary: v.Vocabulary | Reader = v.DEFAULT) -> list[Clause]:
    """Every clause of one user message with its role. A clause is classified
    with the question mark that closes its sentence, so "有货吗？" and
    "can I bring a dog?" read as questions although the mark is not quoted."""
    vocabulary = reader(vocabulary)
    clauses = []
    for start, clause in split(text):
        end = start + len(clause)
        trailing = re.match(r"[？?]+", text[end:end + 2])
        role, kinds = classify(clause + (trailing.group() if trailing else ""), vocabulary)
        clauses.append(Clause(text=clause, start=start, role=role, kinds=kinds))
    roles = supposed([c.text for c in clauses], [c.role for c in clauses], vocabulary)
    return [c if c.role == role else replace(c, role=role) for c, role in zip(clauses, roles)]


def quotable(clause: str) -> bool:
    """Whether a clause can stand in a quote and read back as itself."""
    return bool(clause.strip()) and not QUOTE_BREAKERS.search(clause)


# --- which matter a text is about: ids and key terms --------------------------


def ids(text: str) -> set[str]:
    """The identifiers ``text`` names (``reading.identifiers``)."""
    return set(identifiers(text))


def topics(text: str) -> set[str]:
    """What ``text`` is about, for telling matters apart: its identifiers
    (marked ``#``) and its other key terms (``reading.key_terms``)."""
    marked = {i.lower() for i in identifiers(text)}
    return {f"#{i}" for i in marked} | {t for t in key_terms(text) if t not in marked}


def ids_conflict(a: set[str], b: set[str]) -> bool:
    """Both name ids and share none: 订单66001 and 订单66002 are two matters."""
    ids_a = {t for t in a if t.startswith("#")}
    ids_b = {t for t in b if t.startswith("#")}
    return bool(ids_a and ids_b and not ids_a & ids_b)


def affinity(a: set[str], b: set[str]) -> int:
    """How strongly two topic sets point at the same matter: a shared id
    counts 3, a shared Latin word or number 2, a shared Chinese term 1 (the
    key terms' worth). Two texts that each name ids, none of them shared,
    are about different things (订单66001 and 订单66002): 0."""
    if ids_conflict(a, b):
        return 0
    return sum(3 if token.startswith("#") else 2 if token[0].isascii() else 1 for token in a & b)
