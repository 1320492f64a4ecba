"""Drift checks of a rolling hand-off note: lost, wrong and extra content, and
growth without new matters (SPEC §8; seed 001 §4 "走样有三种：丢、错、多",
and its table "交接单该装什么").

Pure and deterministic: no model, no database, the same findings for the
same input. ``check_note`` runs one small checker per finding code over a
note, its parent note, the generation's material and everything the chain
has settled so far (``ChainHistory``), reading every text with the one
shared vocabulary (``compaction.handoff.vocabulary``) that the offline
builder uses too. Length and content are checked separately (seed 001: a
withdrawn consent is sixty characters lost in thousands; a dropped "only"
makes the note shorter), so ``growth_without_new_matters`` looks at length
and the material only, and the other checkers never look at length.

How texts are read (clauses, key terms, "about the same matter", whitespace
normalisation) is ``reading``; each checker's docstring gives its own rule.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Callable, Iterable

from compaction.handoff import note as notes
from compaction.handoff import vocabulary as v
from compaction.handoff.material import Material

from compaction.handoff import values as values_
from compaction.handoff.reading import edge_strip, identifiers, key_terms, normalise, shared, unique, worth

from .input import DriftInput
from .reading import (  # noqa: F401 (ChainHistory, ChainMessage: the input types callers build)
    ELLIPSIS, ChainHistory, ChainMessage, Condition, UserReading, clauses,
)

__all__ = ["CHECKERS", "CODES", "ChainHistory", "ChainMessage", "Finding", "check_note"]

WRONG, EXTRA, LOST, LENGTH = "wrong", "extra", "lost", "length"

QUOTE_NOT_VERBATIM = "quote_not_verbatim"
RETRACTED_CONSENT = "retracted_consent"
ABANDONED_UNMARKED = "abandoned_unmarked"
DONE_WITHOUT_PROOF = "done_without_proof"
TOOL_DETAIL_IN_REQUESTS = "tool_detail_in_requests"
QUESTION_AS_REQUIREMENT = "question_as_requirement"
ASSISTANT_ASK_AS_TODO = "assistant_ask_as_todo"
LOST_CONSTRAINT = "lost_constraint"
GROWTH_WITHOUT_NEW_MATTERS = "growth_without_new_matters"

# Each code and its kind, in the order of SPEC §8's table.
CODES: dict[str, str] = {
    QUOTE_NOT_VERBATIM: WRONG,
    RETRACTED_CONSENT: WRONG,
    ABANDONED_UNMARKED: WRONG,
    DONE_WITHOUT_PROOF: WRONG,
    TOOL_DETAIL_IN_REQUESTS: EXTRA,
    QUESTION_AS_REQUIREMENT: EXTRA,
    ASSISTANT_ASK_AS_TODO: EXTRA,
    LOST_CONSTRAINT: LOST,
    GROWTH_WITHOUT_NEW_MATTERS: LENGTH,
}

# The note may not grow at all without a new matter (seed 001: "新记录里没有
# 新事项、新条件或新限制时，摘要不比上一代长").
GROWTH_TOLERANCE_CHARS = 0
# Key-term worth of a user statement's new terms that makes it a new matter.
NEW_MATTER_WORTH = 3
DETAIL_QUOTE_CHARS = 60


@dataclass(frozen=True)
class Finding:
    """One drift finding. ``line`` is a 1-based line number of the note text
    after ``<summary>`` unwrapping (``NoteLine.number``); a ``lost``
    finding points at the heading of the section that should have kept it;
    ``growth_without_new_matters`` is about the whole note (``section`` and
    ``line`` None). ``subject`` is the words the finding is about (a quote,
    a value, a condition, the two lengths)."""

    kind: str
    code: str
    section: str | None
    line: int | None
    message_ids: tuple[str, ...]
    detail: str
    subject: str = ""

    def as_dict(self) -> dict:
        return {"kind": self.kind, "code": self.code, "section": self.section, "line": self.line,
                "message_ids": list(self.message_ids), "detail": self.detail, "subject": self.subject}

    def sort_key(self) -> tuple:
        section = notes.SECTIONS.index(self.section) if self.section in notes.SECTIONS else len(notes.SECTIONS)
        return (self.line if self.line is not None else 10**9, section, list(CODES).index(self.code),
                self.subject, self.message_ids)


def _finding(code: str, *, section: str | None, line: int | None, message_ids: Iterable[str], detail: str,
             subject: str = "") -> Finding:
    return Finding(kind=CODES[code], code=code, section=section, line=line, message_ids=unique(message_ids),
                   detail=detail, subject=subject)


def _short(text: str, limit: int = DETAIL_QUOTE_CHARS) -> str:
    text = normalise(text)
    return text if len(text) <= limit else text[:limit - 1] + "…"


# ---------------------------------------------------------------- the checkers


def check_quote_not_verbatim(d: DriftInput) -> list[Finding]:
    """wrong / quote_not_verbatim — every fragment a line quotes after
    ``原话：`` / ``quote:`` must be a verbatim substring, after whitespace
    normalisation, of some user message of the chain. Quotation marks and
    punctuation at the fragment's edges are not part of it, and a fragment
    elided with ``……`` / ``...`` is checked piece by piece. Proof: the
    assistant message or tool result that holds the words when they are not
    the user's, else the user message closest to them."""
    out = []
    for line in d.lines:
        for fragment in line.quotes:
            pieces = [p for p in ELLIPSIS.split(fragment) if edge_strip(normalise(p))]
            if all(d.said_by_user(p) for p in pieces):
                continue
            words = edge_strip(normalise(fragment))
            elsewhere = [m.id for m in d.assistants if words and words in normalise(m.text)]
            elsewhere += [t.message_id for t in d.tools if words and words in normalise(t.text)]
            if elsewhere:
                ids = elsewhere[:3]
                detail = (f"The note quotes the user as saying “{_short(fragment)}”, but these are the assistant's "
                          f"or a tool's words ({', '.join(ids)}), not the user's.")
            else:
                closest = _closest_user_message(d, words)
                ids = [closest.message.id] if closest else []
                detail = (f"The note quotes the user as saying “{_short(fragment)}”, but no user message contains "
                          f"these words.")
                if closest:
                    detail += f" The closest ({closest.message.id}) says “{_short(closest.message.text)}”."
            out.append(_finding(QUOTE_NOT_VERBATIM, section=line.section, line=line.number, message_ids=ids,
                                 detail=detail, subject=fragment))
    return out


