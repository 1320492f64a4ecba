"""Ingest of conversations not stored yet, many at once (SPEC §3–§5): one
COPY per table for a whole group, with ids reserved from the tables' own
sequences first. PostgreSQL only; ``bulk_import`` groups the documents and
falls back to ``ingest.conversation_ingest`` one by one when a group fails.
"""

from __future__ import annotations

import json
from datetime import datetime

from django.db import connection, transaction
from django.utils import timezone

from .. import hooks
from ..documents import Document
from ..models import Conversation, Segment
from ..pairing import MessageView, PairView, RunView, project_pairs
from .written import IngestResult, SegmentRow, after_write, check_against_stored, segment_rows


# Ids are drawn from the tables' own sequences first, so every row carries
# its keys and references before it is sent.
_RESERVE_IDS = """
SELECT array(SELECT nextval(pg_get_serial_sequence('conversations_conversation', 'id'))
             FROM generate_series(1, %(conversations)s)),
       array(SELECT nextval(pg_get_serial_sequence('conversations_run', 'id')) FROM generate_series(1, %(runs)s)),
       array(SELECT nextval(pg_get_serial_sequence('conversations_message', 'id'))
             FROM generate_series(1, %(messages)s)),
       array(SELECT nextval(pg_get_serial_sequence('conversations_segment', 'id'))
             FROM generate_series(1, %(segments)s))
"""

# What a group of new conversations writes, table by table in this order
# (each references only tables before it), with COPY: the cheapest way into
# PostgreSQL, with no SQL to parse and no parameters to unpack per row.
_COPY_COLUMNS = {
    "conversations_conversation": (
        "id", "scope", "external_id", "title", "metadata", "pair_count", "segment_count", "message_count",
        "created_at", "updated_at", "last_activity_at"),
    "conversations_run": ("id", "conversation_id", "external_id", "status", "created_at"),
    "conversations_message": (
        "id", "conversation_id", "run_id", "external_id", "role", "content", "status", "tool_calls",
        "tool_call_id", "created_at", "sequence", "revision_count", "updated_at"),
    "conversations_pair": (
        "conversation_id", "index", "run_id", "user_message_id", "assistant_message_id", "user_bytes",
        "assistant_bytes"),
    "conversations_segment": (
        "id", "conversation_id", "number", "from_pair", "to_pair", "message_ids", "digest", "user_bytes",
        "assistant_bytes", "updated_at"),
}


def conversations_ingest_new(*, documents: list[Document], actor: str = "") -> list[IngestResult]:
    """Write many conversations that are not stored yet: one COPY per table.

    For bulk import (PostgreSQL only): a group of documents whose
    conversations are all new costs six statements in all, however many
    documents it holds. Each document must already be validated, name a
    different conversation, and pass ``check_new_document``. All-or-nothing
    for the whole group, in a savepoint: if any conversation exists after
    all (a concurrent ingest won) or anything else fails, nothing stays and
    the database error propagates, so the caller can ingest the documents
    one by one instead. ``after_write`` runs for the group inside it.
    """
    if connection.vendor != "postgresql":
        raise NotImplementedError("conversations_ingest_new needs PostgreSQL")
    if not documents:
        return []
    projected = [_project_new(document) for document in documents]
    now = timezone.now()
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(_RESERVE_IDS, {
                "conversations": len(documents),
                "runs": sum(len(document.runs) for document in documents),
                "messages": sum(len(document.messages) for document in documents),
                "segments": sum(len(rows) for _, rows in projected),
            })
            conversation_ids, run_ids, message_ids, segment_ids = cursor.fetchone()
        ids = {"run": iter(run_ids), "message": iter(message_ids), "segment": iter(segment_ids)}
        tables: dict[str, list[tuple]] = {table: [] for table in _COPY_COLUMNS}
        results = [
            _new_conversation_rows(tables, conversation_id, document, pairs, segments, ids, now)
            for conversation_id, document, (pairs, segments) in zip(conversation_ids, documents, projected)
        ]
        # The raw cursor's errors become Django's (IntegrityError when a
        # concurrent ingest created one of the conversations first).
        with connection.cursor() as cursor, connection.wrap_database_errors:
            for table, table_rows in tables.items():
                if table_rows:
                    columns = ", ".join(f'"{column}"' for column in _COPY_COLUMNS[table])
                    with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                        for row in table_rows:
                            copy.write_row(row)
        del tables
        after_write(results)
    return results


