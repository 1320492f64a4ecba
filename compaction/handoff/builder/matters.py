"""The builder's working state: one **matter** per user-requests line
(seed 001 "交接单该装什么" 1. 按事整理, 不按问答: a pair of earbuds, an order,
a product under consideration each take one line, however often the user
asks about it), and which matter a clause is about (SPEC §7 "Providers").

Pure. A matter has a label in the user's own words, a status (open, held,
abandoned, done), the user's verbatim clauses that carry it (requests,
conditions, the current consent), the hold or drop words while held or
dropped, and the parent's lines while nothing changes it. A clause is
about the listed matter whose topics it shares most (``clauses.affinity``:
an id 3, a Latin word or number 2, a Chinese term 1; two different ids
never), ties going to the matter the user touched last.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import clauses as c
from .. import note as n
from .. import vocabulary as v
from ..reader import Reader
from ..reading import normalise
from ..values import dates
from .labels import label_from, label_parts

OPEN, HELD, ABANDONED, DONE = "open", "held", "abandoned", "done"

GENERIC_LABEL = {n.ZH: "用户要办的事", n.EN: "the user's request"}
GENERIC_ABANDONED = {n.ZH: "此前考虑的事项", n.EN: "the option under consideration"}
LABEL_SEPARATOR = {n.ZH: "：", n.EN: ": "}
# A settled matter keeps its line (its conditions stay on record) under this
# prefix, so the next generation reads it back as done, not as a to-do.
DONE_PREFIX = {n.ZH: "已办结：", n.EN: "Completed:"}


# A quoted user clause of a matter: its words, role and categories.
Fragment = c.Clause


@dataclass
class Matter:
    """One matter of the note, as the builder knows it."""

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
        key = norm(text)
        return any(norm(f.text) == key for f in self.fragments) or key in map(norm, self.hold + self.abandon)

    def action(self) -> Fragment | None:
        """The latest quote that asks for something to be done: a consent or a request."""
        for fragment in reversed(self.fragments):
            if fragment.role in (c.CONSENT, c.REQUEST):
                return fragment
        return None


@dataclass
class State:
    """Everything a generation is being written from: the parent's lines read
    back, then each clause and tool result of the material applied in order."""

    language: str
    reader: Reader
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

    def tick(self) -> int:
        self.clock += 1
        return self.clock


def norm(text: str) -> str:
    """The key two quotes are the same under: normalised, lower-cased."""
    return normalise(text).lower()


def fragment(text: str, reader: Reader) -> Fragment:
    role, kinds = c.classify(text, reader)
    return Fragment(text=text, role=role, kinds=kinds)


def best(state: State, topics: set[str], *, statuses, minimum: int) -> Matter | None:
    """The matter of ``statuses`` whose topics ``topics`` share most, when
    the affinity is at least ``minimum``."""
    found, score = None, 0
    for matter in state.matters:
        if matter.status not in statuses:
            continue
        s = c.affinity(topics, matter.topics())
        # ties go to the matter touched last: the one the user is on
        if s > score or (s == score and s and matter.touched > (found.touched if found else -2)):
            found, score = matter, s
    return found if score >= minimum else None


def focus(state: State, statuses) -> Matter | None:
    """The matter of ``statuses`` the user touched last."""
    candidates = [m for m in state.matters if m.status in statuses and m.touched >= 0]
    return max(candidates, key=lambda m: m.touched) if candidates else None


def new_matter(state: State, texts, *, status=OPEN, generic=GENERIC_LABEL, fallback: str | None = None,
                role: str = c.REQUEST) -> Matter:
    label = label_from(texts, language=state.language, reader=state.reader, generic={}, role=role)
    label = label or fallback or generic[state.language]
    existing = next((m for m in state.matters if m.label == label), None)
    if existing is not None:
        # The same name is the same matter: one line per matter. Asked for
        # again after it was dropped or done, it is open again.
        if status == OPEN and existing.status in (ABANDONED, DONE):
            reopen(state, existing)
        return existing
    matter = Matter(label=label, status=status, dirty=True)
    state.matters.append(matter)
    state.changed = state.user_news = True
    return matter


def user_changed(state: State, matter: Matter) -> None:
    """The user's words changed ``matter``: its line is written again, and
    the note may grow (the material brought something new)."""
    matter.dirty = True
    state.changed = state.user_news = True


def reopen(state: State, matter: Matter) -> None:
    matter.status = OPEN
    matter.abandon = []
    user_changed(state, matter)


def touch(state: State, matter: Matter) -> None:
    matter.touched = state.tick()


def line_text(matter: Matter) -> str:
    return " ".join([matter.label] + [f.text for f in matter.fragments] + matter.hold + matter.abandon)


def stands_on_hold(matter: Matter, fragment: Fragment) -> bool:
    """What a held or dropped matter still quotes: its conditions and facts,
    not its consent nor a request without a condition. A label holding a
    date keeps the words it was cut from, so the date stays the user's on
    record (else a later reading takes it for a looked-up value)."""
    if fragment.role == c.CONSENT:
        return False
    if fragment.role == c.REQUEST and not fragment.is_condition:
        return bool(dates(matter.label)) and norm(matter.label) in norm(fragment.text)
    return True


def drop_consent(matter: Matter, reader: Reader, language: str) -> bool:
    """Remove every consent — quotes and the line's own words — and the
    requests that carry no condition: once held or dropped, "提交送修申请"
    is no longer the user's current intent (the label still names the
    matter). Requests with a condition stay: the condition still holds.
    True when anything went."""
    before = (list(matter.fragments), matter.label)
    matter.fragments = [f for f in matter.fragments if stands_on_hold(matter, f)]
    kept = [p for p in label_parts(matter.label) if not reader.matches(v.CONSENT, p)]
    matter.label = "".join(kept).strip(c.EDGE_PUNCT) or GENERIC_LABEL[language]
    if (matter.fragments, matter.label) != before:
        matter.dirty = True
        return True
    return False
