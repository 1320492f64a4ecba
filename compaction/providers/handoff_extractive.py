"""The offline, deterministic hand-off note builder ``handoff-extractive-v1``
(SPEC §7 "Providers", seed 001 "交接单该装什么", SPEC §8).

Pure: ``build_note(parent_note, material, language, vocabulary)`` writes
generation *k* from generation *k−1*'s note and the new material, by rules —
no model, same input, same output. It reads the parent note back into
**matters** (one per user-requests line), walks the material pair by pair
and writes the six sections again:

- **user requests** — one line per matter: a short label in the user's own
  words and every clause of theirs that carries the matter, verbatim after
  ``原话：`` / ``quote:`` (requests, conditions, the current consent). Only
  user text ever reaches this section, so nothing a tool or the assistant
  said (a delivery date, stock, a warranty date) becomes a requirement.
  Questions — asking, comparing, learning, asking for lists or texts — make
  no matter and are not merged into one (``clauses.QUESTION``).
- a **hold** turns the matter's line into ``暂缓：…`` / ``On hold: …`` quoting
  the hold, and removes the earlier consent (and go-ahead requests that
  carry no condition) from every section; a consent after the hold makes
  the matter current again and the hold goes (the latest state wins).
- an **abandonment** marks the matter ``已放弃：…`` / ``Abandoned: …`` with
  the user's words; a matter not in the note yet gets its own marked line.
- **to-dos** — open matters the user asked to have done (a request or a
  consent), each with that quote; never what the assistant asked for.
- **next step** — the to-do touched last, with its quote, or ``无`` / ``none``
  (when only held matters remain, too).
- **current progress** — the latest action a tool took and its result.
- **dead ends** — failed, refused or cancelled actions of unsettled
  matters, at most three, newest kept.
- **done** — only actions a successful tool result confirms, each with the
  id the result returned and proves (``result_id``); a success without
  one is progress, not done.

A settled matter keeps its line, marked ``已办结：`` / ``Completed:``, so
its conditions stay on record and the next generation reads it as done. A
clause the matter's line already keeps (the same words, or its phrase,
numbers and most terms: ``clauses.keeps``) adds nothing, and neither does a
request or a restated hold without a new term of weight — the rule the
drift checks read growth with.

Carry-forward: a parent line whose matter the material does not touch is
copied unchanged, so a material that brings nothing new gives back the
parent note itself — the note never grows without new matters. Lines a
parent must not hold (a question recorded as a requirement, a consent kept
beside its own hold, a to-do only the assistant asked for, a looked-up
value in a request) are repaired on the way.

Tool results count only for **action** tools (submit, cancel, book, …):
look-ups (``lookup_order``, ``check_stock``) never make progress, dead ends
or done. The note is kept within the contract's 6,000 characters.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field

from ..contract import MAX_SUMMARY_CHARS, ProviderResult
from ..handoff import clauses as c
from ..handoff import note as n
from ..handoff import vocabulary as v
from ..handoff.material import Material, ToolResult
from ..handoff.reading import Reader, identifiers, is_identifier, is_stop_word, key_terms, keeps_text, worth
from ..handoff.values import dates
from ..tokens import count_tokens
from .base import Provider, SummaryRequest

HANDOFF_EXTRACTIVE_MODEL_ID = "handoff-extractive-v1"

OPEN, HELD, ABANDONED, DONE = "open", "held", "abandoned", "done"

LABEL_LIMIT = {n.ZH: 20, n.EN: 48}
REASON_LIMIT = 40
FRAGMENT_LIMIT = 160
GENERIC_LABEL = {n.ZH: "用户要办的事", n.EN: "the user's request"}
GENERIC_ABANDONED = {n.ZH: "此前考虑的事项", n.EN: "the option under consideration"}
LABEL_SEPARATOR = {n.ZH: "：", n.EN: ": "}
# A settled matter keeps its line (its conditions stay on record) under this
# prefix, so the next generation reads it back as done, not as a to-do.
DONE_PREFIX = {n.ZH: "已办结：", n.EN: "Completed:"}

# Words a label does not start or end with: politeness, fillers, modal
# go-aheads ("可以", "now") — a label names the matter, it does not agree.
# "给我" is no lead: "给我妈买个iPad" is for my mother.
_ZH_LEAD = re.compile(r"^(好的|好吧|好|嗯+|哦|那就|那么|那|就|还是|现在|可以|麻烦你|麻烦您|麻烦|请你|请您|请|你帮我|您帮我|帮我|"
                      r"帮忙|你|您|我想要|我想|我要|我需要|我打算|我决定|我|直接|马上|立刻|先|然后|另外|还有|对了|其实|再|也|把)")
# 吧 is a particle, except in names: 天才吧, 酒吧, 网吧.
_ZH_TAIL = re.compile(r"(了吧|了呢|了啊|了|(?<!天才)(?<![酒网贴书水])吧|呢|啊|呀|哦|嘛|一下)$")
_ZH_PLACE_TAIL = re.compile(r"(那边我|这边我|那边|这边|的|就|也|都|还)$")
_EN_LEAD = re.compile(r"^(yes|ok|okay|so|then|also|and|actually|well|please|now|just|go ahead and|can you|could you|"
                      r"would you|i want to|i'd like to|i would like to|i need to|i need|i want|i'd like|"
                      r"i would like|let's|we need|we want)\b[\s,]*", re.I)
_EN_TAIL = re.compile(r"[\s,]*\b(please|now|then|too|thanks|thank you)$", re.I)

# Tool names: what acts in the world, and what only looks (checked first).
_QUERY_TOOL = re.compile(r"(^|[^a-z])(get|lookup|look|search|query|find|list|check|fetch|read|show|view|describe|"
                         r"status|track|tracking|estimate|quote|calc|calculate|compare|recommend|inspect|info|"
                         r"detail|details|availability|stock|price|prices)([^a-z]|$)|查询|查|搜索|获取|列出|检查",
                         re.I)
_ACTION_TOOL = re.compile(r"(^|[^a-z])(submit|create|cancel|update|modify|change|book|reserve|refund|return|file|"
                          r"apply|place|pay|purchase|buy|send|schedule|register|delete|remove|add|confirm|approve|"
                          r"transfer|issue|open|close|set|make|request|claim|exchange|replace|order)([^a-z]|$)|"
                          r"提交|创建|取消|修改|预订|预约|退款|退货|申请|下单|支付|办理|寄修|送修", re.I)
_ID_KEYS = ("ticket_id", "ticket", "rma", "rma_id", "order_id", "booking_id", "reservation_id", "claim_id",
            "refund_id", "confirmation", "confirmation_number", "confirmation_id", "reference", "reference_id",
            "ref", "id", "number", "单号", "工单号", "编号", "订单号")


@dataclass
class Fragment:
    text: str
    role: str
    kinds: frozenset

    @property
    def is_condition(self) -> bool:
        return self.role != c.QUESTION and v.CONSTRAINT in self.kinds


@dataclass
class Matter:
    label: str
    status: str = OPEN
    fragments: list[Fragment] = field(default_factory=list)  # requests, conditions, consent
    hold: list[str] = field(default_factory=list)  # the user's hold words, while held
    abandon: list[str] = field(default_factory=list)  # the user's words dropping it
    original: str | None = None  # the parent's line, copied while nothing changes
    todo_original: str | None = None  # the parent's to-do line for this matter
    dirty: bool = False
    touched: int = -1  # order of the last user clause that touched it

    def topics(self) -> set[str]:
        return c.topics(" ".join([self.label] + [f.text for f in self.fragments] + self.hold + self.abandon))

    def has(self, text: str) -> bool:
        key = _norm(text)
        return any(_norm(f.text) == key for f in self.fragments) or key in map(_norm, self.hold + self.abandon)

    def action(self) -> Fragment | None:
        """The latest quote that asks for something to be done: a consent or a request."""
        for fragment in reversed(self.fragments):
            if fragment.role in (c.CONSENT, c.REQUEST):
                return fragment
        return None


@dataclass
class _Event:
    """A tool result of an action, in material order."""

    order: int
    result: ToolResult
    succeeded: bool
    matter: Matter | None
    result_id: str | None


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def _fragment(text: str, vocabulary: v.Vocabulary) -> Fragment:
    role, kinds = c.classify(text, vocabulary)
    return Fragment(text=text, role=role, kinds=kinds)


# --- labels -----------------------------------------------------------------

def _cut(text: str, limit: int) -> str:
    """At most ``limit`` characters, never cutting inside a Latin word or a
    number (a cut number would be a value the user never said)."""
    if len(text) <= limit:
        return text
    cut = limit
    if _ALNUM.match(text[cut - 1]) and _ALNUM.match(text[cut]):
        run_end = _ALNUM_RUN.match(text, cut).end()
        if run_end - limit <= 12:  # an id just past the limit is kept whole, not dropped
            return text[:run_end]
    while cut > 0 and _ALNUM.match(text[cut - 1]) and _ALNUM.match(text[cut]):
        cut -= 1
    if cut == 0:  # one long code: keep it whole rather than cut it
        return _ALNUM_RUN.match(text).group()
    return text[:cut].rstrip(c._EDGE_PUNCT) or text[:cut]


_ALNUM = re.compile(r"[A-Za-z0-9]")
_ALNUM_RUN = re.compile(r"[A-Za-z0-9]+")
_LATIN_TOPIC = re.compile(r"[A-Za-z][A-Za-z+]*(?: [A-Za-z][A-Za-z+]*)*")


def _strip_spans(text: str, vocabulary: v.Vocabulary, categories) -> str:
    return Reader(vocabulary).without(text, categories)


def _tidy(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip(c._EDGE_PUNCT)
    for _ in range(4):  # leading fillers come in runs: 好的，那就帮我…
        before = text
        text = _ZH_LEAD.sub("", text).strip(c._EDGE_PUNCT)
        text = _EN_LEAD.sub("", text).strip(c._EDGE_PUNCT)
        if text == before:
            break
    # Tails once each, particles before pronouns: "天才吧那边我" keeps 天才吧.
    for tail in (_ZH_TAIL, _ZH_TAIL, _ZH_PLACE_TAIL, _EN_TAIL):  # "诊断一下吧": two particles
        text = tail.sub("", text).strip(c._EDGE_PUNCT)
    return text


_NEUTRAL_CHECKS = (v.CONSENT, v.HOLD, v.ABANDON, v.QUESTION, c.DIRECT_REQUEST, v.ASSISTANT_ASK, v.TOOL_DETAIL)


def make_label(text: str, *, language: str, vocabulary: v.Vocabulary = v.DEFAULT, role: str = c.REQUEST) -> str | None:
    """A matter's short name, cut from the user's own clause: what it is
    about, without fillers and without agreeing, holding or dropping words,
    so the name stays true whatever happens to the matter. A request or a
    consent is taken whole ("现在可以提交送修申请了" → 提交送修申请); a hold
    or an abandonment with its hold/drop words taken out ("天才吧那边我不去了"
    → 天才吧). None when nothing neutral, naming something, is left."""
    whole = _tidy(text)
    bare = _tidy(_strip_spans(text, vocabulary, (v.CONSENT, v.HOLD, v.ABANDON)))
    # A hold's or a drop's own words ("先不买新的了") name nothing once the
    # hold or drop is taken out; they are never the name.
    # A request or consent whose words agree ("我明确同意办理") names nothing
    # either; what is left once they are out ("明确") is no name.
    for candidate in ((bare,) if role in (c.HOLD, c.ABANDON) else (whole,)):
        candidate = _cut(candidate, LABEL_LIMIT[language])
        if len(candidate) < 2 or not c.quotable(candidate) or not c.topics(candidate):
            continue
        if not any(c.matches(vocabulary, category, candidate) for category in _NEUTRAL_CHECKS):
            return candidate
    return None


def _label_from(texts, *, language, vocabulary, generic, role: str = c.REQUEST) -> str | None:
    for text in texts:
        label = make_label(text, language=language, vocabulary=vocabulary, role=role)
        if label:
            return label
    return generic.get(language)


def _excerpt(text: str) -> str:
    """A quote no longer than ``FRAGMENT_LIMIT``: its head, still verbatim."""
    return _cut(text, FRAGMENT_LIMIT) if len(text) > FRAGMENT_LIMIT else text


# --- reading a parent note back ---------------------------------------------

def _split_prefix(text: str, language: str) -> tuple[str, str]:
    for status, prefixes in ((HELD, n.HOLD_PREFIX), (ABANDONED, n.ABANDONED_PREFIX), (DONE, DONE_PREFIX)):
        for prefix in prefixes.values():
            if text.lower().startswith(prefix.lower()):
                return status, text[len(prefix):].strip()
    return OPEN, text


def _own_words(text: str) -> str:
    """The line without the quote it ends with."""
    quoted = n.quotes(text)
    if not quoted:
        return text.strip()
    for marker in ("（原话", "(原话", "(quote:", "（quote:", "(Quote:"):
        at = text.rfind(marker)
        if at >= 0:
            return text[:at].rstrip()
    return text.strip()


def _matter_from_line(text: str, *, language: str, vocabulary: v.Vocabulary) -> Matter:
    status, body = _split_prefix(text, language)
    label = _own_words(body) or GENERIC_LABEL[language]
    matter = Matter(label=label, status=status, original=text)
    for quote in n.quotes(body):
        fragment = _fragment(quote, vocabulary)
        if status == HELD and fragment.role == c.HOLD:
            matter.hold.append(quote)
        elif status == ABANDONED and fragment.role == c.ABANDON:
            matter.abandon.append(quote)
        else:
            matter.fragments.append(fragment)
    return matter


def _line_label(text: str) -> str:
    status, body = _split_prefix(text, n.ZH)
    return _own_words(body)


@dataclass
class _State:
    language: str
    vocabulary: v.Vocabulary
    matters: list[Matter] = field(default_factory=list)
    loose_todos: list[str] = field(default_factory=list)
    next_step: list[str] = field(default_factory=list)
    progress: list[str] = field(default_factory=list)
    dead_ends: list[tuple[Matter | None, str]] = field(default_factory=list)
    done: list[str] = field(default_factory=list)
    clock: int = 0
    changed: bool = False  # anything differs from the parent
    user_news: bool = False  # the material brought a new matter, condition, consent, hold or abandonment
    parent_text: str | None = None
    hinted: Matter | None = None  # the listed matter this pair's tool calls were about

    def tick(self) -> int:
        self.clock += 1
        return self.clock


def _read_parent(parent_note: str | None, state: _State) -> None:
    if not parent_note or not parent_note.strip():
        return
    text = n.extract_summary(parent_note)
    state.parent_text = text
    parsed = n.parse(text)  # a stored note passed the contract; anything else is the caller's bug
    language, vocabulary = state.language, state.vocabulary
    for line in parsed.section(n.REQUESTS):
        matter = _matter_from_line(line.text, language=language, vocabulary=vocabulary)
        if _only_asks(matter, vocabulary):
            state.changed = True  # seed 001: a question is not a requirement
            continue
        state.matters.append(matter)
    _repair_consent_beside_hold(state)
    _repair_tool_details(state)
    by_label = {m.label: m for m in state.matters}
    for line in parsed.section(n.TODOS):
        matter = by_label.get(_line_label(line.text))
        if matter is not None and matter.todo_original is None:
            matter.todo_original = line.text
        elif not n.quotes(line.text) and c.matches(vocabulary, v.ASSISTANT_ASK, line.text):
            state.changed = True  # a to-do only the assistant asked for
        else:
            state.loose_todos.append(line.text)
    state.next_step = [line.text for line in parsed.section(n.NEXT_STEP)]
    # What the user was on when the parent was written: its next step's
    # matter, else its last line. A bare "我同意" or "只要银色" in the new
    # material is about that one.
    for matter in state.matters:
        _touch(state, matter)
    for line in state.next_step:
        matter = by_label.get(_line_label(line))
        if matter is not None:
            _touch(state, matter)
    state.progress = [line.text for line in parsed.section(n.PROGRESS)]
    for line in parsed.section(n.DEAD_ENDS):
        owner = next((m for m in state.matters
                      if line.text.startswith(m.label + LABEL_SEPARATOR[n.ZH])
                      or line.text.startswith(m.label + LABEL_SEPARATOR[n.EN])), None)
        state.dead_ends.append((owner, line.text))
    state.done = [line.text for line in parsed.section(n.DONE)]
    for matter in state.matters:
        if matter.todo_original is not None and matter.status != OPEN:
            matter.dirty = True  # a held or dropped matter keeps no to-do
            state.changed = True


def _only_asks(matter: Matter, vocabulary: v.Vocabulary) -> bool:
    """A requests line that only records questions: every quote a question,
    or no quote and the line's own words say the user asked."""
    if matter.hold or matter.abandon:
        return False
    if matter.fragments:
        return all(f.role == c.QUESTION for f in matter.fragments)
    words = matter.label
    return c.matches(vocabulary, v.QUESTION, words) and not c.matches(vocabulary, c.DIRECT_REQUEST, words) \
        and not c.matches(vocabulary, v.CONSTRAINT, words)


