"""Create the three prompt versions of SPEC §5."""

from django.db import migrations

# Frozen copy: later edits to compaction/prompts.py must not rewrite history.
VERSIONS = [
    {
        "name": "conversation-compaction@1",
        "family": "conversation-compaction",
        "version": 1,
        "description": "Mixed user+assistant input. Kept for the record; never accepted for projection.",
        "system_template": (
            "You summarise a span of a conversation between a user and an assistant. "
            "Write a concise summary of what was asked and answered."
        ),
        "user_template": "Conversation:\n{answers}\n\nSummary:",
        "includes_user_text": True,
        "accepted_for_projection": False,
        "is_current": False,
    },
    {
        "name": "conversation-compaction@2",
        "family": "conversation-compaction",
        "version": 2,
        "description": "Assistant-only input. Accepted for projection.",
        "system_template": (
            "You compress earlier assistant answers so a later run can continue the work. "
            "You see only the assistant's answers, never the user's words. Do not describe "
            "what the user wanted; state what the assistant said. Plain text only; do not call tools."
        ),
        "user_template": "Assistant answers, oldest first:\n{answers}\n\nWrite the assistant-history summary.",
        "includes_user_text": False,
        "accepted_for_projection": True,
        "is_current": False,
    },
    {
        "name": "conversation-compaction@3",
        "family": "conversation-compaction",
        "version": 3,
        "description": "Current: assistant-only, cites message ids, keeps facts verbatim. Accepted and preferred.",
        "system_template": (
            "You compress ten earlier assistant answers of one conversation into an "
            "assistant-history summary for a later run. Rules:\n"
            "1. You see only assistant answers, each labelled [id]. Never state what the user "
            "asked, wanted or agreed to: the user's original messages are given to the later run separately.\n"
            "2. Keep every number, date, amount, name, identifier, decision and refusal exactly as written; "
            "keep time qualifiers (\"as of last week\" must not become \"current\").\n"
            "3. Keep the answers' order; cite the [id] each point comes from.\n"
            "4. Write in the language of the answers. Plain text only, at most 1,500 characters. Do not call tools."
        ),
        "user_template": "Assistant answers, oldest first:\n{answers}\n\nWrite the assistant-history summary now.",
        "includes_user_text": False,
        "accepted_for_projection": True,
        "is_current": True,
    },
]


def create_versions(apps, schema_editor):
    PromptVersion = apps.get_model("compaction", "PromptVersion")
    for spec in VERSIONS:
        PromptVersion.objects.update_or_create(name=spec["name"], defaults=spec)


def remove_versions(apps, schema_editor):
    PromptVersion = apps.get_model("compaction", "PromptVersion")
    PromptVersion.objects.filter(name__in=[v["name"] for v in VERSIONS], jobs__isnull=True).delete()


class Migration(migrations.Migration):
    dependencies = [("compaction", "0003_generation_immutable_trigger")]
    operations = [migrations.RunPython(create_versions, remove_versions)]
