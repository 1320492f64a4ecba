"""The *wrong* drift checks: what a note states about a matter that is no
longer so (SPEC §8; seed 001 §2 "一处错怎样传到下一代", §4 "错").

Pure, one checker per code: a quote the user never wrote
(``quote_not_verbatim``), a go-ahead the user withdrew still stated
(``retracted_consent``), a dropped matter still listed unmarked
(``abandoned_unmarked``), a done item no tool result proves
(``done_without_proof``). Each checker's docstring gives its rule.
"""

from __future__ import annotations

from compaction.handoff import note as notes
from compaction.handoff import vocabulary as v
from compaction.handoff.reading import edge_strip, identifiers, normalise, shared

from .findings import (
    ABANDONED_UNMARKED, DONE_WITHOUT_PROOF, QUOTE_NOT_VERBATIM, RETRACTED_CONSENT, Finding, finding, short,
)
from .input import DriftInput
from .reading import ELLIPSIS

# Where a line can state a go-ahead, and where it lists a matter to act on.
CONSENT_SECTIONS = (notes.REQUESTS, notes.TODOS, notes.NEXT_STEP, notes.PROGRESS)
MATTER_SECTIONS = (notes.REQUESTS, notes.TODOS, notes.NEXT_STEP)


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
            elsewhere = d.not_the_users(words)
            if elsewhere:
                ids = elsewhere[:3]
                detail = (f"The note quotes the user as saying “{short(fragment)}”, but these are the assistant's "
                          f"or a tool's words ({', '.join(ids)}), not the user's.")
            else:
                closest = d.closest_user(words)
                ids = [closest.message.id] if closest else []
                detail = (f"The note quotes the user as saying “{short(fragment)}”, but no user message contains "
                          f"these words.")
                if closest:
                    detail += f" The closest ({closest.message.id}) says “{short(closest.message.text)}”."
            out.append(finding(QUOTE_NOT_VERBATIM, section=line.section, line=line.number, message_ids=ids,
                                 detail=detail, subject=fragment))
    return out


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
        if line.section not in CONSENT_SECTIONS or line.marked_hold or line.marked_abandoned:
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
        out.append(finding(
            RETRACTED_CONSENT, section=line.section, line=line.number,
            message_ids=[anchor.message.id, last.message.id], subject=consent_words,
            detail=(f"This line still gives the user's go-ahead (“{short(consent_words)}”, {anchor.message.id}), "
                    f"but the user withdrew or put it on hold later (“{short(hold_words)}”, {last.message.id}) "
                    f"and has not given it again.")))
    return out


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
        if line.section not in MATTER_SECTIONS or line.marked_abandoned:
            continue
        if any(d.vocabulary.unnegated(v.ABANDON, t) for t in (line.own, *line.quotes)):
            continue
        dropped = d.latest_dropped(line.terms)
        if dropped is None:
            continue
        user = dropped[0]
        words = user.abandon[0]
        out.append(finding(
            ABANDONED_UNMARKED, section=line.section, line=line.number, message_ids=[user.message.id],
            subject=words,
            detail=(f"The user dropped this matter (“{short(words)}”, {user.message.id}), but the line still lists "
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
                detail += f" The call {failed[-1].call_id} ({failed[-1].tool}) failed: “{short(failed[-1].text)}”."
        out.append(finding(DONE_WITHOUT_PROOF, section=line.section, line=line.number,
                             message_ids=[t.message_id for t in (failed or mentioning)],
                             subject=", ".join(idents), detail=detail))
    return out