def _repair_consent_beside_hold(state: _State) -> None:
    """Seed 001 §2: a parent that writes, in its own words, that the user
    agreed ("…并明确同意办理送修申请") beside a hold line of the same thing
    keeps a withdrawn consent alive. That consent goes, with its quotes.
    Only a line whose own words state a consent is repaired: this builder
    never writes one, so its own notes are read back unchanged (a quoted
    consent on one line beside a hold on another may be older or newer,
    and the note cannot say which)."""
    for held in [m for m in state.matters if m.status == HELD]:
        hold_topics = held.topics()
        for other in state.matters:
            if other is held or other.status != OPEN or not c.matches(state.vocabulary, v.CONSENT, other.label):
                continue
            if c.affinity(hold_topics, other.topics()) >= 2 and _drop_consent(other, state.vocabulary,
                                                                                 state.language):
                state.changed = True


def _stands_on_hold(matter: Matter, fragment: Fragment) -> bool:
    """What a held or dropped matter still quotes: its conditions and facts,
    not its consent nor a request without a condition. A label holding a
    date keeps the words it was cut from, so the date stays the user's on
    record (else a later reading takes it for a looked-up value)."""
    if fragment.role == c.CONSENT:
        return False
    if fragment.role == c.REQUEST and not fragment.is_condition:
        return bool(dates(matter.label)) and _norm(matter.label) in _norm(fragment.text)
    return True


