"""Builders shared by the projection tests: summaries and jobs written
directly, the way the engine leaves them, without running the engine."""

from __future__ import annotations

from compaction.models import CompactionJob, PromptVersion, SummaryGeneration
from conversations.documents import validate_document
from conversations.models import Segment
from conversations.services.ingest import conversation_ingest
from tests.factories import conversation_document

MODEL = "extractive-v2"


def ingest(doc):
    return conversation_ingest(document=validate_document(doc), actor="tests").conversation


def ingest_pairs(n, **kwargs):
    return ingest(conversation_document(n, **kwargs))


def ingest_texts(users, answers, *, external_id):
    """A conversation whose pair ``i`` is ``users[i]`` answered by ``answers[i]``."""
    doc = conversation_document(len(users), external_id=external_id)
    for i in range(len(users)):
        doc["messages"][2 * i]["content"] = users[i]
        doc["messages"][2 * i + 1]["content"] = answers[i]
    return ingest(doc)


def job_for(conv, from_pair, *, state="pending", version=3, digest=None, attempts=0):
    seg = Segment.objects.get(conversation=conv, from_pair=from_pair)
    return CompactionJob.objects.create(
        scope=conv.scope, conversation=conv, from_pair=from_pair, to_pair=from_pair + 9,
        message_ids=seg.message_ids, source_digest=digest or seg.digest, model_id=MODEL,
        prompt_version=PromptVersion.objects.get(name=f"conversation-compaction@{version}"),
        state=state, attempts_used=attempts,
    )


def summary_for(conv, from_pair, *, version=3, text=None, digest=None, to_pair=None, message_ids=None,
                text_bytes=None):
    """A succeeded job and its generation for a range (planned or not)."""
    to_pair = from_pair + 9 if to_pair is None else to_pair
    seg = Segment.objects.filter(conversation=conv, from_pair=from_pair).first()
    digest = digest or (seg.digest if seg else "f" * 64)
    ids = message_ids or (seg.message_ids if seg else [f"x-{i}" for i in range(20)])
    text = text if text is not None else f"Summary of pairs {from_pair}-{to_pair} under @{version}: fees were quoted in EUR."
    pv = PromptVersion.objects.get(name=f"conversation-compaction@{version}")
    job = CompactionJob.objects.create(
        scope=conv.scope, conversation=conv, from_pair=from_pair, to_pair=to_pair, message_ids=ids,
        source_digest=digest, model_id=MODEL, prompt_version=pv, state="succeeded", attempts_used=1,
    )
    number = SummaryGeneration.objects.filter(conversation=conv).count() + 1
    return SummaryGeneration.objects.create(
        job=job, conversation=conv, number=number, text=text,
        text_bytes=len(text.encode("utf-8")) if text_bytes is None else text_bytes,
        scope=conv.scope, from_pair=from_pair, to_pair=to_pair, message_ids=ids, source_digest=digest,
        model_id=MODEL, prompt_version=pv,
    )


# A strict Chat Completions request "messages" array: only the roles we send,
# string content, no other keys.
CHAT_MESSAGES_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "role": {"enum": ["system", "user", "assistant"]},
            "content": {"type": "string", "minLength": 1},
        },
        "required": ["role", "content"],
        "additionalProperties": False,
    },
}


def validate_chat_messages(messages):
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(CHAT_MESSAGES_SCHEMA)
    jsonschema.Draft202012Validator(CHAT_MESSAGES_SCHEMA).validate(messages)
    roles = [m["role"] for m in messages]
    # At most one system message, first; then strict user/assistant turns.
    body = roles[1:] if roles[:1] == ["system"] else roles
    if "system" in body:
        raise jsonschema.ValidationError("a system message may only come first")
    if body != ["user", "assistant"] * (len(body) // 2):
        raise jsonschema.ValidationError(f"turns must alternate user/assistant: {body}")


def block_bytes(body):
    """The bytes a projection's blocks hold (SPEC §6's count: raw pairs'
    texts; a summary block's user originals and its summary), computed
    from the response itself."""
    total = 0
    for b in body["blocks"]:
        if b["kind"] == "raw":
            total += len(b["user"]["text"].encode()) + len(b["assistant"]["text"].encode())
        else:
            total += sum(len(m["text"].encode()) for m in b["user_messages"]) + len(b["summary"].encode())
    return total
