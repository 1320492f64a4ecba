"""Reading the parent note back into matters, and repairing what a parent
must not hold (SPEC §7: each generation is written from its parent's note;
seed 001 §2–§4 and "交接单该装什么").

Pure. Each user-requests line becomes a matter (its prefix gives its
status: ``暂缓：`` held, ``已放弃：`` abandoned, ``已办结：`` done; its quotes
its fragments), a to-do line joins the matter of the same label, and the
other sections are carried as they are. Lines a parent written by a model
may hold and a note must not are repaired on the way:

- a line that only records a question (seed 001 §4: 37 of 46 lines were
  "用户询问…") goes;
- a consent written in a line's own words beside a hold of the same matter
  (seed 001 §2: "并明确同意办理" kept three generations after "先别提交")
  goes, with its quotes;
- a look-up value (``compaction.handoff.values``: a date, time, amount or
  tool wording) in a line's own words that its quotes do not hold goes
  (seed 001 §3: the delivery date in nine generations); ids stay;
- a to-do only the assistant asked for (用户尚未提供) goes.
"""

from __future__ import annotations

from .. import clauses as c
from .. import note as n
from .. import values
from .. import vocabulary as v
from ..reader import Reader
from .labels import label_from, label_parts
from .matters import (
    ABANDONED, DONE, DONE_PREFIX, GENERIC_LABEL, HELD, LABEL_SEPARATOR, OPEN, Matter, State, drop_consent, fragment,
    touch,
)

def split_prefix(text: str) -> tuple[str, str]:
    """A requests line's status, from its prefix, and the rest of the line."""
    for status, prefixes in ((HELD, n.HOLD_PREFIX), (ABANDONED, n.ABANDONED_PREFIX), (DONE, DONE_PREFIX)):
        for prefix in prefixes.values():
            if text.lower().startswith(prefix.lower()):
                return status, text[len(prefix):].strip()
    return OPEN, text


def matter_from_line(text: str, *, language: str, reader: Reader) -> Matter:
    status, body = split_prefix(text)
    label = n.without_quote(body) or GENERIC_LABEL[language]
    matter = Matter(label=label, status=status, original=text)
    for quote in n.quotes(body):
        read = fragment(quote, reader)
        if status == HELD and read.role == c.HOLD:
            matter.hold.append(quote)
        elif status == ABANDONED and read.role == c.ABANDON:
            matter.abandon.append(quote)
        else:
            matter.fragments.append(read)
    return matter


def line_label(text: str) -> str:
    """The label a line names, without its prefix and quote."""
    return n.without_quote(split_prefix(text)[1])


def read_parent(parent_note: str | None, state: State) -> None:
    """Read ``parent_note`` into ``state`` (nothing for a first generation)."""
    if not parent_note or not parent_note.strip():
        return
    text = n.extract_summary(parent_note)
    state.parent_text = text
    parsed = n.parse(text)  # a stored note passed the contract; anything else is the caller's bug
    reader = state.reader
    for line in parsed.section(n.REQUESTS):
        matter = matter_from_line(line.text, language=state.language, reader=reader)
        if only_asks(matter, reader):
            state.changed = True  # seed 001: a question is not a requirement
            continue
        state.matters.append(matter)
    repair_consent_beside_hold(state)
    repair_tool_details(state)
    by_label = {m.label: m for m in state.matters}
    for line in parsed.section(n.TODOS):
        matter = by_label.get(line_label(line.text))
        if matter is not None and matter.todo_original is None:
            matter.todo_original = line.text
        elif not n.quotes(line.text) and reader.matches(v.ASSISTANT_ASK, line.text):
            state.changed = True  # a to-do only the assistant asked for
        else:
            state.loose_todos.append(line.text)
    state.next_step = [line.text for line in parsed.section(n.NEXT_STEP)]
    # What the user was on when the parent was written: its next step's
    # matter, else its last line. A bare "我同意" or "只要银色" in the new
    # material is about that one.
    for matter in state.matters:
        touch(state, matter)
    for line in state.next_step:
        matter = by_label.get(line_label(line))
        if matter is not None:
            touch(state, matter)
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


def only_asks(matter: Matter, reader: Reader) -> bool:
    """A requests line that only records questions: every quote a question,
    or no quote and the line's own words say the user asked."""
    if matter.hold or matter.abandon:
        return False
    if matter.fragments:
        return all(f.role == c.QUESTION for f in matter.fragments)
    words = matter.label
    return reader.matches(v.QUESTION, words) and not reader.matches(v.DIRECT_REQUEST, words) \
        and not reader.matches(v.CONSTRAINT, words)


def repair_consent_beside_hold(state: State) -> None:
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
            if other is held or other.status != OPEN or not state.reader.matches(v.CONSENT, other.label):
                continue
            if c.affinity(hold_topics, other.topics()) >= 2 and drop_consent(other, state.reader, state.language):
                state.changed = True


def repair_tool_details(state: State) -> None:
    """Drop, part by part, the look-up values a request line's own words
    carry and its quotes do not (see the module doc)."""
    for matter in state.matters:
        quoted = " ".join([f.text for f in matter.fragments] + matter.hold + matter.abandon)
        parts = label_parts(matter.label)

        def foreign(part: str) -> bool:
            return any(not values.said_in(kind, key, quoted) for _, kind, key in values.values(state.reader, part))

        kept = [p for p in parts if not foreign(p)]
        if len(kept) != len(parts):
            matter.label = "".join(kept).strip(c.EDGE_PUNCT) or label_from(
                [f.text for f in matter.fragments], language=state.language, reader=state.reader,
                generic=GENERIC_LABEL)
            matter.dirty = True
            state.changed = True