def _drop_consent(matter: Matter, vocabulary: v.Vocabulary, language: str) -> bool:
    """Remove every consent — quotes and the line's own words — and the
    requests that carry no condition: once held or dropped, "提交送修申请"
    is no longer the user's current intent (the label still names the
    matter). Requests with a condition stay: the condition still holds.
    True when anything went."""
    before = (list(matter.fragments), matter.label)
    matter.fragments = [f for f in matter.fragments if _stands_on_hold(matter, f)]
    parts = re.split(r"(?<=[，,；;。])", matter.label)
    kept = [p for p in parts if not c.matches(vocabulary, v.CONSENT, p)]
    matter.label = "".join(kept).strip(c._EDGE_PUNCT) or GENERIC_LABEL[language]
    if (matter.fragments, matter.label) != before:
        matter.dirty = True
        return True
    return False


def _repair_tool_details(state: _State) -> None:
    """A request line's own words may not carry what tools look up: a date,
    stock or warranty wording written beside the user's words, and not in
    the words quoted, is dropped clause by clause (seed 001 §3: "订单88232
    的签收日期2026-08-31" in nine generations). Ids stay: the next
    assistant looks the order up again by its number."""
    for matter in state.matters:
        quoted = " ".join([f.text for f in matter.fragments] + matter.hold + matter.abandon)
        parts = re.split(r"(?<=[，,；;。])", matter.label)

        def foreign(part: str) -> bool:
            if c.matches(state.vocabulary, v.TOOL_DETAIL, part) and not c.matches(state.vocabulary, v.TOOL_DETAIL,
                                                                                 quoted):
                return True
            return any(raw not in quoted for raw, _ in dates(part))

        kept = [p for p in parts if not foreign(p)]
        if len(kept) != len(parts):
            matter.label = "".join(kept).strip(c._EDGE_PUNCT) or _label_from(
                [f.text for f in matter.fragments], language=state.language, vocabulary=state.vocabulary,
                generic=GENERIC_LABEL)
            matter.dirty = True
            state.changed = True


