"""Drift findings in words a support person understands (SPEC §8, §1: the
desk shows each finding "in words", not as a code).

Pure: each kind and code with a short title and one sentence saying what
went wrong in the note and what to check. Used by the desk (chain view,
filters, the review form); the codes themselves stay the stable names.
"""

from __future__ import annotations

from compaction.handoff import note as notes

from .findings import (ABANDONED_UNMARKED, ASSISTANT_ASK_AS_TODO, CODES, DONE_WITHOUT_PROOF, EXTRA,
                       GROWTH_WITHOUT_NEW_MATTERS, LENGTH, LOST, LOST_CONSTRAINT, QUESTION_AS_REQUIREMENT,
                       QUOTE_NOT_VERBATIM, RETRACTED_CONSENT, TOOL_DETAIL_IN_REQUESTS, WRONG)

KIND_WORDS: dict[str, tuple[str, str]] = {
    WRONG: ("Wrong", "the note says something the conversation contradicts"),
    EXTRA: ("Extra", "the note holds something the user never asked for"),
    LOST: ("Lost", "the note dropped something the user still wants"),
    LENGTH: ("Length", "the note grew without anything new to say"),
}

CODE_WORDS: dict[str, tuple[str, str]] = {
    QUOTE_NOT_VERBATIM: (
        "Quote the user never said",
        "A line quotes the user, but no user message holds those words: the quote was invented or reworded."),
    RETRACTED_CONSENT: (
        "Consent that was withdrawn",
        "The note still says the user agreed, but a later message took the go-ahead back or put it on hold."),
    ABANDONED_UNMARKED: (
        "Dropped matter still listed",
        "The user gave this matter up, yet the note lists it without saying it was abandoned."),
    DONE_WITHOUT_PROOF: (
        "Done, but no tool confirmed it",
        "A line under done has no successful tool result for its id: it may not have happened."),
    TOOL_DETAIL_IN_REQUESTS: (
        "Tool detail turned into a user request",
        "A date, number or wording came from a tool or the assistant, but the note files it as the user's own requirement."),
    QUESTION_AS_REQUIREMENT: (
        "Question recorded as a requirement",
        "A user-requests line only records that the user asked something; a question is not a requirement."),
    ASSISTANT_ASK_AS_TODO: (
        "To-do only the assistant asked for",
        "A to-do comes from the assistant's own request, not from anything the user asked to have done."),
    LOST_CONSTRAINT: (
        "User condition lost",
        "The user set a condition (\"only\", a limit, a deadline, a quantity) that was never withdrawn, and the note no longer keeps it."),
    GROWTH_WITHOUT_NEW_MATTERS: (
        "Grew without new matters",
        "The note got longer although its new material brought no new matter, condition or hold."),
}

assert set(CODE_WORDS) == set(CODES) and set(KIND_WORDS) == set(CODES.values())


def kind_title(kind: str) -> str:
    return KIND_WORDS.get(kind, (kind, ""))[0]


def code_title(code: str) -> str:
    return CODE_WORDS.get(code, (code, ""))[0]


def code_explanation(code: str) -> str:
    return CODE_WORDS.get(code, ("", ""))[1]


def code_choices() -> list[tuple[str, str]]:
    """Each code with its title, in SPEC §8's order (for filter menus)."""
    return [(code, f"{CODE_WORDS[code][0]} ({KIND_WORDS[kind][0].lower()})") for code, kind in CODES.items()]


SECTION_WORDS = {
    notes.REQUESTS: "user requests", notes.TODOS: "to-dos", notes.NEXT_STEP: "next step",
    notes.PROGRESS: "current progress", notes.DEAD_ENDS: "dead ends", notes.DONE: "done",
}


def section_title(section: str) -> str:
    return SECTION_WORDS.get(section, section)
