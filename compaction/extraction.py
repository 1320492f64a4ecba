"""Extractive summary of ten assistant answers: the ``extractive-v3``
summariser (SPEC §5 ``extractive`` provider; SPEC §6 "The extractive
provider compresses"; issue 11 item 4).

Pure and deterministic: the same answers always give the same text. It
copies the answers' own words, so it writes in their language. Its units
are clauses of sentences: a sentence ends after 。！？； (Chinese), after
. ! ? ; before a space (English, so "3.5" stays whole) and at line
breaks; a clause ends at ，、： or at a comma or colon before a space, and
in English also before a word that opens another part of the sentence
("… flight | with 1 layover | for $296"). A clause is kept whole, and
neighbouring kept clauses print exactly as they were written, so a long
sentence can give its fact-bearing clause without its filler.

**Length.** At most 30% of the answers' characters, never more than 1,500,
labels and line breaks included — a summary is worth giving only when it is
cheaper than its source (SPEC §6). At least one sentence: when not even one
clause fits the 30% target, or when nothing carries a fact, the best
sentence alone is given whole (cut with "…" only if it is longer than
1,500 characters).

**What is left out** (carries no fact): sentences that are only greetings,
thanks, acknowledgements or farewells ("Sure!", "好的，谢谢。"), and such a
clause inside a sentence ("好的，" "OK, "); the assistant's own questions
back ("What time would you like?") unless they carry a number, date,
identifier or name — an offer such as "How about Sino at 7 pm?" is a fact;
and repeats — a clause whose facts the summary already states, in any
answer, adds nothing and is never taken.

**What is kept first.** Each clause states facts (``clause_facts``): the
values an assistant tells a user (``stated_values``: numbers with their
unit, times, days and dates, identifiers, capitalised names, Chinese names
of places and businesses, the items of a Chinese list), each worth 1 (a
lone digit, "1 stop", ½); a decision or negation, worth ½ alone and ¼
beside values; failing values, what a Chinese clause states after its
opening words ("是高档型" states 高档型), worth ½. Clauses are taken one at a
time, always the one that adds the most worth of facts not stated yet per
byte it adds (its label included; the projection's budget is bytes, the
30% is characters), while the text fits: a short clause with a new phone
number beats a long sentence repeating a name already kept, and the 30%
carries as many of the answers' facts as it can. Ties go to the higher
``sentence_score`` (numbers, dates, identifiers, decisions, negations,
names), then the shorter, then the earlier. Kept clauses are printed in
their original order.

**Labels.** One line per answer that kept anything, opening with its
assistant message id: ``[m-1041] clause clause``. Labels are paid for out
of the same 30%, so they are kept cheap: a line whose id has the same
length as the previous line's id and shares at least its first three
characters writes only the differing end after "…" (``[…43]`` after
``[m-1041]`` is ``m-1043``); the text follows its label without a space
(the bracket ends it), and a full stop ending a line is left to the line
break.
``labelled_lines`` reads every version back.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from conversations.wording import value_pattern

DEFAULT_MAX_CHARS = 1500
SHARE_PERCENT = 30  # of the answers' characters
MIN_SHARED_PREFIX = 3  # a shorter shared start saves nothing over "…"

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
    r"不(?!错|客气|用谢)|没(?!关系)|[无未别勿]|非(?!常)",
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
    r"(?:i'?m )?(?:glad|happy) to help|(?:good)?bye|see you(?: soon| later| again)?|take care|"
    r"(?:i )?(?:hope you )?(?:have|enjoy) a (?:nice|great|good|wonderful|marvelous|lovely) (?:day|evening|trip|time)|"
    r"enjoy(?: your \w+)?|"
    r"你好|您好|嗨|早上好|下午好|晚上好|欢迎|谢谢(?:您|你)?|感谢(?:您|你)?|多谢|不客气|不用谢|没关系|"
    r"好的|好|嗯|行|可以|没问题|明白(?:了)?|知道了|收到|了解|当然|再见|拜拜|抱歉|对不起|不好意思|"
    r"祝(?:您|你)(?:旅途|用餐|生活)?愉快|很高兴为(?:您|你)服务|乐意效劳"
)
_FILLER_SEPARATOR = r"[\s,，、.。!！~～;；:：…]*"
_ONLY_FILLER = re.compile(rf"(?:(?:{_FILLER_WORDS}){_FILLER_SEPARATOR})+", re.IGNORECASE)
_LEADING_FILLER = re.compile(rf"(?:(?:{_FILLER_WORDS})\s*[,，、:：]\s*)+", re.IGNORECASE)
_QUESTION_END = re.compile(r"[?？][\"'”’)）\s]*$")

# A label is followed by a space (extractive-v1, -v2) or directly by the text (-v3).
_LABEL = re.compile(r"\[(.+?)\] ?")
_ID_TOKEN = re.compile(r"[A-Za-z0-9_-]*\d[A-Za-z0-9_-]*")

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
    "sorry have enjoy thank thanks anything also should shall see there's here's may could did are was were has had "
    "let's unfortunately then so now well oh hi hello bye goodbye welcome all any some nothing everything "
    "good nice happy glad call try visit note check book hope".split()
)


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


def target_chars(answers: list[tuple[str, str]], *, max_chars: int = DEFAULT_MAX_CHARS) -> int:
    """30% of the answers' characters, never above ``max_chars``."""
    return min(max_chars, sum(len(text) for _, text in answers) * SHARE_PERCENT // 100)


def label(message_id: str, previous: str | None) -> str:
    """``[id]``, or ``[…end]`` when ``id`` only changes the end of ``previous``."""
    if previous is not None and len(previous) == len(message_id) and previous != message_id:
        shared = 0
        while message_id[shared] == previous[shared]:
            shared += 1
        if shared >= MIN_SHARED_PREFIX:
            return f"[…{message_id[shared:]}]"
    return f"[{message_id}]"


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




# --- units: clauses of sentences ------------------------------------------------------

# A clause ends at a Chinese comma, enumeration comma or colon, or at a Latin
# comma or colon before a space ("10:30" and "1,000" stay whole); the
# separator is kept so that neighbouring clauses print as they were written.
_CLAUSE_SEP = re.compile(r"([，、：]\s*|[,:]\s+)")
# An English clause also ends before a word that opens another part of it
# ("… flight | with 1 layover | for $296."); the word stays with its part,
# so a part printed alone still reads.
_WORD_SEP = re.compile(r"( )(?=(?:and|with|for|which|that|but|including) )")
# What a Chinese clause opens with before the thing it states: "地址是在…",
# "周边的景点有…", "推荐您去…" — what follows is the value.
_CJK_LEAD_IN = re.compile(r"^(?:[\u4e00-\u9fff]{0,6}?(?:推荐|建议|选择|是|有|在|去|为|叫))+")
_LIST_SEPARATORS = ("、", ",")
_CJK_TRAILING = re.compile(r"[等吧呢啊哦呀了的]*[\W_]*$")
VALUE_WEIGHT = 1.0  # a number, time, day, identifier or name
PLAIN_WEIGHT = 0.5  # a decision, a negation, or what a Chinese clause states without a name or number
_LONE_DIGIT = re.compile(r"\d")  # "1 stop", "0 layovers": a one-character value says little alone
BONUS_WEIGHT = 0.25  # a decision or negation made about values the clause states


@dataclass(frozen=True, eq=False)  # each clause is itself: compared and hashed by identity, which is cheap
class Unit:
    """One clause of one sentence of one answer, as the summary may print it."""

    answer: int  # position of the answer among the inputs
    sentence: int  # position of the sentence inside its answer
    clause: int  # position of the clause inside its sentence
    text: str
    lead: str  # what came before the clause inside its sentence ("" at the sentence's start)
    separator: str  # what followed it inside its sentence ("" at the sentence's end)
    facts: tuple[tuple[str, float], ...]  # (fact, weight): what keeping it states
    score: int


def split_clauses(sentence: str) -> list[tuple[str, str]]:
    """``(clause, separator)`` pairs whose concatenation is ``sentence``."""
    parts = []
    for piece in _CLAUSE_SEP.split(sentence):
        if parts and len(parts) % 2 == 1:  # a separator
            parts.append(piece)
            continue
        parts += _WORD_SEP.split(piece)
    out = []
    for i in range(0, len(parts), 2):
        separator = parts[i + 1] if i + 1 < len(parts) else ""
        if parts[i] or not out:
            out.append((parts[i], separator))
        else:  # a separator right after another: it belongs to the clause before
            out[-1] = (out[-1][0], out[-1][1] + separator)
    return out


def _cjk_value(clause: str) -> str:
    """What a Chinese clause states, without its opening words and closing particles."""
    rest = _CJK_LEAD_IN.sub("", clause)
    return _CJK_TRAILING.sub("", rest)


def clause_facts(clause: str) -> tuple[tuple[str, float], ...]:
    """The facts keeping ``clause`` states, each with its weight: its values
    (``stated_values``; a Chinese name without its opening words), worth 1
    each, a lone digit ½; a decision or negation it makes ("is not
    refundable", "没有餐馆"), worth ½, or ¼ beside values; and failing
    values, what a Chinese clause states after its opening words ("是高档型"
    states 高档型), worth ½ — seldom the exact value a later run needs, but
    what the answer said."""
    values = set()
    for value in stated_values(clause):
        if _CJK_CHAR.search(value):
            value = _cjk_value(value)
            if len(value) < 2:
                continue
        values.add(value)
    facts = [(v, PLAIN_WEIGHT if _LONE_DIGIT.fullmatch(v) else VALUE_WEIGHT) for v in sorted(values)]
    plain = clause.lower().rstrip("。！？；，、：.!?;,: ")
    if _DECISION.search(clause) or _NEGATION.search(clause):
        facts.append((plain, PLAIN_WEIGHT if not values else BONUS_WEIGHT))
    elif not values and _CJK_CHAR.search(clause) and _CJK_LEAD_IN.match(clause):
        stated = _cjk_value(clause).lower()
        if len(_CJK_CHAR.findall(stated)) >= 3:
            facts.append((stated, PLAIN_WEIGHT))
    return tuple(facts)


def list_item_facts(clause: str) -> tuple[tuple[str, float], ...]:
    """A Chinese clause that continues a list of facts ("周边景点有清华大学,
    北京大学等"): the item it names is a value, whatever it ends with."""
    item = _CJK_TRAILING.sub("", clause).lower()
    return ((item, VALUE_WEIGHT),) if len(_CJK_CHAR.findall(item)) >= 2 else ()


def _units(answers: list[tuple[str, str]]) -> list[Unit]:
    """Every clause that carries something: not filler, not in a question back."""
    out = []
    for a, (_, text) in enumerate(answers):
        for s, sentence in enumerate(split_sentences(text)):
            if is_filler(sentence) or is_question_back(sentence):
                continue
            lead, listed = "", False
            for c, (clause, separator) in enumerate(split_clauses(sentence)):
                core = clause.strip()
                facts = clause_facts(core) if core and not is_filler(core) else ()
                if not facts and listed and lead.strip() in _LIST_SEPARATORS:
                    facts = list_item_facts(core)
                if facts:
                    out.append(Unit(a, s, c, core, lead, separator, facts, sentence_score(core)))
                lead, listed = separator, bool(facts)
    return out


_LINE_END = re.compile(r"(?<=[^\s.])[。；]$|(?<=[A-Za-z0-9]{2})\.$")
def is_stated(fact: str, text: str) -> bool:
    """Whether ``text`` already states ``fact`` (case-insensitive; a Latin
    or digit end must not run on into a word: "12" is not in "2012")."""
    return bool(fact) and value_pattern(fact).search(text) is not None


def line_body(units: list[Unit]) -> str:
    """One answer's kept clauses (in their order) as its line prints them,
    label aside. Neighbouring clauses print with the separator that joined
    them; a clause after a gap in its sentence with the separator it had
    before it; a sentence after one left unfinished with a semicolon, so
    that the line still reads as clauses and sentences of the answer. A
    full stop that ends the line says nothing the line break does not."""
    out = units[0].text
    for before, u in zip(units, units[1:]):
        if u.sentence == before.sentence:
            out += before.separator if u.clause == before.clause + 1 else u.lead
        elif before.separator:
            out += "；" if _CJK_CHAR.search(before.text) else "; "
        elif out[-1] not in _CJK_END:
            out += " "
        out += u.text
    return _LINE_END.sub("", out) or out


def _in_order(units: list[Unit]) -> list[Unit]:
    return sorted(units, key=lambda u: (u.sentence, u.clause))


def render(answers: list[tuple[str, str]], chosen: list[Unit]) -> str:
    """The kept clauses in their original order, one labelled line per answer."""
    by_answer: dict[int, list[Unit]] = {}
    for u in chosen:
        by_answer.setdefault(u.answer, []).append(u)
    lines, previous = [], None
    for a in sorted(by_answer):
        message_id = answers[a][0]
        lines.append(label(message_id, previous) + line_body(_in_order(by_answer[a])))
        previous = message_id
    return "\n".join(lines)


class _Draft:
    """The summary being built, by answer, with what adding a clause would
    cost in characters and bytes — worked out on the one line it changes
    (and the next line's label), not by printing the whole text again."""

    def __init__(self, answers: list[tuple[str, str]]):
        self.ids = [message_id for message_id, _ in answers]
        self.lines: dict[int, list[Unit]] = {}
        self.bodies: dict[int, str] = {}
        self.chars = 0

    def _neighbours(self, a: int) -> tuple[str | None, str | None]:
        before = max((b for b in self.lines if b < a), default=None)
        after = min((b for b in self.lines if b > a), default=None)
        return (None if before is None else self.ids[before]), (None if after is None else self.ids[after])

    def cost(self, u: Unit) -> tuple[str, int, int]:
        """``u``'s answer's new line body, and the characters and bytes adding ``u`` adds."""
        a = u.answer
        if a in self.lines:
            body = line_body(_in_order(self.lines[a] + [u]))
            old = self.bodies[a]
            return body, len(body) - len(old), len(body.encode()) - len(old.encode())
        body = line_body([u])
        before, after = self._neighbours(a)
        head = label(self.ids[a], before) + ("\n" if self.lines else "")
        chars, size = len(head) + len(body), len(head.encode()) + len(body.encode())
        if after is not None:
            old, new = label(after, before), label(after, self.ids[a])
            chars += len(new) - len(old)
            size += len(new.encode()) - len(old.encode())
        return body, chars, size

    def add(self, u: Unit, body: str, chars: int) -> None:
        self.lines.setdefault(u.answer, []).append(u)
        self.bodies[u.answer] = body
        self.chars += chars


def _most_facts_per_character(answers: list[tuple[str, str]], units: list[Unit], target: int) -> list[Unit]:
    """Clauses taken one at a time, each the one that adds the most weight of
    facts not stated yet per UTF-8 byte it adds (label and separator
    included: the projection's budget is counted in bytes, SPEC §6), while
    the text still fits ``target`` characters. A clause whose facts are all
    stated already (in any line) adds nothing and is never taken."""
    draft = _Draft(answers)
    chosen: list[Unit] = []
    stated: set[str] = set()
    costs: dict[Unit, tuple[int, tuple[str, int, int]]] = {}  # by the version of its answer's line
    versions: dict[int, int] = {}
    pool = list(units)
    while pool:
        best, best_key, best_cost = None, None, None
        keep = []
        for u in pool:
            new = sum(w for fact, w in u.facts if fact not in stated)
            if not new:
                continue  # and never will again: what is stated only grows
            keep.append(u)
            version = (versions.get(u.answer, 0), len(draft.lines))
            cached = costs.get(u)
            if cached is None or cached[0] != version:
                cached = costs[u] = (version, draft.cost(u))
            body, chars, size = cached[1]
            if draft.chars + chars > target:
                continue
            key = (new / max(1, size), u.score, -len(u.text), -u.answer, -u.sentence, -u.clause)
            if best_key is None or key > best_key:
                best, best_key, best_cost = u, key, cached[1]
        if best is None:
            break
        keep.remove(best)
        pool = keep
        body, chars, _ = best_cost
        draft.add(best, body, chars)
        chosen.append(best)
        versions[best.answer] = versions.get(best.answer, 0) + 1
        lowered = body.lower()  # facts are lowercase; the substring test first, as most are not there
        for u in pool:
            for fact, _ in u.facts:
                if fact not in stated and fact in lowered and is_stated(fact, body):
                    stated.add(fact)
    return chosen


def summarise(answers: list[tuple[str, str]], *, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """``answers`` is ``[(assistant message id, text), ...]`` oldest first."""
    sentences = [(a, p, s) for a, (_, text) in enumerate(answers) for p, s in enumerate(split_sentences(text))]
    if not sentences:
        return ""
    target = target_chars(answers, max_chars=max_chars)
    chosen = _most_facts_per_character(answers, _units(answers), target)
    if chosen:
        return render(answers, chosen)
    # Not even one clause fits the 30%, or none carries anything: the best
    # sentence alone, whole, unless it is over the hard cap, where it is cut
    # and marked as cut.
    useful = [(a, p, trim_leading_filler(s)) for a, p, s in sentences if not (is_filler(s) or is_question_back(s))]
    a, _, best = min(useful or sentences, key=lambda t: (-sentence_score(t[2]), len(t[2]), t[0], t[1]))
    head = label(answers[a][0], None)
    if len(head) + len(best) <= max_chars:
        return head + best
    return head + best[: max(0, max_chars - len(head) - 1)] + "…"