# --- the material -------------------------------------------------------------

def _best(state: _State, topics: set[str], *, statuses, minimum: int) -> Matter | None:
    best, score = None, 0
    for matter in state.matters:
        if matter.status not in statuses:
            continue
        s = c.affinity(topics, matter.topics())
        # ties go to the matter touched last: the one the user is on
        if s > score or (s == score and s and matter.touched > (best.touched if best else -2)):
            best, score = matter, s
    return best if score >= minimum else None


def _focus(state: _State, statuses) -> Matter | None:
    candidates = [m for m in state.matters if m.status in statuses and m.touched >= 0]
    return max(candidates, key=lambda m: m.touched) if candidates else None


def _latin_topic(text: str) -> str | None:
    """The first product-like name of a text ("AirPods Max"), digits left out
    so a request line never holds a number the user's quoted words do not."""
    for match in _LATIN_TOPIC.finditer(text):
        words = [w for w in match.group().split() if not is_stop_word(w)]
        if words and len(" ".join(words)) >= 3:
            return " ".join(words)
    return None


def _new_matter(state: _State, texts, *, status=OPEN, generic=GENERIC_LABEL, fallback: str | None = None,
                role: str = c.REQUEST) -> Matter:
    label = _label_from(texts, language=state.language, vocabulary=state.vocabulary, generic={}, role=role)
    label = label or fallback or generic[state.language]
    existing = next((m for m in state.matters if m.label == label), None)
    if existing is not None:
        # The same name is the same matter: one line per matter. Asked for
        # again after it was dropped or done, it is open again.
        if status == OPEN and existing.status in (ABANDONED, DONE):
            _reopen(state, existing)
        return existing
    matter = Matter(label=label, status=status, dirty=True)
    state.matters.append(matter)
    state.changed = state.user_news = True
    return matter


