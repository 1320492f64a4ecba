"""Writing the six sections from the matters (SPEC §7 "The note"; seed 001
"交接单该装什么").

Pure. One user-requests line per matter (``暂缓：`` quoting the hold without
the consent it withdrew, ``已放弃：`` with the user's words, ``已办结：`` once
a tool result settled it; a line nothing changed is the parent's line
unchanged); to-dos the open matters the user asked to have done, each with
that quote, never what the assistant asked for; one next step, the to-do
touched last (or none, also when only held matters remain); dead ends of
unsettled matters only, at most three, newest kept; and the note kept
within the contract's characters by dropping what the next assistant can
best do without.
"""

from __future__ import annotations

from .. import clauses as c
from .. import note as n
from .labels import shorten
from .matters import ABANDONED, DONE, DONE_PREFIX, HELD, OPEN, Matter, State, norm, stands_on_hold

def request_line(matter: Matter, language: str) -> str:
    """The matter's user-requests line."""
    if not matter.dirty and matter.original is not None:
        return matter.original
    if matter.status == HELD:
        quotes = [f.text for f in matter.fragments if stands_on_hold(matter, f)] + matter.hold
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
    return head + matter.label + quote(quotes, language)


def quote(fragments: list[str], language: str) -> str:
    """The parenthesised quote a line ends with; each fragment once, however often it was said."""
    once: dict[str, str] = {}
    for fragment in fragments:
        once.setdefault(norm(fragment), fragment)
    fragments = list(once.values())
    if not fragments:
        return ""
    return ("" if language == n.ZH else " ") + n.quote_suffix(fragments, language=language)


def todo_line(matter: Matter, language: str) -> str | None:
    """The matter's to-do line, or None when nothing of it is to be done."""
    if matter.status != OPEN:
        return None
    if not matter.dirty and matter.original is not None:
        return matter.todo_original  # carried as the parent had it (or had not)
    action = matter.action()
    if action is None:
        return None
    return matter.label + quote([action.text], language)


def sections(state: State) -> dict[str, list[str]]:
    """Every section's lines."""
    language = state.language
    requests = [request_line(m, language) for m in state.matters]
    todo_matters = [m for m in state.matters if todo_line(m, language)]
    todos = [todo_line(m, language) for m in todo_matters] + state.loose_todos
    if state.changed:
        # One to-do that can move now: the one the user touched last.
        nxt = max(todo_matters, key=lambda m: m.touched) if todo_matters else None
        next_step = [todo_line(nxt, language)] if nxt is not None else []
    else:
        next_step = state.next_step
    settled = {id(m) for m in state.matters if m.status in (DONE, ABANDONED)}
    dead_ends = [text for owner, text in state.dead_ends if owner is None or id(owner) not in settled]
    newest_first = list(dict.fromkeys(reversed(dead_ends)))  # one line per repeated failure
    dead_ends = list(reversed(newest_first[:n.MAX_DEAD_ENDS]))
    return {n.REQUESTS: requests, n.TODOS: todos, n.NEXT_STEP: next_step, n.PROGRESS: state.progress,
            n.DEAD_ENDS: dead_ends, n.DONE: state.done}


def fit(lines: dict[str, list[str]], language: str, limit: int) -> str:
    """The note within ``limit`` characters. What goes first is what the
    next assistant can best do without: the oldest done lines (the ids stay
    in the tool results), then the oldest dead ends and loose to-dos, then
    quotes are shortened from their end (each stays a verbatim head)."""
    text = n.render(lines, language=language)
    if len(text) <= limit:
        return text
    sections = {k: list(vs) for k, vs in lines.items()}
    for key in (n.DONE, n.DEAD_ENDS, n.TODOS):
        while len(sections[key]) > 1 and len(text) > limit:
            sections[key].pop(0)
            text = n.render(sections, language=language)
    requests = sections[n.REQUESTS]
    width = 120
    while len(text) > limit and width >= 8:
        requests = [shorten_quotes(line, width, language) for line in requests]
        sections[n.REQUESTS] = requests
        text = n.render(sections, language=language)
        width = width * 2 // 3
    while len(text) > limit and len(sections[n.REQUESTS]) > 1:
        sections[n.REQUESTS].pop(0)  # the last resort: the oldest matters go
        text = n.render(sections, language=language)
    return text


def shorten_quotes(line: str, width: int, language: str) -> str:
    """``line`` with each quote fragment cut to at most ``width`` characters."""
    fragments = n.quotes(line)
    if not fragments:
        return line
    return n.without_quote(line) + quote([shorten(f, width) for f in fragments], language)
