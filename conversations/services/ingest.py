"""Ingest of one document and the pair/segment rebuild (SPEC §3–§5).

``conversation_ingest`` is an idempotent upsert keyed by external ids, done
in one transaction: the document is validated whole first (``documents``),
run references are checked against what is stored, then runs and messages
are written in bulk, every replaced content is kept as a ``MessageRevision``,
and pairs and segments are rebuilt so each planned segment's *current*
digest changes in the same transaction as the message that changed it. A
conversation not stored yet goes the COPY way on PostgreSQL
(``ingest_new``), as a group of one.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import NamedTuple

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from .. import hooks
from ..documents import Document
from ..models import Conversation, Message, MessageRevision, Pair, Run, Segment
from ..pairing import MessageView, RunView, project_pairs
from .ingest_new import check_new_document, conversations_ingest_new
from .written import IngestResult, after_write, check_against_stored, segment_rows

logger = logging.getLogger(__name__)


class StoredRun(NamedTuple):
    """What an ingest reads of a stored run: plain values, not a model
    instance (a long conversation has thousands, and an ingest that adds a
    few pairs should not build them all)."""

    pk: int
    external_id: str
    status: str
    created_at: datetime | None


class StoredMessage(NamedTuple):
    """What an ingest reads of a stored message: what it compares with the
    document and what pairing needs (``_rebuild_pairs_and_segments``). A
    changed message is written from a model instance made for the update."""

    pk: int
    external_id: str
    run_id: int | None
    role: str
    content: str
    status: str
    tool_calls: object
    tool_call_id: str
    created_at: datetime
    sequence: int
    revision_count: int


def _message_fields_from_doc(doc) -> dict:
    return {
        "role": doc.role,
        "content": doc.content,
        "status": doc.status,
        "tool_calls": doc.tool_calls_json(),
        "tool_call_id": doc.tool_call_id,
        "created_at": doc.created_at,
    }


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
            stored_runs: dict[str, StoredRun] = {}
            stored_messages: dict[str, StoredMessage] = {}
        else:
            stored_runs = {r.external_id: r for r in map(StoredRun._make, Run.objects.filter(
                conversation=conversation).values_list(*StoredRun._fields))}
            stored_messages = {m.external_id: m for m in map(StoredMessage._make, Message.objects.filter(
                conversation=conversation).values_list(*StoredMessage._fields))}

        result = IngestResult(conversation=conversation, created=created, changed=created)

        check_against_stored(document, stored_runs, stored_messages)

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
                created_at = r.created_at if r.created_at is not None else stored.created_at
                changed_runs.append(Run(pk=stored.pk, status=r.status, created_at=created_at))
                stored_runs[r.id] = stored._replace(status=r.status, created_at=created_at)
        if new_runs:
            Run.objects.bulk_create(new_runs)
            for run in new_runs:
                stored_runs[run.external_id] = StoredRun(run.pk, run.external_id, run.status, run.created_at)
        if changed_runs:
            Run.objects.bulk_update(changed_runs, ["status", "created_at"])
        result.runs_created, result.runs_updated = len(new_runs), len(changed_runs)

        # Messages.
        now = timezone.now()
        next_sequence = max((m.sequence for m in stored_messages.values()), default=-1) + 1
        new_messages, changed_messages, revisions = [], [], []
        for m in document.messages:
            run_id = stored_runs[m.run_id].pk if m.run_id is not None else None
            fields = _message_fields_from_doc(m)
            stored = stored_messages.get(m.id)
            if stored is None:
                new_messages.append(
                    Message(conversation=conversation, run_id=run_id, external_id=m.id, sequence=next_sequence, **fields)
                )
                next_sequence += 1
                continue
            content_changed = (
                stored.content != m.content or stored.status != m.status or stored.tool_calls != fields["tool_calls"]
            )
            other_changed = (
                stored.run_id != run_id
                or stored.tool_call_id != m.tool_call_id
                or stored.created_at != m.created_at
            )
            if not (content_changed or other_changed):
                continue
            revision_count = stored.revision_count
            if content_changed:
                revision_count += 1
                revisions.append(
                    MessageRevision(
                        message_id=stored.pk,
                        number=revision_count,
                        content=stored.content,
                        status=stored.status,
                        tool_calls=stored.tool_calls,
                        replaced_at=now,
                        replaced_by=actor,
                    )
                )
            changed_messages.append(Message(pk=stored.pk, run_id=run_id, revision_count=revision_count,
                                            updated_at=now, **fields))
            stored_messages[m.id] = stored._replace(run_id=run_id, revision_count=revision_count, **fields)
        if new_messages:
            Message.objects.bulk_create(new_messages, batch_size=2000)
            for message in new_messages:
                stored_messages[message.external_id] = StoredMessage(*(getattr(message, f) for f in StoredMessage._fields))
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
            rewritten = {r.message_id for r in revisions}
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
        after_write([result])
        return result


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