def _reopen(state: _State, matter: Matter) -> None:
    matter.status = OPEN
    matter.abandon = []
    matter.dirty = True
    state.changed = state.user_news = True


def _touch(state: _State, matter: Matter) -> None:
    matter.touched = state.tick()


def _line_text(matter: Matter) -> str:
    return " ".join([matter.label] + [f.text for f in matter.fragments] + matter.hold + matter.abandon)


def _already_kept(state: _State, matter: Matter, fragment: Fragment) -> bool:
    """Whether ``fragment`` brings nothing the matter's line does not hold
    already — the rule the drift checks read growth and lost conditions
    with (SPEC §8): the same words; or, for a condition, consent, hold or
    drop, a line that keeps its phrase, its numbers and most of its terms
    (``clauses.keeps``); or, for a request or a hold said again, no new term
    of weight (``clauses.key_worth`` under 3) beyond the line and the parent."""
    if not (matter.fragments or matter.hold or matter.abandon):
        return False  # a new matter's first words: its label came from them
    text = _line_text(matter)
    if matter.has(fragment.text):
        return True
    categories = {c.CONSENT: (v.CONSENT,), c.HOLD: (v.HOLD,), c.ABANDON: (v.ABANDON,)}.get(fragment.role,
                                                                                          (v.CONSTRAINT,))
    if keeps_text(Reader(state.vocabulary), text, fragment.text, categories):
        return True
    if fragment.is_condition and keeps_text(Reader(state.vocabulary), text, fragment.text):
        return True
    if fragment.is_condition or fragment.role in (c.CONSENT, c.ABANDON):
        return False  # a condition or a change of mind the line lacks is new
    if fragment.role == c.HOLD and matter.status != HELD:
        return False  # the hold itself is new
    novel = key_terms(fragment.text) - key_terms(text) - key_terms(state.parent_text or "")
    return worth(novel) < 3


def _add_fragment(state: _State, matter: Matter, fragment: Fragment) -> None:
    if _already_kept(state, matter, fragment):
        return
    matter.fragments.append(fragment)
    matter.dirty = True
    state.changed = state.user_news = True


