"""The ``loop@1`` prompt version of in-run tool-loop compaction (issue 15;
SPEC §10, seed 002 §7.7–§7.9, §9).

A frozen copy of ``compaction.context.assembly.toolloop.LOOP_PROMPT_V1`` and
``LOOP_USER_TEMPLATE_V1`` as they were when this migration was written:
later edits to the module must not rewrite history (a changed prompt is
``loop@2``; ``compaction.providers.loop`` refuses to send a text that is not
the stored one). Written frozen: a work summary belongs to its run and is
never a job, so no first job would freeze it. Never accepted for
projection (a work summary is not a history summary).
"""

from django.db import migrations
from django.utils import timezone

SYSTEM_TEMPLATE = 'You compact the working memory of an agent that is in the middle of a tool-calling loop.\nYou are given the user\'s current request, the previous work summary (if any) and the older tool rounds\nof this run: the tools called, their arguments and their results (long texts are cut in the middle).\nWrite the new work summary that lets the agent continue the task without those rounds. It is not a\nhistory of the conversation; it is the state the agent needs to go on.\n\nWrite exactly these seven sections, in this order, each as a heading line "## <name>" followed by\nshort "- " lines:\n## Current goal\n## Actions done\n## Findings\n## Key paths, objects and parameters\n## Errors and handling\n## Current state\n## Next step\n\nRules:\n- Fold the previous work summary in: keep what still holds, drop what the newer rounds overturned.\n- Under "Actions done", list every tool call that changed something (booked, sent, updated,\n  cancelled, paid…) with its ids and whether it succeeded, so it is never repeated by mistake.\n- Keep exact ids, paths, names, numbers and dates; never invent one.\n- Under "Errors and handling", say what failed and what was done about it.\n- Start with this sentence, verbatim: "This summary continues a tool-calling loop and carries its state\n  so far. If anything here conflicts with a later raw tool result, the later raw tool result wins."\n- Write in the language of the user\'s request. Plain text only; no tool calls.'

USER_TEMPLATE = 'Current request of the user:\n{goal}\n\nPrevious work summary:\n{previous}\n\nOlder tool rounds to fold in:\n{transcript}'

VERSION = {
    "name": "loop@1",
    "family": "loop",
    "version": 1,
    "description": "In-run tool-loop work summary: the previous work summary plus the older tool rounds, seven sections (seed 002 §7.8).",
    "system_template": SYSTEM_TEMPLATE,
    "user_template": USER_TEMPLATE,
    "includes_user_text": True,
    "accepted_for_projection": False,
    "is_current": True,
}


def create_version(apps, schema_editor):
    PromptVersion = apps.get_model("compaction", "PromptVersion")
    PromptVersion.objects.update_or_create(name=VERSION["name"], defaults={**VERSION, "frozen_at": timezone.now()})


def remove_version(apps, schema_editor):
    PromptVersion = apps.get_model("compaction", "PromptVersion")
    PromptVersion.objects.filter(name=VERSION["name"], jobs__isnull=True).delete()


class Migration(migrations.Migration):
    dependencies = [("compaction", "0018_review_generation")]
    operations = [migrations.RunPython(create_version, remove_version)]
