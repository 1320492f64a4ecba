"""Extractive summary of ten assistant answers: the ``extractive-v2``
summariser (SPEC §5 ``extractive`` provider; SPEC §6 "The extractive
provider compresses"; issue 11 item 4).

Pure and deterministic: the same answers always give the same text. It
copies whole sentences verbatim, so it writes in the answers' own language
(Chinese splits after 。！？；, English after . ! ? ; before a space, both at
line breaks).

**Length.** At most 30% of the answers' characters, never more than 1,500,
labels and line breaks included — a summary is worth giving only when it is
cheaper than its source (SPEC §6). At least one sentence: when not even one
fits the 30% target, or when every sentence is left out by the rules below,
the best sentence alone is given whole (cut with "…" only if it is longer
than 1,500 characters).

**What is left out** (carries no fact): sentences that are only greetings,
thanks, acknowledgements or farewells ("Sure!", "好的，谢谢。"); such a
clause opening a sentence ("好的，" "OK, ") is cut off the front; the
assistant's own questions back ("What time would you like?") unless they
carry a number, date, identifier or name — an offer such as "How about
Sino at 7 pm?" is a fact; and near-repeats — a sentence whose characters
are mostly in one already kept and that brings no number, identifier or
name of its own.

**What is kept first.** Each sentence has a score for the kinds of hard
fact it carries — numbers (3), dates (2), identifiers (2), decisions (2),
negations (2), names (1) — a decision includes an outcome (booked, reserved,
failed); very short ones lose 2 — the facts a lossy summary most often bends
(seed 000 §1: "as of last week" must not become "current"). And it states
values (``stated_values``): numbers with their unit, times, days and dates,
identifiers, names — what an assistant tells a user (a price, a phone
number, "11:30 am", "Sino"). Sentences are taken one at a time, always the
one that adds the most per character it costs (label included): three for
each value no kept sentence states yet, plus its score. So a short sentence
with a new phone number beats a long one repeating a name already kept,
and the 30% carries as many of the answers' values as it can. When no
sentence adds a new value, the rest are taken by score (ties to the
shorter, then the earlier) while the text still fits. Kept sentences are
printed in their original order.

**Labels.** One line per answer that kept anything, opening with its
assistant message id: ``[m-1041] sentence sentence``. Labels are paid for
out of the same 30%, so they are kept cheap: a line whose id has the same
length as the previous line's id and shares at least its first three
characters writes only the differing end after "…" (``[…43]`` after
``[m-1041]`` is ``m-1043``); ``labelled_lines`` reads them back.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

DEFAULT_MAX_CHARS = 1500
SHARE_PERCENT = 30  # of the answers' characters
MIN_SHARED_PREFIX = 3  # a shorter shared start saves nothing over "…"
NEAR_REPEAT = 0.8  # share of a sentence's character pairs found in one already kept

# Chinese sentence ends need no following space; English ones do, so that
# "3.5" or "e.g." inside a sentence does not split it.
_SPLIT = re.compile(r"(?<=[。！？；!?])|(?<=[.;])(?=\s)|\n+")
_CJK_END = "。！？；"

_NUMBER = re.compile(r"\d|[零一二三四五六七八九十百千万亿]+[元个次天月年日号%]")
_DATE = re.compile(
    r"\d{4}-\d{1,2}-\d{1,2}|\d{1,2}/\d{1,2}(/\d{2,4})?|\d+\s*[年月日号]|"
    r"\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d|"
    r"\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday|today|tomorrow|yesterday)\b|"
    r"(今天|明天|昨天|上周|下周|本周|周[一二三四五六日]|星期[一二三四五六日天])",
    re.IGNORECASE,
)
_IDENTIFIER = re.compile(r"\b(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{3,}\b|#\d+|\b[A-Z]{2,}\b")
_NAME = re.compile(
    r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*|[《「“\"][^》」”\"]{1,40}[》」”\"]|"
    # Chinese proper names of places and businesses end in a small set of nouns.
    r"[\u4e00-\u9fff]{2,}(?:酒店|宾馆|饭店|餐厅|公园|博物馆|大厦|广场|中心|店|馆|园|院|寺|宫|楼|塔|桥|路|街|镇|村|站|城)"
)
_DECISION = re.compile(
    r"\b(decid\w*|agreed?|confirm\w*|recommend\w*|must|should|will|choose|chose|approved?|book\w*|cancel\w*|"
    r"reserv\w*|selected|final|success\w*|unsuccessful|fail\w*)\b|"
    r"(决定|确认|建议|推荐|同意|必须|应该|将会|选择|预订|预约|取消|批准|最终|成功|失败)",
    re.IGNORECASE,
)
_NEGATION = re.compile(
    r"\b(not|no|never|none|cannot|can't|don't|doesn't|didn't|won't|isn't|aren't|wasn't|without|unable)\b|"
    r"[不没无未别勿非]",
    re.IGNORECASE,
)

# Greetings, thanks, acknowledgements and farewells: a sentence made only of
# these says nothing a later run needs.
_FILLER_WORDS = (
    r"(?:hello|hi|hey)(?: there)?|greetings|good (?:morning|afternoon|evening)|welcome|"
    r"(?:thanks|thank you)(?: a lot| so much| very much)?(?: for \w+(?: \w+)?)?|"
    r"you'?re welcome|my pleasure|no problem|ok(?:ay)?|sure(?: thing)?|certainly|of course|absolutely|"
    r"al(?:l ?)?right|got it|great|perfect|understood|noted|i see|sounds good|i can (?:do|help with) that|"
    r"(?:my )?apologies|(?:i'?m |i am )?(?:so |very )?sorry|i apologi[sz]e|"
    r"(?:i'?m )?(?:glad|happy) to help|(?:good)?bye|see you|take care|"
    r"have a (?:nice|great|good|wonderful) (?:day|evening|trip|time)|enjoy(?: your \w+)?|"
    r"你好|您好|嗨|早上好|下午好|晚上好|欢迎|谢谢(?:您|你)?|感谢(?:您|你)?|多谢|不客气|不用谢|没关系|"
    r"好的|好|嗯|行|可以|没问题|明白(?:了)?|知道了|收到|了解|当然|再见|拜拜|抱歉|对不起|不好意思|"
    r"祝(?:您|你)(?:旅途|用餐|生活)?愉快|很高兴为(?:您|你)服务|乐意效劳"
)
_FILLER_SEPARATOR = r"[\s,，、.。!！~～;；:：…]*"
_ONLY_FILLER = re.compile(rf"(?:(?:{_FILLER_WORDS}){_FILLER_SEPARATOR})+", re.IGNORECASE)
_LEADING_FILLER = re.compile(rf"(?:(?:{_FILLER_WORDS})\s*[,，、:：]\s*)+", re.IGNORECASE)
_QUESTION_END = re.compile(r"[?？][\"'”’)）\s]*$")

_LABEL = re.compile(r"\[(.+?)\] ")
_WORD_CHARS = re.compile(r"[\W_]+")
_DIGITS = re.compile(r"\d+")
_ID_TOKEN = re.compile(r"[A-Za-z0-9_-]*\d[A-Za-z0-9_-]*")
_CAPITALISED = re.compile(r"\b[A-Z][a-z]+")
_LATIN_WORD = re.compile(r"[A-Za-z]+")

# Values an assistant states: a number with its unit, a day or date, a
# capitalised name (its leading function words dropped), an identifier.
_VALUE_NUMBER = re.compile(r"\d+(?:[.:,/-]\d+)*(?:\s?(?:am|pm|元|分|号|人|点|%|天|晚|楼))?", re.IGNORECASE)
_VALUE_DAY = re.compile(
    r"\b(?:today|tomorrow|tonight|yesterday|(?:next |this )?(?:monday|tuesday|wednesday|thursday|friday|"
    r"saturday|sunday|week|month)|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d+\w*)\b",
    re.IGNORECASE,
)
_VALUE_NAME = re.compile(r"\b[A-Z][\w'’&-]*(?:\s+(?:&\s+|of\s+|de\s+)?[A-Z0-9][\w'’&-]*)*")
_CJK_CHAR = re.compile(r"[\u4e00-\u9fff]")
# Capitalised only because they open a sentence or are a pronoun: not names.
_NOT_NAMES = frozenset(
    "i the your their you is what which there they it this that yes no do does would will can please okay ok sure "
    "how when where my we a an and its it's i'm i'll i've great alright confirming confirm just here let found "
    "sorry have enjoy thank thanks anything also should shall".split()
)


@dataclass(frozen=True)
class Sentence:
    answer: int  # position of the answer among the inputs
    position: int  # position of the sentence inside its answer
    text: str
    score: int


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SPLIT.split(text) if s and s.strip()]


# What each kind of hard fact adds to a sentence's worth.
_FACT_WEIGHTS = ((_NUMBER, 3), (_DATE, 2), (_IDENTIFIER, 2), (_NAME, 1), (_DECISION, 2), (_NEGATION, 2))


def sentence_score(sentence: str) -> int:
    """How much a sentence is worth keeping: each kind of hard fact adds;
    a very short one loses."""
    score = sum(weight for pattern, weight in _FACT_WEIGHTS if pattern.search(sentence))
    return score - 2 if len(sentence) < 6 else score


def carries_fact(sentence: str) -> bool:
    """A number, date, identifier or name: what makes a question an offer."""
    return any(p.search(sentence) for p in (_NUMBER, _DATE, _IDENTIFIER, _NAME))


def is_filler(sentence: str) -> bool:
    """Only greetings, thanks, acknowledgements or farewells."""
    return _ONLY_FILLER.fullmatch(sentence.strip()) is not None


def is_question_back(sentence: str) -> bool:
    """The assistant asking the user something, with no fact in it."""
    return _QUESTION_END.search(sentence) is not None and not carries_fact(sentence)


def trim_leading_filler(sentence: str) -> str:
    """"好的，为您推荐…" → "为您推荐…": an opening acknowledgement carries nothing."""
    match = _LEADING_FILLER.match(sentence)
    rest = sentence[match.end():] if match else sentence
    return rest if rest.strip() else sentence


@functools.lru_cache(maxsize=4096)
def _pairs(text: str) -> frozenset[str]:
    letters = _WORD_CHARS.sub("", text.lower())
    # A sentence of fewer than two letters or digits has no pairs: it repeats
    # any kept sentence that holds its facts.
    return frozenset(letters[i : i + 2] for i in range(len(letters) - 1))


def _numbers_and_ids(text: str) -> set[str]:
    return set(_DIGITS.findall(text)) | {t.lower() for t in _ID_TOKEN.findall(text)}


@functools.lru_cache(maxsize=4096)
def _own_facts(text: str) -> frozenset[str]:
    """Its numbers, identifiers and capitalised words (names)."""
    return frozenset(_numbers_and_ids(text) | {w.lower() for w in _CAPITALISED.findall(text)})


@functools.lru_cache(maxsize=4096)
def _words(text: str) -> frozenset[str]:
    return frozenset(_numbers_and_ids(text) | {w.lower() for w in _LATIN_WORD.findall(text)})


@functools.lru_cache(maxsize=4096)
def stated_values(sentence: str) -> frozenset[str]:
    """The values ``sentence`` states (see the module docstring), lowercased."""
    out = {m.group().lower() for m in _VALUE_NUMBER.finditer(sentence)}
    out |= {m.group().lower() for m in _VALUE_DAY.finditer(sentence)}
    out |= {m.group().lower() for m in _ID_TOKEN.finditer(sentence)}
    for m in _VALUE_NAME.finditer(sentence):
        words = m.group().split()
        while words and words[0].lower() in _NOT_NAMES:
            words = words[1:]
        if words:
            out.add(" ".join(words).lower())
    out |= {m.group() for m in _NAME.finditer(sentence) if _CJK_CHAR.search(m.group())}
    return frozenset(out)


def is_near_repeat(sentence: str, kept: str) -> bool:
    """``sentence`` adds nothing to ``kept``: most of its character pairs are
    in it, and every number, identifier and name it has is in it too."""
    if not _own_facts(sentence) <= _words(kept):
        return False
    mine = _pairs(sentence)
    return len(mine & _pairs(kept)) >= NEAR_REPEAT * len(mine)


def target_chars(answers: list[tuple[str, str]], *, max_chars: int = DEFAULT_MAX_CHARS) -> int:
    """30% of the answers' characters, never above ``max_chars``."""
    return min(max_chars, sum(len(text) for _, text in answers) * SHARE_PERCENT // 100)


def label(message_id: str, previous: str | None) -> str:
    """``[id] ``, or ``[…end] `` when ``id`` only changes the end of ``previous``."""
    if previous is not None and len(previous) == len(message_id) and previous != message_id:
        shared = 0
        while message_id[shared] == previous[shared]:
            shared += 1
        if shared >= MIN_SHARED_PREFIX:
            return f"[…{message_id[shared:]}] "
    return f"[{message_id}] "


def labelled_lines(summary: str) -> list[tuple[str | None, str]]:
    """``(message id, text)`` for each line of a summary written here (either
    version), with shortened labels read back; ``None`` for a line without
    a label."""
    out: list[tuple[str | None, str]] = []
    previous: str | None = None
    for line in summary.split("\n"):
        match = _LABEL.match(line)
        if not match:
            out.append((None, line))
            continue
        ref = match.group(1)
        if ref.startswith("…") and previous is not None:
            end = ref[1:]
            ref = previous[: len(previous) - len(end)] + end
        out.append((ref, line[match.end():]))
        previous = ref
    return out


def join(sentences: list[str]) -> str:
    # Chinese sentences run on without spaces; others are separated by one.
    out = sentences[0]
    for s in sentences[1:]:
        out += ("" if out[-1] in _CJK_END else " ") + s
    return out


def render(answers: list[tuple[str, str]], chosen: list[Sentence]) -> str:
    """The kept sentences in their original order, one labelled line per answer."""
    by_answer: dict[int, list[Sentence]] = {}
    for s in sorted(chosen, key=lambda s: (s.answer, s.position)):
        by_answer.setdefault(s.answer, []).append(s)
    lines, previous = [], None
    for a in sorted(by_answer):
        message_id = answers[a][0]
        lines.append(label(message_id, previous) + join([s.text for s in by_answer[a]]))
        previous = message_id
    return "\n".join(lines)


def _candidates(answers: list[tuple[str, str]]) -> tuple[list[Sentence], list[Sentence]]:
    """Every sentence, and those that carry something (filler and questions back left out)."""
    every, useful = [], []
    for a, (_, text) in enumerate(answers):
        for p, raw in enumerate(split_sentences(text)):
            every.append(Sentence(a, p, raw, sentence_score(raw)))
            if is_filler(raw) or is_question_back(raw):
                continue
            trimmed = trim_leading_filler(raw)
            useful.append(Sentence(a, p, trimmed, sentence_score(trimmed)))
    return every, useful


def _ranked(sentences: list[Sentence]) -> list[Sentence]:
    return sorted(sentences, key=lambda s: (-s.score, len(s.text), s.answer, s.position))


def _most_values_per_character(answers: list[tuple[str, str]], useful: list[Sentence],
                               target: int) -> list[Sentence]:
    """Sentences taken one at a time, each the one that adds the most per
    character while the text still fits: three for every value not stated
    yet, plus its score. Stops when no sentence that fits adds a value."""
    chosen: list[Sentence] = []
    stated: set[str] = set()
    length = 0
    pool = [s for s in useful if stated_values(s.text)]
    while pool:
        best, best_key = None, None
        for s in pool:
            new = stated_values(s.text) - stated
            if not new:
                continue
            added = len(render(answers, chosen + [s])) - length
            if length + added > target:
                continue
            key = ((3 * len(new) + s.score) / max(1, added), s.score, -len(s.text), -s.answer, -s.position)
            if best_key is None or key > best_key:
                best, best_key = s, key
        if best is None:
            break
        pool.remove(best)
        if any(is_near_repeat(best.text, c.text) for c in chosen):
            continue
        chosen.append(best)
        stated |= stated_values(best.text)
        length = len(render(answers, chosen))
    return chosen


def summarise(answers: list[tuple[str, str]], *, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """``answers`` is ``[(assistant message id, text), ...]`` oldest first."""
    every, useful = _candidates(answers)
    if not every:
        return ""
    target = target_chars(answers, max_chars=max_chars)
    chosen = _most_values_per_character(answers, useful, target)
    for s in _ranked(useful):
        if s in chosen or any(is_near_repeat(s.text, c.text) for c in chosen):
            continue
        if len(render(answers, chosen + [s])) <= target:
            chosen.append(s)
    if chosen:
        return render(answers, chosen)
    # Not even one sentence fits the 30%, or none carries anything: the best
    # one alone, whole, unless it is over the hard cap, where it is cut and
    # marked as cut.
    best = _ranked(useful or every)[0]
    text = render(answers, [best])
    if len(text) <= max_chars:
        return text
    head = label(answers[best.answer][0], None)
    return head + best.text[: max(0, max_chars - len(head) - 1)] + "…"
