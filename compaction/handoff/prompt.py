"""The frozen ``handoff@1`` prompt for rolling hand-off notes (SPEC §7, seed 001
"交接单该装什么", seed 002 §6.8–§6.9, §9).

Generation *k* is written from generation *k−1*'s note plus the new settled
material since its cut; once the originals are gone the note is the only
record, so the prompt carries every rule of seed 001's table (what each of
the six sections holds and must not hold) and the rules around it:
questions are not requirements; the assistant's or a tool's restatement is
not something the user asked for; the latest state wins and older
conflicting statements are deleted, not rephrased as past; no growth without
new matters. As in seed 002 §6.9 the note is asked for inside
``<summary>…</summary>`` (``note.extract_summary`` takes it from there).

One template per role, filled per language: the headings, the hold /
abandoned / quote markers and the empty-section word come from
``compaction.handoff.note``, so the prompt and the parser can never disagree.
**Frozen**: once a job has used ``handoff@1`` its text must not change; a
changed prompt is ``handoff@2`` (SPEC §5 "Prompt versions"). The migration
that stores it keeps its own copy of ``PROMPT_VERSION_SPEC``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..contract import MAX_SUMMARY_CHARS
from . import note
from .material import ROLE_LABEL, Material, render_material

PROMPT_VERSION = "handoff@1"
PROMPT_FAMILY = "handoff"

LANGUAGE_NAME = {note.ZH: "Chinese (简体中文)", note.EN: "English"}
NO_PARENT = {note.ZH: "（无：这是第一代交接单）", note.EN: "(none: this is the first generation)"}

SYSTEM_TEMPLATE = """\
You write the hand-off note of a long conversation between a user and an assistant. Once you have written it, \
the conversation it covers is deleted: the next assistant continues the user's business from your note alone, \
and the next note will be written from yours. Write what that assistant needs to act correctly, nothing else.

Organise the note by matter, not by question and answer. A pair of earbuds, an order, a product under \
consideration each takes one line, however many times the user asks about it.

The note has exactly six sections, in this order, each opened by a heading line:
## {h_requests}
## {h_todos}
## {h_next_step}
## {h_progress}
## {h_dead_ends}
## {h_done}
Each item is one line starting with "- ". An empty section holds the single line "- {none}".

What each section holds, and what it must not hold:
1. {h_requests}: the matters the user wants handled, one line per matter, with its current intent, its necessary \
conditions and the ids the user gave. A hold or similar restriction goes on its own line starting \
"{hold_prefix}" with the user's verbatim words. A matter the user abandoned is marked: its line starts \
"{abandoned_prefix}" with the user's verbatim words. Never here: questions the user asked, checklists or \
comparisons the user asked the assistant to make.
2. {h_todos}: actions the user explicitly asked for that are not done yet; steps of a process already started \
that are not finished. Never here: the assistant's suggestions the user did not accept, problems a lookup \
found, material the assistant asked the user to provide.
3. {h_next_step}: exactly one to-do that can be advanced now, with the user's verbatim words that support it. \
Never support it with an assistant suggestion or with a consent that was later withdrawn. When only held \
matters remain, write "- {none}".
4. {h_progress}: the latest action taken on a matter and its result. Never write "drafted, not submitted" or \
"cancelled by the user, not executed" as if it were done.
5. {h_dead_ends}: for matters not yet settled, actions that failed, were refused, or whose confirmation was \
cancelled, with the reason; at most three lines. Never here: detours while searching, missing information, \
business states a lookup reported.
6. {h_done}: submissions, cancellations and changes that a tool result confirmed as successful, each with the \
id the result returned. Never here: answers, checklists, plans, drafted texts.