def _apply_clause(state: _State, clause: c.Clause, *, in_message: Matter | None,
                  previous_user_text: str) -> Matter | None:
    """One user clause; returns the matter it touched (the message's focus)."""
    vocabulary = state.vocabulary
    if clause.role in (c.QUESTION, c.STATEMENT) or not c.quotable(clause.text):
        return in_message
    text = _excerpt(clause.text)
    topics = c.topics(text)
    live = (OPEN, HELD, DONE)
    fragment = Fragment(text=text, role=clause.role, kinds=clause.kinds)

    if clause.role == c.ABANDON:
        # What was dropped: the matter the clause names (one term is enough
        # when it names only one: "天才吧那边我不去了"), else, when it names
        # none ("先不买新的了"), the one the user's previous message was
        # about (two of its terms) — as the drift checks read it.
        named = c.topics(_strip_spans(text, vocabulary, (v.ABANDON,)))
        if named:
            matter = _best(state, named, statuses=live, minimum=min(2, c.affinity(named, named)))
        else:
            borrowed = c.topics(_strip_spans(previous_user_text, vocabulary,
                                             (v.CONSENT, v.HOLD, v.ABANDON, v.QUESTION)))
            shared = [m for m in state.matters if m.status in live and len(m.topics() & borrowed) >= 2]
            matter = max(shared, key=lambda m: m.touched) if shared else None
        if matter is None:
            # A matter never listed (often one the user only asked about):
            # its own marked line, named from the clause or the question before it.
            matter = _new_matter(state, [text], status=ABANDONED, generic=GENERIC_ABANDONED,
                                 fallback=_latin_topic(previous_user_text), role=c.ABANDON)
        if matter.status == ABANDONED and _already_kept(state, matter, fragment):
            return in_message
        _drop_consent(matter, vocabulary, state.language)  # a dropped matter has no go-ahead left
        if matter.status == HELD:
            matter.fragments.extend(_fragment(h, vocabulary) for h in matter.hold if _is_condition(h, vocabulary))
            matter.hold = []
        matter.status = ABANDONED
        matter.abandon.append(text)
        matter.dirty = True
        state.changed = state.user_news = True
        _touch(state, matter)
        return in_message

    current = in_message if in_message is not None and in_message.status in (OPEN, HELD) else None

    if clause.role == c.HOLD:
        # "先别提交" is about the matter it names, else the one the user is on.
        matter = _best(state, topics, statuses=(OPEN, HELD), minimum=1) or current \
            or _focus(state, (OPEN, HELD)) or _new_matter(state, [text], role=c.HOLD)
        if matter.status == HELD and _already_kept(state, matter, fragment):
            _touch(state, matter)  # the hold said again: the line keeps it already
            return matter
        _drop_consent(matter, vocabulary, state.language)
        matter.status = HELD
        matter.hold.append(text)
        matter.dirty = True
        state.changed = state.user_news = True
        _touch(state, matter)
        return matter

    if clause.role == c.CONSENT:
        # A go-ahead that names something no matter is about starts one
        # ("现在可以提交送修申请了"); a bare "我同意" agrees to the matter at hand.
        matter = _best(state, topics, statuses=(OPEN, HELD), minimum=1) or current
        if matter is None:
            named = make_label(text, language=state.language, vocabulary=vocabulary)
            matter = _new_matter(state, [text]) if named else (_focus(state, (OPEN, HELD))
                                                                 or _new_matter(state, [text]))
        if matter.status == HELD:
            # Agreed again after the hold: the consent is current, the hold goes.
            matter.status = OPEN
            matter.hold = []
            matter.dirty = True
            state.changed = state.user_news = True
        _add_fragment(state, matter, fragment)
        _touch(state, matter)
        return matter

    # A request or a condition. Within one message the user goes on about
    # the same matter unless a clause clearly names another one.
    # A request may take up again a matter that was dropped or done.
    strong = _best(state, topics, statuses=live + ((ABANDONED,) if clause.role == c.REQUEST else ()), minimum=3)
    on_message = in_message if in_message is not None and in_message.status != ABANDONED else None
    if clause.role == c.REQUEST:
        # Within a message the user goes on about one matter ("直接寄回你们店修
        # 吧。现在可以提交送修申请了") unless the request names other ids; a
        # request linked to nothing listed is a new matter.
        held = _best(state, topics, statuses=(HELD,), minimum=2)
        if strong is not None:
            matter = strong
        elif held is not None and on_message is None:
            # Asking again for what is on hold ("现在可以提交送修申请了"): the
            # same matter; only a consent lifts the hold.
            matter = held
        elif on_message is not None and not c.ids_conflict(topics, on_message.topics()):
            matter = on_message
        else:
            matter = _new_matter(state, [text])
    else:
        if strong is not None and (on_message is None or c.affinity(topics, on_message.topics()) < 3):
            matter = strong
        else:
            matter = on_message or _best(state, topics, statuses=live, minimum=2) \
                or _focus(state, (OPEN, HELD)) or _new_matter(state, [text])
    if matter.status in (DONE, ABANDONED) and clause.role == c.REQUEST and not matter.has(text):
        _reopen(state, matter)  # asked for again: the latest state wins
    _add_fragment(state, matter, fragment)
    _touch(state, matter)
    return matter


def _is_condition(text: str, vocabulary: v.Vocabulary) -> bool:
    return _fragment(text, vocabulary).is_condition


def _is_action_tool(name: str) -> bool:
    return bool(_ACTION_TOOL.search(name)) and not _QUERY_TOOL.search(name)


def _outcome(result: ToolResult, vocabulary: v.Vocabulary) -> bool | None:
    if result.ok is not None:
        return result.ok
    if c.matches(vocabulary, v.FAILURE, result.text):
        return False
    if c.matches(vocabulary, v.SUCCESS, result.text):
        return True
    return None


def result_id(result: ToolResult, vocabulary: v.Vocabulary = v.DEFAULT) -> str | None:
    """The id a successful action returned — a ticket, order or booking
    number, from the result's JSON when it has one, else the first id in
    its text — and that the result proves: one the call was not given, or
    one it echoes while reporting the change ("cancelled", "已取消"). None
    when there is none: the action is then progress, not a done line."""
    try:
        payload = json.loads(result.text)
    except (ValueError, TypeError):
        payload = None
    candidates = []
    if isinstance(payload, dict):
        layers = [payload] + [value for value in payload.values() if isinstance(value, dict)]
        for key in _ID_KEYS:
            for layer in layers:
                for k, value in layer.items():
                    if str(k).lower() == key and isinstance(value, (str, int)) and not isinstance(value, bool):
                        candidates.append(str(value).strip())
    candidates += identifiers(result.text)
    reports_change = c.matches(vocabulary, v.SUCCESS, result.text)
    for ident in candidates:
        if is_identifier(ident) and ident in result.text and (ident not in result.arguments or reports_change):
            return ident
    return None


_REASON_KEYS = ("error", "message", "reason", "detail", "msg", "status")


def _reason(text: str) -> str:
    """Why an action failed, in the result's own words: its error field
    when it is JSON, else its text; short, on one line."""
    try:
        payload = json.loads(text)
    except (ValueError, TypeError):
        payload = None
    if isinstance(payload, dict):
        for key in _REASON_KEYS:
            value = payload.get(key)
            if isinstance(value, str) and value.strip():
                text = value
                break
    line = re.sub(r"\s+", " ", text).strip()
    line = c.QUOTE_BREAKERS.sub("", line)
    line = line.replace("（", "(").replace("）", ")")
    return _cut(line, REASON_LIMIT) if len(line) > REASON_LIMIT else line


