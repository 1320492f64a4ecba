"""The *extra* drift checks: what does not belong in a note at all (SPEC §8;
seed 001 §3 "错误还会从主Agent的复述再进来", §4 "多", and its table
"交接单该装什么": 不装什么).

Pure, one checker per code: a looked-up value in the user's requests
(``tool_detail_in_requests``; ``compaction.handoff.values``), a line that only
records a question (``question_as_requirement``), a to-do only the assistant
asked for (``assistant_ask_as_todo``). Each checker's docstring gives its rule.
"""

from __future__ import annotations

from compaction.handoff import note as notes
from compaction.handoff import values
from compaction.handoff import vocabulary as v
from compaction.handoff.reading import key_terms, shared

from .findings import ASSISTANT_ASK_AS_TODO, QUESTION_AS_REQUIREMENT, TOOL_DETAIL_IN_REQUESTS, Finding, finding
from .input import DriftInput
from .reading import clauses


def check_tool_detail_in_requests(d: DriftInput) -> list[Finding]:
    """extra / tool_detail_in_requests — a value in a user-requests line's
    own words (not its quote) that the user never said but a tool result or
    an assistant message of the chain did: a date (2026-08-31 = 8月31日 =
    Aug 31), a clock time, an amount with a currency or unit (749元, $45,
    3个工作日; single digits are too common to tell who said them), or
    tool wording (有货, 库存, 保修至, in stock — the vocabulary's
    ``tool_detail``). Bare numbers and ids (the order number) are references
    a request may carry. One finding per value; proof: the tool results and
    assistant messages that hold it."""
    out = []
    for line in d.lines:
        if line.section != notes.REQUESTS:
            continue
        for raw, kind, key in values.values(d.vocabulary, line.own):
            if d.user_said_value(kind, key):
                continue
            sources = d.value_sources(kind, key)
            if not sources:
                continue
            out.append(finding(
                TOOL_DETAIL_IN_REQUESTS, section=line.section, line=line.number, message_ids=sources, subject=raw,
                detail=(f"“{raw}” in the user's requests comes from tool results or the assistant's answers "
                        f"({', '.join(sources[:3])}{' …' if len(sources) > 3 else ''}); the user never said it. "
                        f"Look-up details are looked up again, not kept as what the user asked for.")))
    return out


def check_question_as_requirement(d: DriftInput) -> list[Finding]:
    """extra / question_as_requirement — a user-requests line (not a hold or
    abandoned line) only records a question when every clause of its own
    words is a question or says the user asked (``question``: 用户询问…,
    有没有, "user asked whether"; "下个月再决定怎么修" inside a statement is
    not one) and neither its own words nor its quote ask for anything to be
    done (no direct request, consent, hold or abandonment).
    A question phrased as a request ("能不能帮我把申请提交了？") is a
    requirement. Proof: the quoted user message, else the user's question
    closest to the line."""
    out = []
    for line in d.lines:
        if line.section != notes.REQUESTS or line.marked_hold or line.marked_abandoned:
            continue
        own = clauses(line.own)
        if not own or not all(d.vocabulary.matches(v.QUESTION, clause) for clause in own):
            continue
        texts = (line.own, *line.quotes)
        if any(d.vocabulary.matches(c, t) for c in (v.DIRECT_REQUEST, v.HOLD) for t in texts):
            continue
        if any(d.vocabulary.unnegated(c, t) for c in (v.CONSENT, v.ABANDON) for t in texts):
            continue
        ids = [u.message.id for q in line.quotes for u in d.users_saying(q)[-1:]]
        if not ids:
            best = d.closest_question(key_terms(line.own))
            if best is not None:
                ids = [d.users[best].message.id]
        out.append(finding(
            QUESTION_AS_REQUIREMENT, section=line.section, line=line.number, message_ids=ids, subject=line.own,
            detail=("This line only records a question the user asked. Asking, comparing or learning is not "
                    "something to be done, so it does not belong in the user's requests.")))
    return out


def check_assistant_ask_as_todo(d: DriftInput) -> list[Finding]:
    """extra / assistant_ask_as_todo — a to-do is the assistant's ask when an
    assistant message of the chain asks the user for it (``assistant_ask``;
    the ask's clause shares key terms worth 2 with the to-do) or the to-do
    itself says it waits on the user (用户尚未提供, awaiting the user), and
    no user message asks for it (a clause about it that is a request,
    direct request or consent, not a mere question). Proof: the assistant
    messages that asked."""
    todos = [line for line in d.lines if line.section == notes.TODOS]
    asks = [(message_id, ask) for message_id, found in (d.per_assistant("asks", lambda text: _asks(d, text))
                                                         if todos else ()) for ask in found]
    out = []
    for line in todos:
        line_terms = line.terms
        asked = [message_id for message_id, ask_terms in asks if shared(line_terms, ask_terms) >= 2]
        waiting = d.vocabulary.matches(v.ASSISTANT_ASK, line.own)
        if not asked and not waiting:
            continue
        if d.user_asked_for(line_terms):
            continue
        out.append(finding(
            ASSISTANT_ASK_AS_TODO, section=line.section, line=line.number, message_ids=asked, subject=line.own,
            detail=(f"Only the assistant asked for this{' (' + ', '.join(asked[-3:]) + ')' if asked else ''}; "
                    f"the user never asked for it to be done, so it is not a to-do.")))
    return out


def _asks(d: DriftInput, text: str) -> tuple[frozenset[str], ...]:
    """The key terms of what each asking clause of an assistant message asks
    for (from its ask phrase on), read once per text."""
    if not d.vocabulary.matches(v.ASSISTANT_ASK, text):
        return ()

    def read() -> tuple[frozenset[str], ...]:
        found = []
        for clause in clauses(text):
            match = d.vocabulary.find(v.ASSISTANT_ASK, clause)
            if match:
                found.append(key_terms(clause[match.start():]))
        return tuple(found)

    return d.vocabulary.kept("assistant asks", text, read)