def _closest_user_message(d: DriftInput, words: str) -> UserReading | None:
    """The user message sharing the longest run of characters with
    ``words`` (at least a third of them, two or more); the earliest on ties."""
    best, best_size = None, max(2, len(words) // 3)
    for user in d.users:
        text = normalise(user.message.text)
        size = difflib.SequenceMatcher(None, words, text, autojunk=False).find_longest_match(
            0, len(words), 0, len(text)).size
        if size > best_size or (best is None and size == best_size):
            best, best_size = user, size
    return best


_CONSENT_SECTIONS = (notes.REQUESTS, notes.TODOS, notes.NEXT_STEP, notes.PROGRESS)


def check_retracted_consent(d: DriftInput) -> list[Finding]:
    """wrong / retracted_consent — a line of user requests, to-dos, next step
    or progress that states a consent or go-ahead (in its own words or its
    quote; not a hold line, and not a line that records the hold itself) is
    wrong when the user's state for that consent is now *hold*. The consent
    is the quoted user message (the latest one holding a quoted consent
    fragment), or for an unquoted line the latest consenting user message
    about the same matter. Every later user consent or hold about the same
    matter changes the state (see ``DriftInput.final_state``); a consent
    restated after the hold makes the line current again. Proof: the
    consent and the hold."""
    out = []
    for line in d.lines:
        if line.section not in _CONSENT_SECTIONS or notes.is_hold(line.text) or notes.is_abandoned(line.text):
            continue
        if d.vocabulary.matches(v.HOLD, line.own):
            continue
        quoted = [q for q in line.quotes if d.vocabulary.unnegated(v.CONSENT, q)]
        if not quoted and not d.vocabulary.unnegated(v.CONSENT, line.own):
            continue
        line_terms = line.terms
        anchor = None
        for fragment in quoted:
            saying = d.users_saying(fragment)
            if saying and (anchor is None or saying[-1].order > anchor.order):
                anchor = saying[-1]
        if anchor is None:
            candidates = [e for e in d.events if e.consent and shared(e.own_terms, line_terms) >= 2]
            anchor = candidates[-1] if candidates else None
        if anchor is None:
            continue
        state, last = d.final_state(anchor, line_terms | anchor.terms)
        if state != "hold":
            continue
        consent_words = (anchor.consent or anchor.hold)[0]
        hold_words = last.hold[0] if last.hold else last.message.text
        out.append(_finding(
            RETRACTED_CONSENT, section=line.section, line=line.number,
            message_ids=[anchor.message.id, last.message.id], subject=consent_words,
            detail=(f"This line still gives the user's go-ahead (“{_short(consent_words)}”, {anchor.message.id}), "
                    f"but the user withdrew or put it on hold later (“{_short(hold_words)}”, {last.message.id}) "
                    f"and has not given it again.")))
    return out


_MATTER_SECTIONS = (notes.REQUESTS, notes.TODOS, notes.NEXT_STEP)


def check_abandoned_unmarked(d: DriftInput) -> list[Finding]:
    """wrong / abandoned_unmarked — a line of user requests, to-dos or next
    step about a matter the user abandoned (an abandonment clause of a user
    message, not negated, not a question; its matter is the clause's own
    key terms, or the user's previous message when the clause names none)
    is wrong unless it is marked: it starts ``已放弃：`` / ``Abandoned:`` or
    its words or quote say the abandonment. A matter the user asked for
    again later (a request or consent about it) is not abandoned. Proof:
    the abandoning message."""
    out = []
    for line in d.lines:
        if line.section not in _MATTER_SECTIONS or notes.is_abandoned(line.text):
            continue
        if any(d.vocabulary.unnegated(v.ABANDON, t) for t in (line.own, *line.quotes)):
            continue
        line_terms = line.terms
        dropped = [user for user, named, borrowed in d.abandons
                   if d.about_dropped(line_terms, named, borrowed) and not d.resumed(user, named, borrowed)]
        if not dropped:
            continue
        user = dropped[-1]
        words = user.abandon[0]
        out.append(_finding(
            ABANDONED_UNMARKED, section=line.section, line=line.number, message_ids=[user.message.id],
            subject=words,
            detail=(f"The user dropped this matter (“{_short(words)}”, {user.message.id}), but the line still lists "
                    f"it without marking it abandoned with the user's words.")))
    return out


def check_done_without_proof(d: DriftInput) -> list[Finding]:
    """wrong / done_without_proof — each line under done must name an id
    (``identifiers``) that a successful tool result of the chain returned
    (``DriftInput.proves``: the result reports success — ``ok`` or its
    wording — and returned the id, or echoes it while reporting a change).
    A done line without any id, or whose ids no such result returned, is
    wrong. Proof: the failed results about its ids, else the results that
    mention them."""
    out = []
    for line in d.lines:
        if line.section != notes.DONE:
            continue
        idents = identifiers(line.own)
        if any(d.proves(result, ident) for ident in idents for result in d.tools):
            continue
        mentioning = [t for t in d.tools if any(i in t.text or i in t.arguments for i in idents)]
        failed = [t for t in mentioning if d.failed(t)]
        if not idents:
            detail = "This done item names no id, so no tool result can confirm it was done."
        else:
            detail = (f"No successful tool result returned {', '.join(idents)}; done lists only what a tool "
                      f"confirmed, with the id it returned.")
            if failed:
                detail += f" The call {failed[-1].call_id} ({failed[-1].tool}) failed: “{_short(failed[-1].text)}”."
        out.append(_finding(DONE_WITHOUT_PROOF, section=line.section, line=line.number,
                             message_ids=[t.message_id for t in (failed or mentioning)],
                             subject=", ".join(idents), detail=detail))
    return out


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
        for raw, kind, key in values_.values(d.vocabulary, line.own):
            if d.user_said_value(kind, key):
                continue
            sources = d.value_sources(kind, key)
            if not sources:
                continue
            out.append(_finding(
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
        if line.section != notes.REQUESTS or notes.is_hold(line.text) or notes.is_abandoned(line.text):
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
            line_terms = key_terms(line.own)
            score: dict[int, int] = {}
            for term in line_terms:
                for user in d.questions_by_term.get(term, ()):
                    score[user.order] = score.get(user.order, 0) + (2 if term[0].isascii() else 1)
            best = max(((points, order) for order, points in score.items() if points >= 2), default=None)
            if best:
                ids = [d.users[best[1]].message.id]
        out.append(_finding(
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
    asks = []
    for message in d.assistants:
        for clause in clauses(message.text):
            match = d.vocabulary.find(v.ASSISTANT_ASK, clause)
            if match:
                asks.append((message, key_terms(clause[match.start():])))
    out = []
    for line in d.lines:
        if line.section != notes.TODOS:
            continue
        line_terms = line.terms
        asked = [m.id for m, ask_terms in asks if shared(line_terms, ask_terms) >= 2]
        waiting = d.vocabulary.matches(v.ASSISTANT_ASK, line.own)
        if not asked and not waiting:
            continue
        if any(shared(asking, line_terms) >= 2 for asking in d.asking_terms):
            continue
        out.append(_finding(
            ASSISTANT_ASK_AS_TODO, section=line.section, line=line.number, message_ids=asked, subject=line.own,
            detail=(f"Only the assistant asked for this{' (' + ', '.join(asked[-3:]) + ')' if asked else ''}; "
                    f"the user never asked for it to be done, so it is not a to-do.")))
    return out


def check_lost_constraint(d: DriftInput) -> list[Finding]:
    """lost / lost_constraint — a user condition must stay in the note until
    the user withdraws it. Conditions are the clauses matching
    ``constraint`` (negation, "only", a bound, a deadline, a quantity;
    not a question, not an abandonment) of the material's user messages,
    and of the parent note's requests, to-dos and next step (its own words
    and quotes; abandoned lines excepted). A condition is withdrawn when a
    later user message of the material abandons its matter, restates it
    with the same operator and other numbers (预算改成5000以内), or — for a
    hold — gives the go-ahead again. A note keeps it when any line holds it
    verbatim, or holds its operator word, every number of it and at least
    60% of its key terms ("只要银色或者深空灰" kept as "黑色优先" is lost:
    the "only" is gone). Points at the heading of the section that should
    hold it (the parent's section, else user requests); proof: the message
    that stated it."""
    conditions: list[Condition] = []
    for line in d.parent_lines:
        if line.section in _MATTER_SECTIONS and not notes.is_abandoned(line.text):
            for text in (line.own, *line.quotes):
                conditions += d.conditions_in(text, message_id=None, order=-1, section=line.section)
    for user in d.users:
        if user.message.id in d.material_user_ids:
            conditions += d.conditions_in(user.message.text, message_id=user.message.id, order=user.order,
                                          section=notes.REQUESTS)
    material_users = [u for u in d.users if u.message.id in d.material_user_ids]
    kept: dict[str, Condition] = {}
    for condition in conditions:
        if _withdrawn(d, condition, material_users, conditions):
            continue
        key = edge_strip(normalise(condition.clause))
        previous = kept.get(key)
        if previous is None or (previous.message_id is None and condition.message_id):
            kept[key] = condition
    out = []
    for key, condition in kept.items():
        if d.kept_anywhere(d.lines, condition):
            continue
        ids = [condition.message_id] if condition.message_id else [u.message.id for u in d.users_saying(key)[-1:]]
        said = f" ({ids[0]})" if ids else ""
        kept_before = " although the previous note kept it" if condition.order < 0 else ""
        out.append(_finding(
            LOST_CONSTRAINT, section=condition.section, line=d.headings.get(condition.section), message_ids=ids,
            subject=condition.clause,
            detail=(f"The user's condition “{_short(condition.clause)}”{said} is missing from this note"
                    f"{kept_before}: no line keeps “{condition.operator}” with its values, and the user has not "
                    f"withdrawn it.")))
    return out


def _withdrawn(d: DriftInput, condition: Condition, material_users: list[UserReading],
               conditions: list[Condition]) -> bool:
    later = [u for u in material_users if u.order > condition.order]
    stating = d.user_by_id.get(condition.message_id) if condition.message_id else None
    if stating is None:
        saying = d.users_saying(condition.clause)
        stating = saying[-1] if saying else None
    for user in later:
        if user.abandon:
            for abandoner, named, borrowed in d.abandons:
                if abandoner is user and d.about_dropped(condition.terms, named, borrowed):
                    return True
    if condition.is_hold and later:
        # A hold is withdrawn by a later go-ahead about it, unless a still
        # later hold put it back (the same reading as retracted_consent).
        if stating is not None:
            state, _ = d.final_state(stating, condition.terms | stating.terms)
        else:
            state = "hold"
            for event in later:
                if event.state and shared(event.own_terms, condition.terms) >= 2:
                    state = event.state
        if state == "consent":
            return True
    for other in conditions:
        if (other.order > condition.order and other.operator == condition.operator and other.numbers
                and condition.numbers and other.numbers != condition.numbers
                and shared(other.terms - other.numbers, condition.terms - condition.numbers) >= 1):
            return True
    return False


def check_growth_without_new_matters(d: DriftInput) -> list[Finding]:
    """length / growth_without_new_matters — the note *grew* when its text
    (inside ``<summary>`` when present, surrounding whitespace removed) has
    more characters than its parent's; a first generation never grew. It
    may grow only when its material brings something new, any of: a user
    consent, hold or abandonment the parent does not keep already; a user
    condition the parent does not keep; a user statement or direct request
    (not only a question) whose key terms absent from the parent are worth
    3 or more (a new matter, not "好的，谢谢"); or a tool result that failed
    or returned a new id (a dead end or a done item). Material of questions and look-ups brings
    none, however long. Content is not judged here (seed 001: length and
    content are checked separately). Proof: the material's user messages."""
    if d.parent_text is None:
        return []
    grown = len(d.text) - len(d.parent_text)
    if grown <= GROWTH_TOLERANCE_CHARS or _brings_new(d):
        return []
    material = d.material
    ids = [p.user_id for p in material.pairs]
    return [_finding(
        GROWTH_WITHOUT_NEW_MATTERS, section=None, line=None, message_ids=ids,
        subject=f"{len(d.parent_text)}→{len(d.text)}",
        detail=(f"The note grew from {len(d.parent_text)} to {len(d.text)} characters (+{grown}) although its "
                f"material (pairs {material.from_pair}–{material.to_pair}) brought no new matter, condition or "
                f"hold: the user asked questions or repeated what the previous note already held."))]


def _brings_new(d: DriftInput) -> bool:
    for user in d.users:
        if user.message.id not in d.material_user_ids:
            continue
        for found in (user.consent, user.hold, user.abandon):
            # A consent, hold or abandonment is new unless the parent already
            # keeps it (a hold restated a third time brings nothing).
            if found and not d.kept_anywhere(d.parent_lines, d.as_condition(*found)):
                return True
        for condition in d.conditions_in(user.message.text, message_id=user.message.id, order=user.order,
                                         section=notes.REQUESTS):
            if not d.kept_anywhere(d.parent_lines, condition):
                return True
        novel = frozenset().union(*(key_terms(c) for c in user.statement_clauses)) - d.parent_terms
        if worth(novel) >= NEW_MATTER_WORTH:
            return True
    for result in d.material.tool_results:
        if d.failed(result):
            return True
        if d.succeeded(result) and any(i not in result.arguments for i in identifiers(result.text)):
            return True
    return False


CHECKERS: dict[str, Callable[[DriftInput], list[Finding]]] = {
    QUOTE_NOT_VERBATIM: check_quote_not_verbatim,
    RETRACTED_CONSENT: check_retracted_consent,
    ABANDONED_UNMARKED: check_abandoned_unmarked,
    DONE_WITHOUT_PROOF: check_done_without_proof,
    TOOL_DETAIL_IN_REQUESTS: check_tool_detail_in_requests,
    QUESTION_AS_REQUIREMENT: check_question_as_requirement,
    ASSISTANT_ASK_AS_TODO: check_assistant_ask_as_todo,
    LOST_CONSTRAINT: check_lost_constraint,
    GROWTH_WITHOUT_NEW_MATTERS: check_growth_without_new_matters,
}


def check_note(note: str, *, parent: str | None, material: Material, chain: ChainHistory,
               vocabulary: v.Vocabulary = v.DEFAULT, codes: Iterable[str] | None = None) -> list[Finding]:
    """Every drift finding of one generation's note, sorted by line, section
    and code (a whole-note finding last).

    ``note`` and ``parent`` are note texts (``<summary>`` unwrapped here;
    ``parent`` None for a chain's first generation), ``material`` the
    generation's material with its tool results, ``chain`` what the chain
    settled up to this cut, ``vocabulary`` the scope's. ``codes`` limits
    the run to some checkers. Raises ``MalformedNote`` when the note (or
    its parent) is not a six-section note — the contract refuses those
    before a generation exists.
    """
    d = DriftInput(note=note, parent=parent, material=material, chain=chain, vocabulary=vocabulary)
    wanted = list(CHECKERS) if codes is None else [c for c in CHECKERS if c in set(codes)]
    unknown = set(codes or ()) - set(CHECKERS)
    if unknown:
        raise ValueError(f"unknown drift code(s): {', '.join(sorted(unknown))}")
    findings = [finding for code in wanted for finding in CHECKERS[code](d)]
    return sorted(set(findings), key=Finding.sort_key)