def _apply_tool(state: _State, result: ToolResult, *, pair_matter: Matter | None) -> _Event | None:
    if not _is_action_tool(result.tool):
        return None  # a look-up: its details never enter the note
    succeeded = _outcome(result, state.vocabulary)
    if succeeded is None:
        return None
    # Which matter it acted on: the one its arguments name, else the one
    # the user's message was about; never a guess beyond that.
    matter = _best(state, c.topics(result.arguments), statuses=(OPEN, HELD, DONE), minimum=3) or pair_matter
    return _Event(order=state.tick(), result=result, succeeded=succeeded, matter=matter,
                  result_id=result_id(result, state.vocabulary) if succeeded else None)


def _record(state: _State, event: _Event) -> None:
    language = state.language
    tool = event.result.tool
    sep = LABEL_SEPARATOR[language]
    who = f"{event.matter.label}{sep}" if event.matter is not None else ""
    if event.succeeded:
        ident = event.result_id
        if ident:
            done = f"{tool} 成功，单号 {ident}" if language == n.ZH else f"{tool} succeeded, id {ident}"
            if not any(re.search(rf"(?<![\w-]){re.escape(ident)}(?![\w-])", line) for line in state.done):
                state.done.append(done)
        else:
            # Succeeded, but returned no id to stand on: progress, not done.
            done = f"{tool} 成功（未返回单号）" if language == n.ZH else f"{tool} succeeded (no id returned)"
        state.progress = [who + done]
        if event.matter is not None and event.matter.status in (OPEN, HELD):
            event.matter.status = DONE
            event.matter.hold = []
            event.matter.dirty = True
    else:
        reason = _reason(event.result.text)
        failed = (f"{tool} 未成功（{reason}）" if language == n.ZH else f"{tool} did not succeed ({reason})") \
            if reason else (f"{tool} 未成功" if language == n.ZH else f"{tool} did not succeed")
        state.progress = [who + failed]
        if event.matter is not None and event.matter.status in (OPEN, HELD):
            state.dead_ends.append((event.matter, who + failed))
    state.changed = True


def _walk(material: Material, state: _State) -> None:
    results: dict[int, list[ToolResult]] = {}
    for result in material.tool_results:
        results.setdefault(result.pair_index, []).append(result)
    previous_user_text = ""
    for pair in material.pairs:
        # The ids an action or look-up of this pair was called with say which
        # listed matter the user's words are about ("现在可以提交了" while the
        # assistant submits for order 88232).
        called = {t for r in results.get(pair.index, ()) for t in c.topics(r.arguments)}
        hinted = _best(state, called, statuses=(OPEN, HELD, DONE), minimum=3) if called else None
        in_message: Matter | None = hinted
        state.hinted = hinted
        # A plain statement naming an id ("订单号88232") belongs to the
        # matter the same message is about: the seed's "关联编号".
        naming: list[c.Clause] = []
        for clause in c.read(pair.user_text, state.vocabulary):
            if clause.role == c.STATEMENT and c.ids(clause.text) and c.quotable(clause.text):
                naming.append(clause)
            else:
                in_message = _apply_clause(state, clause, in_message=in_message,
                                           previous_user_text=previous_user_text)
            if in_message is not None and in_message.status != ABANDONED:
                for named in naming:
                    _add_fragment(state, in_message, Fragment(text=_excerpt(named.text), role=named.role,
                                                              kinds=named.kinds))
                naming = []
        for result in results.get(pair.index, ()):
            event = _apply_tool(state, result, pair_matter=in_message)
            if event is not None:
                _record(state, event)
        previous_user_text = pair.user_text


# --- writing the note -----------------------------------------------------------

def _request_line(matter: Matter, language: str) -> str:
    if not matter.dirty and matter.original is not None:
        return matter.original
    if matter.status == HELD:
        quotes = [f.text for f in matter.fragments if _stands_on_hold(matter, f)] + matter.hold
        head = n.HOLD_PREFIX[language] + ("" if language == n.ZH else " ")
    elif matter.status == ABANDONED:
        quotes = [f.text for f in matter.fragments if f.role != c.CONSENT] + matter.abandon
        head = n.ABANDONED_PREFIX[language] + ("" if language == n.ZH else " ")
    elif matter.status == DONE:
        quotes = [f.text for f in matter.fragments]
        head = DONE_PREFIX[language] + ("" if language == n.ZH else " ")
    else:
        quotes = [f.text for f in matter.fragments]
        head = ""
    return head + matter.label + _quote(quotes, language)


def _quote(fragments: list[str], language: str) -> str:
    seen, unique = set(), []
    for fragment in fragments:  # one quote once, however often it was said
        if _norm(fragment) not in seen:
            seen.add(_norm(fragment))
            unique.append(fragment)
    fragments = unique
    if not fragments:
        return ""
    return ("" if language == n.ZH else " ") + n.quote_suffix(fragments, language=language)


def _todo_line(matter: Matter, language: str) -> str | None:
    if matter.status != OPEN:
        return None
    if not matter.dirty and matter.original is not None:
        return matter.todo_original  # carried as the parent had it (or had not)
    action = matter.action()
    if action is None:
        return None
    return matter.label + _quote([action.text], language)


