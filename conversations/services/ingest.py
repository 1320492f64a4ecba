"""Writes for conversations: ingest and the pair/segment rebuild (SPEC §3–§5).

``conversation_ingest`` is an idempotent upsert keyed by external ids, done
in one transaction: the document is validated whole first (``documents``),
run references are checked against what is stored, then runs and messages
are written in bulk, every replaced content is kept as a ``MessageRevision``,
and pairs and segments are rebuilt so each planned segment's *current*
digest changes in the same transaction as the message that changed it.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import datetime

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from .. import hooks
from ..documents import Document, DocumentInvalid
from ..models import Conversation, Message, MessageRevision, Pair, Run, Segment
from ..pairing import MessageView, PairView, RunView, project_pairs

logger = logging.getLogger(__name__)


@dataclass
class IngestResult:
    conversation: Conversation
    created: bool
    changed: bool
    runs_created: int = 0
    runs_updated: int = 0
    messages_created: int = 0
    messages_updated: int = 0
    revisions_created: int = 0
    pair_count: int = 0
    segments: list[Segment] = field(default_factory=list)
    segment_changes: list[hooks.SegmentChange] = field(default_factory=list)
    pairs_changed_from: int | None = None  # see hooks.ConversationWritten


def _message_fields_from_doc(doc) -> dict:
    return {
        "role": doc.role,
        "content": doc.content,
        "status": doc.status,
        "tool_calls": doc.tool_calls_json(),
        "tool_call_id": doc.tool_call_id,
        "created_at": doc.created_at,
    }


def _check_against_stored(document: Document, stored_runs: dict, stored_messages: dict) -> None:
    """Run references may point at runs in this document or already stored;
    a stored message keeps its role."""
    known_run_ids = set(stored_runs) | {r.id for r in document.runs}
    errors: dict[str, list[str]] = {}
    for i, m in enumerate(document.messages):
        if m.run_id is not None and m.run_id not in known_run_ids:
            errors.setdefault(f"messages[{i}].run_id", []).append(
                f"run {m.run_id!r} is not in conversation {document.id!r}"
            )
        stored = stored_messages.get(m.id)
        if stored is not None and stored.role != m.role:
            errors.setdefault(f"messages[{i}].role", []).append(
                f"message {m.id!r} is stored with role {stored.role!r}; a message's role cannot change"
            )
    if errors:
        raise DocumentInvalid(errors)


def conversation_ingest(*, document: Document, actor: str = "") -> IngestResult:
    """Upsert one conversation document. Raises ``DocumentInvalid`` and writes
    nothing when the document cannot be applied to what is stored."""
    for _ in range(2):
        try:
            return _ingest_once(document=document, actor=actor)
        except IntegrityError:
            # Another ingest created the same conversation between our read
            # and our insert; go again, now as an update of what it wrote.
            if not Conversation.objects.filter(scope=document.scope, external_id=document.id).exists():
                raise
    return _ingest_once(document=document, actor=actor)


def _ingest_once(*, document: Document, actor: str) -> IngestResult:
    with transaction.atomic():
        conversation = (
            Conversation.objects.select_for_update()
            .filter(scope=document.scope, external_id=document.id)
            .first()
        )
        created = conversation is None
        if created and connection.vendor == "postgresql":
            # The bulk path for new conversations, with a group of one. If a
            # concurrent ingest creates the conversation first, its unique key
            # raises IntegrityError and conversation_ingest goes again.
            check_new_document(document)
            (result,) = conversations_ingest_new(documents=[document], actor=actor)
            return result
        if created:
            conversation = Conversation.objects.create(
                scope=document.scope,
                external_id=document.id,
                title=document.title or "",
                metadata=document.metadata or {},
            )
            stored_runs: dict[str, Run] = {}
            stored_messages: dict[str, Message] = {}
        else:
            stored_runs = {r.external_id: r for r in Run.objects.filter(conversation=conversation)}
            stored_messages = {m.external_id: m for m in Message.objects.filter(conversation=conversation)}

        result = IngestResult(conversation=conversation, created=created, changed=created)

        _check_against_stored(document, stored_runs, stored_messages)

        # Conversation fields.
        conv_updates = []
        if document.title is not None and document.title != conversation.title:
            conversation.title = document.title
            conv_updates.append("title")
        if document.metadata is not None and document.metadata != conversation.metadata and not (
            # The database may store a number in another form than it came
            # (jsonb keeps 1e23 as 100000000000000000000000, read back as an
            # int unequal to the float): let it judge before calling it a change.
            Conversation.objects.filter(pk=conversation.pk, metadata=document.metadata).exists()
        ):
            conversation.metadata = document.metadata
            conv_updates.append("metadata")

        # Runs.
        new_runs, changed_runs = [], []
        for r in document.runs:
            stored = stored_runs.get(r.id)
            if stored is None:
                new_runs.append(Run(conversation=conversation, external_id=r.id, status=r.status, created_at=r.created_at))
            elif stored.status != r.status or (r.created_at is not None and stored.created_at != r.created_at):
                stored.status = r.status
                if r.created_at is not None:
                    stored.created_at = r.created_at
                changed_runs.append(stored)
        if new_runs:
            Run.objects.bulk_create(new_runs)
            for run in new_runs:
                stored_runs[run.external_id] = run
        if changed_runs:
            Run.objects.bulk_update(changed_runs, ["status", "created_at"])
        result.runs_created, result.runs_updated = len(new_runs), len(changed_runs)

        # Messages.
        now = timezone.now()
        next_sequence = max((m.sequence for m in stored_messages.values()), default=-1) + 1
        new_messages, changed_messages, revisions = [], [], []
        for m in document.messages:
            run = stored_runs[m.run_id] if m.run_id is not None else None
            fields = _message_fields_from_doc(m)
            stored = stored_messages.get(m.id)
            if stored is None:
                new_messages.append(
                    Message(conversation=conversation, run=run, external_id=m.id, sequence=next_sequence, **fields)
                )
                next_sequence += 1
                continue
            content_changed = (
                stored.content != m.content or stored.status != m.status or stored.tool_calls != fields["tool_calls"]
            )
            other_changed = (
                stored.run_id != (run.pk if run else None)
                or stored.tool_call_id != m.tool_call_id
                or stored.created_at != m.created_at
            )
            if not (content_changed or other_changed):
                continue
            if content_changed:
                stored.revision_count += 1
                revisions.append(
                    MessageRevision(
                        message=stored,
                        number=stored.revision_count,
                        content=stored.content,
                        status=stored.status,
                        tool_calls=stored.tool_calls,
                        replaced_at=now,
                        replaced_by=actor,
                    )
                )
            stored.run = run
            stored.updated_at = now
            for name, value in fields.items():
                setattr(stored, name, value)
            changed_messages.append(stored)
        if new_messages:
            Message.objects.bulk_create(new_messages, batch_size=2000)
            for message in new_messages:
                stored_messages[message.external_id] = message
        if changed_messages:
            Message.objects.bulk_update(
                changed_messages,
                ["run", "content", "status", "tool_calls", "tool_call_id", "created_at", "revision_count", "updated_at"],
                batch_size=1000,
            )
        if revisions:
            MessageRevision.objects.bulk_create(revisions, batch_size=1000)
        result.messages_created = len(new_messages)
        result.messages_updated = len(changed_messages)
        result.revisions_created = len(revisions)

        structure_changed = bool(new_runs or changed_runs or new_messages or changed_messages)
        result.changed = created or structure_changed or bool(conv_updates)
        if structure_changed or created:
            last_activity = max((m.created_at for m in stored_messages.values()), default=None)
            conversation.last_activity_at = last_activity
            conversation.message_count = len(stored_messages)
            conv_updates += ["last_activity_at", "message_count"]
            rewritten = {r.message.pk for r in revisions}
            pairs, segments, changes, pairs_changed_from = _rebuild_pairs_and_segments(
                conversation, stored_runs.values(), stored_messages.values(), fresh=created, rewritten=rewritten
            )
            result.pairs_changed_from = pairs_changed_from
            conversation.pair_count = len(pairs)
            conversation.segment_count = len(segments)
            conv_updates += ["pair_count", "segment_count"]
            result.segment_changes = changes
            result.segments = segments
        else:
            result.segments = list(Segment.objects.filter(conversation=conversation))
        result.pair_count = conversation.pair_count
        if conv_updates:
            conversation.save(update_fields=sorted(set(conv_updates)) + ["updated_at"])
        _after_write([result])
        return result


@dataclass(frozen=True)
class SegmentRow:
    range: hooks.PlannedRange
    message_ids: list[str]
    digest: str
    user_bytes: int
    assistant_bytes: int


def segment_rows(pairs: list[PairView]) -> list[SegmentRow]:
    """Every range planned over ``pairs`` (the listener's plan, with its
    digests) with its message ids and sizes."""
    rows = []
    for rng in hooks.listener().plan(pairs):
        members = pairs[rng.from_pair : rng.to_pair + 1]
        rows.append(
            SegmentRow(
                range=rng,
                message_ids=[x for p in members for x in (p.user.external_id, p.assistant.external_id)],
                digest=rng.digest,
                user_bytes=sum(len(p.user.content.encode()) for p in members),
                assistant_bytes=sum(len(p.assistant.content.encode()) for p in members),
            )
        )
    return rows


def _rebuild_pairs_and_segments(conversation, runs, messages, *, fresh: bool, rewritten: set[int] = frozenset()):
    """Pairs and segments projected anew; also the lowest index of an earlier
    pair that is not what it was (``hooks.ConversationWritten``): the first
    difference of the stored pairs, or a pair one of whose messages'
    content (``rewritten``: message keys) changed."""
    run_views = [RunView(key=r.pk, external_id=r.external_id, status=r.status) for r in runs]
    message_views = [
        MessageView(
            key=m.pk,
            external_id=m.external_id,
            run_key=m.run_id,
            role=m.role,
            content=m.content,
            status=m.status,
            has_tool_calls=bool(m.tool_calls),
            created_at=m.created_at,
            sequence=m.sequence,
        )
        for m in messages
    ]
    pairs = project_pairs(run_views, message_views)

    # Pairs: keep the unchanged prefix, rewrite from the first difference on.
    wanted = [
        (p.index, p.run_key, p.user.key, p.assistant.key, len(p.user.content.encode()), len(p.assistant.content.encode()))
        for p in pairs
    ]
    if fresh:
        existing = []
    else:
        existing = list(
            Pair.objects.filter(conversation=conversation)
            .order_by("index")
            .values_list("index", "run_id", "user_message_id", "assistant_message_id", "user_bytes", "assistant_bytes")
        )
    first_diff = 0
    while first_diff < min(len(existing), len(wanted)) and existing[first_diff] == wanted[first_diff]:
        first_diff += 1
    changed_from = first_diff if first_diff < len(existing) else None
    if rewritten:
        edited = [p.index for p in pairs[: len(existing)] if p.user.key in rewritten or p.assistant.key in rewritten]
        if edited and (changed_from is None or edited[0] < changed_from):
            changed_from = edited[0]
    if first_diff < len(existing):
        Pair.objects.filter(conversation=conversation, index__gte=first_diff).delete()
    if first_diff < len(wanted):
        Pair.objects.bulk_create(
            [
                Pair(
                    conversation=conversation,
                    index=i,
                    run_id=run_id,
                    user_message_id=u,
                    assistant_message_id=a,
                    user_bytes=ub,
                    assistant_bytes=ab,
                )
                for (i, run_id, u, a, ub, ab) in wanted[first_diff:]
            ],
            batch_size=2000,
        )

    # Segments: every planned range with its current digest.
    stored_segments = {} if fresh else {s.from_pair: s for s in Segment.objects.filter(conversation=conversation)}
    changes: list[hooks.SegmentChange] = []
    to_create, to_update = [], []
    result_segments = []
    for row in segment_rows(pairs):
        rng, ids, digest, user_bytes, assistant_bytes = (
            row.range, row.message_ids, row.digest, row.user_bytes, row.assistant_bytes
        )
        stored = stored_segments.pop(rng.from_pair, None)
        if stored is None:
            segment = Segment(
                conversation=conversation,
                number=rng.number,
                from_pair=rng.from_pair,
                to_pair=rng.to_pair,
                message_ids=ids,
                digest=digest,
                user_bytes=user_bytes,
                assistant_bytes=assistant_bytes,
            )
            to_create.append(segment)
            changes.append(hooks.SegmentChange(rng.from_pair, rng.to_pair, None, digest))
        else:
            segment = stored
            if stored.digest != digest or stored.message_ids != ids:
                changes.append(hooks.SegmentChange(rng.from_pair, rng.to_pair, stored.digest, digest))
                stored.digest, stored.message_ids = digest, ids
                stored.user_bytes, stored.assistant_bytes = user_bytes, assistant_bytes
                stored.updated_at = timezone.now()
                to_update.append(stored)
        result_segments.append(segment)
    if to_create:
        Segment.objects.bulk_create(to_create)
    if to_update:
        Segment.objects.bulk_update(to_update, ["digest", "message_ids", "user_bytes", "assistant_bytes", "updated_at"])
    if stored_segments:
        for gone in stored_segments.values():
            changes.append(hooks.SegmentChange(gone.from_pair, gone.to_pair, gone.digest, None))
        Segment.objects.filter(pk__in=[s.pk for s in stored_segments.values()]).delete()
    return pairs, result_segments, changes, changed_from


def _after_write(results: list[IngestResult]) -> None:
    """Tell the listener (``hooks``), inside this transaction, which
    conversations changed and which of their planned ranges moved."""
    changed = [hooks.ConversationWritten(result.conversation, result.created, result.segment_changes,
                                         result.pairs_changed_from)
               for result in results if result.changed]
    if changed:
        hooks.listener().written(changed)


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
    one by one instead. ``_after_write`` runs for the group inside it.
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
        _after_write(results)
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
    _check_against_stored(document, {}, {})


def stored_conversation_keys(keys: list[tuple[str, str]]) -> set[tuple[str, str]]:
    """Which of these (scope, external id) conversations are stored: one query."""
    wanted = set(keys)
    if not wanted:
        return set()
    found = Conversation.objects.filter(external_id__in={external_id for _, external_id in wanted})
    return {key for key in found.values_list("scope", "external_id") if key in wanted}
