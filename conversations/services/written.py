"""What both ingest paths share (SPEC §3–§5): the result of an ingest, the
check of a document against what is stored, the planned segment rows of a
conversation's pairs, and telling the listener (``hooks``) what was written.

``ingest`` (one document, any database) and ``ingest_new`` (conversations
not stored yet, by COPY) both use them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import hooks
from ..documents import Document, DocumentInvalid
from ..models import Conversation, Segment
from ..pairing import PairView


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


def check_against_stored(document: Document, stored_runs: dict, stored_messages: dict) -> None:
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


def after_write(results: list[IngestResult]) -> None:
    """Tell the listener (``hooks``), inside this transaction, which
    conversations changed and which of their planned ranges moved."""
    changed = [hooks.ConversationWritten(result.conversation, result.created, result.segment_changes,
                                         result.pairs_changed_from)
               for result in results if result.changed]
    if changed:
        hooks.listener().written(changed)