def _sections(state: _State) -> dict[str, list[str]]:
    language = state.language
    requests = [_request_line(m, language) for m in state.matters]
    todo_matters = [m for m in state.matters if _todo_line(m, language)]
    todos = [_todo_line(m, language) for m in todo_matters] + state.loose_todos
    if state.changed:
        # One to-do that can move now: the one the user touched last.
        nxt = max(todo_matters, key=lambda m: m.touched) if todo_matters else None
        next_step = [_todo_line(nxt, language)] if nxt is not None else []
    else:
        next_step = state.next_step
    settled = {id(m) for m in state.matters if m.status in (DONE, ABANDONED)}
    dead_ends = [text for owner, text in state.dead_ends if owner is None or id(owner) not in settled]
    seen: set[str] = set()
    unique = []
    for text in reversed(dead_ends):  # newest first, one line per repeated failure
        if text not in seen:
            seen.add(text)
            unique.append(text)
    dead_ends = list(reversed(unique[:n.MAX_DEAD_ENDS]))
    return {n.REQUESTS: requests, n.TODOS: todos, n.NEXT_STEP: next_step, n.PROGRESS: state.progress,
            n.DEAD_ENDS: dead_ends, n.DONE: state.done}


def _fit(sections: dict[str, list[str]], language: str, limit: int) -> str:
    """The note within ``limit`` characters. What goes first is what the
    next assistant can best do without: the oldest done lines (the ids stay
    in the tool results), then the oldest dead ends and loose to-dos, then
    quotes are shortened from their end (each stays a verbatim head)."""
    text = n.render(sections, language=language)
    if len(text) <= limit:
        return text
    sections = {k: list(vs) for k, vs in sections.items()}
    for key in (n.DONE, n.DEAD_ENDS, n.TODOS):
        while len(sections[key]) > 1 and len(text) > limit:
            sections[key].pop(0)
            text = n.render(sections, language=language)
    requests = sections[n.REQUESTS]
    width = 120
    while len(text) > limit and width >= 8:
        requests = [_shorten_quotes(line, width, language) for line in requests]
        sections[n.REQUESTS] = requests
        text = n.render(sections, language=language)
        width = width * 2 // 3
    while len(text) > limit and len(sections[n.REQUESTS]) > 1:
        sections[n.REQUESTS].pop(0)  # the last resort: the oldest matters go
        text = n.render(sections, language=language)
    return text


def _shorten_quotes(line: str, width: int, language: str) -> str:
    fragments = n.quotes(line)
    if not fragments:
        return line
    head = _own_words(line)
    short = [_cut(f, width) if len(f) > width else f for f in fragments]
    return head + _quote(short, language)


def build_note(parent_note: str | None, material: Material, *, language: str,
               vocabulary: v.Vocabulary = v.DEFAULT, max_chars: int = MAX_SUMMARY_CHARS) -> str:
    """Generation *k*'s note from generation *k−1*'s (or None) and the new
    material. Deterministic; always six headings in order; at most
    ``max_chars`` characters; never longer than the parent when the
    material brings no new matter, condition, consent, hold or abandonment
    and no action result."""
    if language not in n.HEADINGS:
        raise ValueError(f"unknown note language {language!r}; expected {n.ZH!r} or {n.EN!r}")
    state = _State(language=language, vocabulary=vocabulary)
    _read_parent(parent_note, state)
    _walk(material, state)
    if state.parent_text is not None and not state.changed:
        return state.parent_text  # nothing new: the parent, unchanged
    sections = _sections(state)
    text = _fit(sections, language, max_chars)
    if state.parent_text is not None and not state.user_news and len(text) > len(state.parent_text):
        # Only action results moved: they may replace lines, not lengthen the
        # note. Progress goes back to the parent's first, then dead ends; a new
        # done line (a proven fact) stays even so.
        parent = n.parse(state.parent_text)
        for key in (n.PROGRESS, n.DEAD_ENDS):
            sections = {**sections, key: [line.text for line in parent.section(key)]}
            text = _fit(sections, language, max_chars)
            if len(text) <= len(state.parent_text):
                break
    return text


# --- the provider ---------------------------------------------------------------

@dataclass(frozen=True)
class HandoffInput:
    """What a hand-off request carries for the offline builder (the engine's
    request shape for rolling jobs is the binding's to define; it puts one of
    these in ``SummaryRequest.extra["handoff"]``)."""

    parent_note: str | None
    material: Material
    language: str
    vocabulary: v.Vocabulary = v.DEFAULT


class HandoffExtractiveProvider(Provider):
    name = "handoff-extractive"
    model_id = HANDOFF_EXTRACTIVE_MODEL_ID

    def summarise(self, request: SummaryRequest) -> ProviderResult:
        started = time.perf_counter()
        job = request.extra.get("handoff")
        if not isinstance(job, HandoffInput):
            return ProviderResult(error="provider_error", model=self.model_id,
                                  error_detail="handoff-extractive needs extra['handoff'] (a HandoffInput)")
        try:
            text = build_note(job.parent_note, job.material, language=job.language, vocabulary=job.vocabulary)
        except n.MalformedNote as exc:
            return ProviderResult(error="provider_error", model=self.model_id,
                                  error_detail=f"parent note is not a six-section note: {exc}")
        return ProviderResult(
            text=text, finish_reason="stop", tool_calls=[], model=self.model_id,
            input_tokens=count_tokens(request.system) + count_tokens(request.user),
            output_tokens=count_tokens(text), latency_ms=int((time.perf_counter() - started) * 1000), raw=text)
