"""Loading the demo through the real ingest path, idempotently (SPEC §3, §8).

Every conversation goes through ``validate_document`` and
``conversation_ingest`` like any integrator's document. A message with a
later version is sent first as written, then as edited, so the second
version makes a ``MessageRevision``. Re-running must change nothing, and
must not undo an edit: once such a message is stored, the base document
leaves it out (ingest keeps messages a document does not mention) and only
the edit, if wanted, is sent again — which is then a no-op.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from django.db import transaction

from conversations.documents import validate_document
from conversations.models import Message
from conversations.services.ingest import conversation_ingest
from conversations.services.written import IngestResult

from . import AFTER_COMPACTION, TAIL, demo_conversations
from .builder import Built

ACTOR = "seed_demo"


@dataclass
class LoadedConversation:
    built: Built
    result: IngestResult  # of the base document; ``result.conversation`` is re-read after the edits
    edits_applied: int  # edits that changed the stored message in this run


def _edit_document(built: Built, message_id: str, content: str) -> dict:
    original = next(m for m in built.document["messages"] if m["id"] == message_id)
    edited = dict(original, content=content)
    return {"scope": built.document["scope"], "id": built.document["id"], "messages": [edited]}


def demo_conversation_load(*, built: Built, edit_keys: frozenset[str]) -> LoadedConversation:
    doc = built.document
    edited_ids = [e.message_id for e in built.edits]
    with transaction.atomic():
        already = set(
            Message.objects.filter(
                conversation__scope=doc["scope"], conversation__external_id=doc["id"], external_id__in=edited_ids
            ).values_list("external_id", flat=True)
        )
        base = copy.deepcopy(doc)
        base["messages"] = [m for m in base["messages"] if m["id"] not in already]
        result = conversation_ingest(document=validate_document(base), actor=ACTOR)
        applied = 0
        for edit in built.edits:
            if edit.key not in edit_keys:
                continue
            edit_result = conversation_ingest(
                document=validate_document(_edit_document(built, edit.message_id, edit.content)), actor=ACTOR
            )
            if edit_result.changed:
                applied += 1
    result.conversation.refresh_from_db()
    return LoadedConversation(built=built, result=result, edits_applied=applied)


def demo_conversations_load(*, edit_after_compaction: bool = False) -> list[LoadedConversation]:
    """Load all demo conversations. Tail edits are always applied; the edit
    inside a first segment only when ``edit_after_compaction``."""
    keys = frozenset({TAIL, AFTER_COMPACTION} if edit_after_compaction else {TAIL})
    return [demo_conversation_load(built=built, edit_keys=keys) for built in demo_conversations()]