def _new_conversation_rows(tables: dict[str, list[tuple]], conversation_id: int, document: Document, pairs: list[PairView],
                           segment_plan: list[SegmentRow], ids: dict, now: datetime) -> IngestResult:
    """Append one new conversation's rows to ``tables`` (tuples in
    ``_COPY_COLUMNS`` order); return its ingest result, with the
    conversation and segments as they will be stored."""
    dumps = json.dumps
    run_pk = {}
    run_rows = tables["conversations_run"]
    for r in document.runs:
        pk = run_pk[r.id] = next(ids["run"])
        run_rows.append((pk, conversation_id, r.id, r.status, r.created_at))
    message_pk = {}
    message_rows = tables["conversations_message"]
    for sequence, m in enumerate(document.messages):
        pk = message_pk[m.id] = next(ids["message"])
        calls = m.tool_calls_json()
        message_rows.append((
            pk, conversation_id, run_pk[m.run_id] if m.run_id is not None else None, m.id, m.role, m.content,
            m.status, None if calls is None else dumps(calls, ensure_ascii=False), m.tool_call_id, m.created_at,
            sequence, 0, now,
        ))
    tables["conversations_pair"].extend(
        (conversation_id, p.index, run_pk[p.run_key], message_pk[p.user.key], message_pk[p.assistant.key],
         len(p.user.content.encode()), len(p.assistant.content.encode()))
        for p in pairs
    )
    last_activity = max((m.created_at for m in document.messages), default=None)
    title, metadata = document.title or "", document.metadata or {}
    tables["conversations_conversation"].append((
        conversation_id, document.scope, document.id, title, dumps(metadata, ensure_ascii=False), len(pairs),
        len(segment_plan), len(document.messages), now, now, last_activity,
    ))
    conversation = Conversation(
        pk=conversation_id, scope=document.scope, external_id=document.id, title=title, metadata=metadata,
        pair_count=len(pairs), segment_count=len(segment_plan), message_count=len(document.messages),
        created_at=now, updated_at=now, last_activity_at=last_activity,
    )
    conversation._state.adding = False
    segments = []
    for row in segment_plan:
        rng = row.range
        segment = Segment(
            pk=next(ids["segment"]), conversation=conversation, number=rng.number, from_pair=rng.from_pair,
            to_pair=rng.to_pair, message_ids=row.message_ids, digest=row.digest, user_bytes=row.user_bytes,
            assistant_bytes=row.assistant_bytes, updated_at=now,
        )
        segment._state.adding = False
        segments.append(segment)
        tables["conversations_segment"].append((
            segment.pk, conversation_id, rng.number, rng.from_pair, rng.to_pair, dumps(row.message_ids),
            row.digest, row.user_bytes, row.assistant_bytes, now,
        ))
    return IngestResult(
        conversation=conversation, created=True, changed=True, runs_created=len(document.runs),
        messages_created=len(document.messages), pair_count=len(pairs), segments=segments,
        segment_changes=[hooks.SegmentChange(r.range.from_pair, r.range.to_pair, None, r.digest) for r in segment_plan],
    )


def _project_new(document: Document) -> tuple[list[PairView], list[SegmentRow]]:
    """Pairs and planned segments of a conversation nothing of which is stored
    (message and run keys are their external ids)."""
    run_views = [RunView(key=r.id, external_id=r.id, status=r.status) for r in document.runs]
    message_views = [
        MessageView(
            key=m.id, external_id=m.id, run_key=m.run_id, role=m.role, content=m.content, status=m.status,
            has_tool_calls=bool(m.tool_calls), created_at=m.created_at, sequence=i,
        )
        for i, m in enumerate(document.messages)
    ]
    pairs = project_pairs(run_views, message_views)
    return pairs, segment_rows(pairs)


def check_new_document(document: Document) -> None:
    """Raise ``DocumentInvalid`` as ingest would for a conversation not stored yet."""
    check_against_stored(document, {}, {})


def stored_conversation_keys(keys: list[tuple[str, str]]) -> set[tuple[str, str]]:
    """Which of these (scope, external id) conversations are stored: one query."""
    wanted = set(keys)
    if not wanted:
        return set()
    found = Conversation.objects.filter(external_id__in={external_id for _, external_id in wanted})
    return {key for key in found.values_list("scope", "external_id") if key in wanted}