Rules:
- Questions are not requirements. When the user only consults, compares or learns — asks "能不能", "怎么办", \
"有没有", "can I", "how do I", "is there" — or asks the assistant for a checklist, a comparison, a plan or a \
text, that is a question: it creates no user request and no to-do, and it is not merged into another matter.
- Do not take the assistant's or a tool's restatement for something the user explicitly asked. Details that \
tools looked up — delivery or sign-off dates, stock, warranty dates, looked-up prices — stay out of the user \
requests; keep only the id (such as the order number) so the next assistant can look it up again.
- The latest state wins. When the user puts on hold or withdraws something they had agreed to, write the hold \
and delete the earlier consent from every section; do not keep it rephrased as past ("had agreed"). A consent \
given again after a hold is current, and the hold goes. Clear old statements that conflict with the latest state.
- Keep every condition of the user exactly in the user's words: negations, "only", bounds ("under 4000"), \
deadlines, quantities. Never soften one ("only black" must not become "black preferred").
- Quote the user verbatim after "{quote_marker}", inside the line's closing parentheses; copy the words, do not \
paraphrase or tidy them; separate several quotes with "{quote_separator}". For example: \
"{hold_example}".
- The previous note is the only record of everything before the new material: carry forward every line that is \
still true, update the lines the new material changes, drop nothing silently.
- Do not grow without new matters: when the new material brings no new matter, condition or hold, the note is \
not longer than the previous one.

Write the note in {language_name}. Plain text, at most {max_chars} characters, inside <summary>…</summary>. \
Do not call tools."""

USER_TEMPLATE = """\
Previous hand-off note (the only record of the conversation before the new material):
{parent_note}

New material since that note's cut, oldest first ("{user_label}:" lines are the user's own words, \
"{assistant_label}:" lines are the assistant's):
{material}

Reminder before you write: questions are not requirements; do not take the assistant's or a tool's \
restatement as something the user explicitly asked; the latest state wins and older conflicting statements \
are deleted; quote the user verbatim; no growth without new matters. Write the updated note now, with the six \
headings in order, inside <summary>…</summary>."""


@dataclass(frozen=True)
class RenderedPrompt:
    system: str
    user: str
    prompt_version: str = PROMPT_VERSION


def _language(language: str) -> str:
    if language not in note.HEADINGS:
        raise ValueError(f"unknown note language {language!r}; expected {note.ZH!r} or {note.EN!r}")
    return language


def example_hold_line(language: str) -> str:
    """A hold line in exactly the format ``note`` reads back."""
    gap = "" if language == note.ZH else " "
    return (f"- {note.HOLD_PREFIX[language]}{gap}<the matter>{gap}"
            + note.quote_suffix(["<the user's words>"], language=language))


def render_system(language: str) -> str:
    language = _language(language)
    headings = note.HEADINGS[language]
    return SYSTEM_TEMPLATE.format(
        **{f"h_{key}": headings[key] for key in note.SECTIONS},
        none=note.NONE_LINE[language], hold_prefix=note.HOLD_PREFIX[language],
        abandoned_prefix=note.ABANDONED_PREFIX[language], quote_marker=note.QUOTE_MARKER[language],
        quote_separator="；" if language == note.ZH else " ; ",
        hold_example=example_hold_line(language),
        language_name=LANGUAGE_NAME[language], max_chars=f"{MAX_SUMMARY_CHARS:,}")


def render_prompt(*, parent_note: str | None, material_text: str, language: str) -> RenderedPrompt:
    """The two messages of one hand-off request: the parent note (or a plain
    statement that there is none) and the rendered material."""
    language = _language(language)
    user_label, assistant_label = ROLE_LABEL[language]
    parent = parent_note.strip() if parent_note and parent_note.strip() else NO_PARENT[language]
    user = USER_TEMPLATE.format(parent_note=parent, material=material_text, user_label=user_label,
                                assistant_label=assistant_label)
    return RenderedPrompt(system=render_system(language), user=user)


def render_for_material(*, parent_note: str | None, material: Material, language: str) -> RenderedPrompt:
    """``render_prompt`` over ``material`` rendered as SPEC §7 says (one line
    per message, over-long messages cut in the middle)."""
    return render_prompt(parent_note=parent_note, material_text=render_material(material, language=language),
                         language=language)


# What the phase-2 migration stores as the ``handoff@1`` PromptVersion row
# (the migration keeps a frozen copy of it, like 0004 does for segments).
PROMPT_VERSION_SPEC = {
    "name": PROMPT_VERSION,
    "family": PROMPT_FAMILY,
    "version": 1,
    "description": "Rolling hand-off note: parent note plus new user+assistant material, six sections (seed 001).",
    "system_template": SYSTEM_TEMPLATE,
    "user_template": USER_TEMPLATE,
    "includes_user_text": True,
}
