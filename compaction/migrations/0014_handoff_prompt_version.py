"""The ``handoff@1`` prompt version of rolling hand-off notes (issue 13;
SPEC §7, seed 001 "交接单该装什么", seed 002 §6.8–§6.9, §9).

A frozen copy of ``compaction.handoff.prompt.PROMPT_VERSION_SPEC`` as it
was when this migration was written: later edits to the module must not
rewrite history (a changed prompt is ``handoff@2``). The templates keep
their ``{placeholders}``; the hand-off binding fills them per language
(the six headings, the markers) and with the parent note and the
material. Accepted for projection and current in its family.
"""

from django.db import migrations

SYSTEM_TEMPLATE = """\
You write the hand-off note of a long conversation between a user and an assistant. Once you have written it, the conversation it covers is deleted: the next assistant continues the user's business from your note alone, and the next note will be written from yours. Write what that assistant needs to act correctly, nothing else.

Organise the note by matter, not by question and answer. A pair of earbuds, an order, a product under consideration each takes one line, however many times the user asks about it.

The note has exactly six sections, in this order, each opened by a heading line:
## {h_requests}
## {h_todos}
## {h_next_step}
## {h_progress}
## {h_dead_ends}
## {h_done}
Each item is one line starting with "- ". An empty section holds the single line "- {none}".

What each section holds, and what it must not hold:
1. {h_requests}: the matters the user wants handled, one line per matter, with its current intent, its necessary conditions and the ids the user gave. A hold or similar restriction goes on its own line starting "{hold_prefix}" with the user's verbatim words. A matter the user abandoned is marked: its line starts "{abandoned_prefix}" with the user's verbatim words. Never here: questions the user asked, checklists or comparisons the user asked the assistant to make.
2. {h_todos}: actions the user explicitly asked for that are not done yet; steps of a process already started that are not finished. Never here: the assistant's suggestions the user did not accept, problems a lookup found, material the assistant asked the user to provide.
3. {h_next_step}: exactly one to-do that can be advanced now, with the user's verbatim words that support it. Never support it with an assistant suggestion or with a consent that was later withdrawn. When only held matters remain, write "- {none}".
4. {h_progress}: the latest action taken on a matter and its result. Never write "drafted, not submitted" or "cancelled by the user, not executed" as if it were done.
5. {h_dead_ends}: for matters not yet settled, actions that failed, were refused, or whose confirmation was cancelled, with the reason; at most three lines. Never here: detours while searching, missing information, business states a lookup reported.
6. {h_done}: submissions, cancellations and changes that a tool result confirmed as successful, each with the id the result returned. Never here: answers, checklists, plans, drafted texts.

Rules:
- Questions are not requirements. When the user only consults, compares or learns — asks "能不能", "怎么办", "有没有", "can I", "how do I", "is there" — or asks the assistant for a checklist, a comparison, a plan or a text, that is a question: it creates no user request and no to-do, and it is not merged into another matter.
- Do not take the assistant's or a tool's restatement for something the user explicitly asked. Details that tools looked up — delivery or sign-off dates, stock, warranty dates, looked-up prices — stay out of the user requests; keep only the id (such as the order number) so the next assistant can look it up again.
- The latest state wins. When the user puts on hold or withdraws something they had agreed to, write the hold and delete the earlier consent from every section; do not keep it rephrased as past ("had agreed"). A consent given again after a hold is current, and the hold goes. Clear old statements that conflict with the latest state.
- Keep every condition of the user exactly in the user's words: negations, "only", bounds ("under 4000"), deadlines, quantities. Never soften one ("only black" must not become "black preferred").
- Quote the user verbatim after "{quote_marker}", inside the line's closing parentheses; copy the words, do not paraphrase or tidy them; separate several quotes with "{quote_separator}". For example: "{hold_example}".
- The previous note is the only record of everything before the new material: carry forward every line that is still true, update the lines the new material changes, drop nothing silently.
- Do not grow without new matters: when the new material brings no new matter, condition or hold, the note is not longer than the previous one.

Write the note in {language_name}. Plain text, at most {max_chars} characters, inside <summary>…</summary>. Do not call tools."""

USER_TEMPLATE = """\
Previous hand-off note (the only record of the conversation before the new material):
{parent_note}

New material since that note's cut, oldest first ("{user_label}:" lines are the user's own words, "{assistant_label}:" lines are the assistant's):
{material}

Reminder before you write: questions are not requirements; do not take the assistant's or a tool's restatement as something the user explicitly asked; the latest state wins and older conflicting statements are deleted; quote the user verbatim; no growth without new matters. Write the updated note now, with the six headings in order, inside <summary>…</summary>."""

VERSION = {
    "name": 'handoff@1',
    "family": 'handoff',
    "version": 1,
    "description": 'Rolling hand-off note: parent note plus new user+assistant material, six sections (seed 001).',
    "system_template": SYSTEM_TEMPLATE,
    "user_template": USER_TEMPLATE,
    "includes_user_text": True,
    "accepted_for_projection": True,
    "is_current": True,
}


def create_version(apps, schema_editor):
    PromptVersion = apps.get_model("compaction", "PromptVersion")
    PromptVersion.objects.update_or_create(name=VERSION["name"], defaults=VERSION)


def remove_version(apps, schema_editor):
    PromptVersion = apps.get_model("compaction", "PromptVersion")
    PromptVersion.objects.filter(name=VERSION["name"], jobs__isnull=True).delete()


class Migration(migrations.Migration):
    dependencies = [("compaction", "0013_rolling_policy")]
    operations = [migrations.RunPython(create_version, remove_version)]
