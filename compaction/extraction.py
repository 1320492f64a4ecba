"""Extractive summary of ten assistant answers (SPEC §5 ``extractive`` provider).

Pure and deterministic: the same answers always give the same text. It picks
whole sentences under a length target (default 1,500 characters), preferring
sentences that carry numbers, dates, names, identifiers, decisions and
negations — the facts a lossy summary most often bends (seed 000 §1: "as of
last week" must not become "current") — keeps them in their original order
and labels each answer's sentences with that answer's message id. It works
on Chinese (split after 。！？；and at line breaks) and English (split after
. ! ? followed by a space), and copies sentences verbatim so it writes in
the text's own language.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_TARGET_CHARS = 1500

# Chinese sentence ends need no following space; English ones do, so that
# "3.5" or "e.g." inside a sentence does not split it.
_SPLIT = re.compile(r"(?<=[。！？；!?])|(?<=[.;])(?=\s)|\n+")

_NUMBER = re.compile(r"\d|[零一二三四五六七八九十百千万亿]+[元个次天月年日号%]")
_DATE = re.compile(
    r"\d{4}-\d{1,2}-\d{1,2}|\d{1,2}/\d{1,2}(/\d{2,4})?|\d+\s*[年月日号]|"
    r"\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d|"
    r"\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday|today|tomorrow|yesterday)\b|"
    r"(今天|明天|昨天|上周|下周|本周|周[一二三四五六日]|星期[一二三四五六日天])",
    re.IGNORECASE,
)
_IDENTIFIER = re.compile(r"\b(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{3,}\b|#\d+|\b[A-Z]{2,}\b")
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*|[《「“\"][^》」”\"]{1,40}[》」”\"]")
_DECISION = re.compile(
    r"\b(decid\w*|agreed?|confirm\w*|recommend\w*|must|should|will|choose|chose|approved?|book\w*|cancel\w*|"
    r"selected|final)\b|(决定|确认|建议|推荐|同意|必须|应该|将会|选择|预订|取消|批准|最终)",
    re.IGNORECASE,
)
_NEGATION = re.compile(
    r"\b(not|no|never|none|cannot|can't|don't|doesn't|didn't|won't|isn't|aren't|wasn't|without|unable)\b|"
    r"[不没无未别勿非]",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Sentence:
    answer: int  # position of the answer among the inputs
    position: int  # position of the sentence inside its answer
    text: str
    score: int


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SPLIT.split(text) if s and s.strip()]


def sentence_score(sentence: str) -> int:
    """How much a sentence is worth keeping: each kind of hard fact adds."""
    score = 0
    if _NUMBER.search(sentence):
        score += 3
    if _DATE.search(sentence):
        score += 2
    if _IDENTIFIER.search(sentence):
        score += 2
    if _NAME.search(sentence):
        score += 1
    if _DECISION.search(sentence):
        score += 2
    if _NEGATION.search(sentence):
        score += 2
    if len(sentence) < 6:
        score -= 2
    return score


def _label(message_id: str) -> str:
    return f"[{message_id}] "


def _join(kept: list[str]) -> str:
    # Chinese sentences run on without spaces; others are separated by one.
    out = kept[0]
    for s in kept[1:]:
        out += ("" if out[-1] in "。！？；" else " ") + s
    return out


def summarise(answers: list[tuple[str, str]], *, target_chars: int = DEFAULT_TARGET_CHARS) -> str:
    """``answers`` is ``[(assistant message id, text), ...]`` oldest first.

    Every answer first gets its best sentence (if it fits) so no answer
    vanishes; the remaining room goes to the highest-scoring sentences.
    Ties go to the earlier sentence. Output: one line per answer that kept
    anything, ``[id] sentence sentence``, in the original order.
    """
    sentences: list[Sentence] = []
    for a, (_, text) in enumerate(answers):
        for p, s in enumerate(split_sentences(text)):
            sentences.append(Sentence(a, p, s, sentence_score(s)))
    if not sentences:
        return ""

    chosen: set[tuple[int, int]] = set()
    used = 0
    opened: set[int] = set()  # answers whose label is already paid for

    def cost(s: Sentence) -> int:
        # A sentence costs its length plus a separator, and its answer's
        # label and line break the first time that answer is used.
        extra = 0 if s.answer in opened else len(_label(answers[s.answer][0])) + 1
        return len(s.text) + 1 + extra

    def take(s: Sentence) -> bool:
        nonlocal used
        c = cost(s)
        if used + c > target_chars:
            return False
        chosen.add((s.answer, s.position))
        opened.add(s.answer)
        used += c
        return True

    by_rank = sorted(sentences, key=lambda s: (-s.score, s.answer, s.position))
    best_per_answer: dict[int, Sentence] = {}
    for s in by_rank:
        best_per_answer.setdefault(s.answer, s)
    for a in sorted(best_per_answer):
        take(best_per_answer[a])
    for s in by_rank:
        if (s.answer, s.position) not in chosen:
            take(s)

    if not chosen:
        # Not even one sentence fits: keep the start of the best one, marked
        # as cut, rather than return nothing.
        s = by_rank[0]
        label = _label(answers[s.answer][0])
        room = max(0, target_chars - len(label) - 1)
        return label + s.text[:room] + "…"

    lines = []
    for a, (message_id, _) in enumerate(answers):
        kept = [s.text for s in sentences if s.answer == a and (a, s.position) in chosen]
        if kept:
            lines.append(_label(message_id) + _join(kept))
    return "\n".join(lines)
