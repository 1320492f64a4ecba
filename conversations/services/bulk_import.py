"""Importing many documents, one per line of a JSONL file (SPEC §3).

Each line is validated whole and written all-or-nothing: a line is either
imported completely or not at all, and a refused line never affects another.

**Group commit.** Lines are applied as nested transactions (savepoints)
inside a group of up to ``batch`` lines that commits together, because one
durable commit per line costs more than the writing itself. A group's
outcomes are handed to the caller only after the group has committed, so
nothing is ever reported that a crash could still undo. ``batch=1`` commits
every line on its own.

**COPY, then line by line.** On PostgreSQL the lines of a group that create a
conversation not stored yet (and named by no other line of the group) are
written together, one COPY per table (``ingest.conversations_ingest_new``).
If that fails (a concurrent import created one of them first), its savepoint
is rolled back and those lines go the ordinary way, each in its own
savepoint, a conversation created meanwhile then being updated as ingest
always does. Every other line is ingested on its own, in file order.

**Workers.** With ``workers > 1`` (PostgreSQL only) lines are spread over
forked processes by conversation, so every line of one conversation goes to
the same worker, in file order; each worker has its own connection, commits
its own groups and hands back a group's outcomes once it committed (so the
outcomes of different workers interleave).
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import queue
import traceback
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from django.db import DatabaseError, connection, connections, transaction

from ..documents import DocumentInvalid, parse_document_bytes
from .ingest import conversation_ingest
from .ingest_new import check_new_document, conversations_ingest_new, stored_conversation_keys
from .written import IngestResult

logger = logging.getLogger(__name__)

CREATED, UPDATED, UNCHANGED, REFUSED = "created", "updated", "unchanged", "refused"


class ImportRefused(ValueError):
    """The import cannot run as asked (nothing was read or written)."""


class ImportFailed(RuntimeError):
    """A worker process failed; what it had not handed back was not imported.
    ``details`` holds each failure's traceback."""

    def __init__(self, message: str, details: list[str]):
        super().__init__(message)
        self.details = details


@dataclass(frozen=True)
class LineOutcome:
    """What became of one line: plain values, so it crosses processes."""

    number: int
    status: str  # created / updated / unchanged / refused
    scope: str = ""
    external_id: str = ""
    conversation_id: int | None = None
    messages_created: int = 0
    messages_updated: int = 0
    revisions_created: int = 0
    pair_count: int = 0
    segment_count: int = 0
    errors: dict[str, list[str]] = field(default_factory=dict)  # field -> messages, when refused

    @classmethod
    def of(cls, number: int, result: IngestResult) -> LineOutcome:
        conv = result.conversation
        status = CREATED if result.created else (UPDATED if result.changed else UNCHANGED)
        return cls(number, status, conv.scope, conv.external_id, conv.pk, result.messages_created,
                   result.messages_updated, result.revisions_created, result.pair_count, len(result.segments))


@dataclass
class ImportTotals:
    imported: int = 0
    unchanged: int = 0
    refused: int = 0

    def add(self, outcomes: Iterable[LineOutcome]) -> None:
        for outcome in outcomes:
            if outcome.status == REFUSED:
                self.refused += 1
            elif outcome.status == UNCHANGED:
                self.unchanged += 1
            else:
                self.imported += 1


def jsonl_lines(stream) -> Iterator[tuple[int, bytes]]:
    """The non-blank lines of a binary stream with their 1-based numbers."""
    for number, line in enumerate(stream, start=1):
        if line.strip():
            yield number, line.rstrip(b"\r\n")


def options_check(*, batch: int, workers: int) -> None:
    """Refuse a batch or a number of workers that cannot be (``ImportRefused``)."""
    if batch < 1:
        raise ImportRefused("--batch must be at least 1")
    if workers < 1:
        raise ImportRefused("--workers must be at least 1")
    if workers > 1 and connection.vendor != "postgresql":
        # SQLite allows one writer at a time, and an in-memory database
        # would not even be shared with the worker processes.
        raise ImportRefused("--workers above 1 needs PostgreSQL")


def lines_import(*, lines: Iterable[tuple[int, bytes]], actor: str, batch: int = 100, workers: int = 1,
                 on_group: Callable[[list[LineOutcome]], None] = lambda outcomes: None) -> ImportTotals:
    """Import ``lines`` in groups of ``batch``; ``on_group`` receives each
    committed group's outcomes in line order. Raises ``ImportRefused`` for a
    batch or worker count that cannot be, ``ImportFailed`` when a worker
    process failed."""
    options_check(batch=batch, workers=workers)
    totals = ImportTotals()

    def committed(outcomes: list[LineOutcome]) -> None:
        totals.add(outcomes)
        on_group(outcomes)

    if workers == 1:
        group: list[tuple[int, bytes]] = []
        for item in lines:
            group.append(item)
            if len(group) >= batch:
                committed(group_import(group=group, actor=actor))
                group = []
        if group:
            committed(group_import(group=group, actor=actor))
    else:
        _import_in_workers(lines, actor=actor, batch=batch, workers=workers, committed=committed)
    return totals


def group_import(*, group: list[tuple[int, bytes]], actor: str) -> list[LineOutcome]:
    """Write a group of lines, each all-or-nothing, and commit; return the
    outcomes in line order (see the module docstring for the COPY group)."""
    outcomes: list[LineOutcome] = []
    with transaction.atomic():
        parsed: list[tuple[int, object]] = []
        for number, raw in group:
            try:
                parsed.append((number, parse_document_bytes(raw)))
            except DocumentInvalid as exc:
                outcomes.append(LineOutcome(number, REFUSED, errors=exc.errors))
        done: dict[int, IngestResult] = {}
        fresh = _new_conversations(parsed)
        if fresh:
            try:
                results = conversations_ingest_new(documents=[d for _, d in fresh], actor=actor)
            except DatabaseError:
                # Nothing of the group stayed (its savepoint rolled back);
                # each of these lines is ingested on its own below.
                logger.warning("group insert failed; importing its lines one by one", exc_info=True)
                results = []
            done = {number: result for (number, _), result in zip(fresh, results)}
        for number, document in parsed:
            result = done.get(number)
            if result is None:
                try:
                    result = conversation_ingest(document=document, actor=actor)
                except DocumentInvalid as exc:
                    outcomes.append(LineOutcome(number, REFUSED, errors=exc.errors))
                    continue
            outcomes.append(LineOutcome.of(number, result))
    outcomes.sort(key=lambda outcome: outcome.number)
    return outcomes


def _new_conversations(parsed):
    """The (number, document) pairs that can be written as one group:
    PostgreSQL, a conversation named once in the group, not stored, and no
    reference the ordinary ingest would refuse."""
    if connection.vendor != "postgresql" or len(parsed) < 2:
        return []
    seen: dict[tuple[str, str], int] = {}
    for _, document in parsed:
        key = (document.scope, document.id)
        seen[key] = seen.get(key, 0) + 1
    candidates = []
    for number, document in parsed:
        if seen[(document.scope, document.id)] != 1:
            continue
        try:
            check_new_document(document)
        except DocumentInvalid:
            continue  # the ordinary ingest refuses it, with the same report
        candidates.append((number, document))
    if not candidates:
        return []
    stored = stored_conversation_keys([(d.scope, d.id) for _, d in candidates])
    return [(n, d) for n, d in candidates if (d.scope, d.id) not in stored]


# --- worker processes --------------------------------------------------------

def worker_for(line: bytes, workers: int) -> int:
    """The worker that owns a line's conversation (a line that is not a
    document with a scope and an id is refused wherever it goes)."""
    try:
        document = json.loads(line)
        key = f"{document['scope']}\x00{document['id']}".encode("utf-8", "surrogatepass")
    except Exception:  # noqa: BLE001 - refused by the worker with the precise reason
        return 0
    return zlib.crc32(key) % workers


def _import_in_workers(lines, *, actor: str, batch: int, workers: int, committed) -> None:
    context = multiprocessing.get_context("fork")
    connections.close_all()  # a forked child must not share the parent's socket
    inboxes = [context.Queue(maxsize=4) for _ in range(workers)]
    outbox = context.Queue()
    processes = [context.Process(target=_worker, args=(inbox, outbox, actor), daemon=True) for inbox in inboxes]
    for process in processes:
        process.start()
    failures: list[str] = []
    running = workers

    def receive(block: bool) -> None:
        nonlocal running
        while running:
            try:
                kind, payload = outbox.get(timeout=1.0) if block else outbox.get_nowait()
            except queue.Empty:
                if not block:
                    return
                if not any(p.is_alive() for p in processes):
                    failures.append("a worker process ended without finishing its lines")
                    running = 0
                continue
            if kind == "group":
                committed(payload)
            else:
                running -= 1
                if kind == "failed":
                    failures.append(payload)

    def send(worker: int, group) -> None:
        while True:
            try:
                inboxes[worker].put(group, timeout=0.2)
                return
            except queue.Full:
                receive(block=False)
                if not processes[worker].is_alive():
                    raise ImportFailed(f"worker {worker} ended early", failures)

    groups: list[list[tuple[int, bytes]]] = [[] for _ in range(workers)]
    try:
        for number, line in lines:
            worker = worker_for(line, workers)
            groups[worker].append((number, line))
            if len(groups[worker]) >= batch:
                send(worker, groups[worker])
                groups[worker] = []
                receive(block=False)
        for worker, group in enumerate(groups):
            if group:
                send(worker, group)
        for worker in range(workers):
            send(worker, None)
        receive(block=True)
    finally:
        for process in processes:
            process.join(timeout=5)
            if process.is_alive():
                process.terminate()
    if failures:
        raise ImportFailed("a worker failed; lines it had not reported were not imported "
                           "(every reported line is committed)", failures)


def _worker(inbox, outbox, actor: str) -> None:
    """One import process: apply groups as they come, hand back each one's
    outcomes after it committed."""
    try:
        while (group := inbox.get()) is not None:
            outbox.put(("group", group_import(group=group, actor=actor)))
        outbox.put(("done", None))
    except BaseException:  # noqa: BLE001 - the parent reports it and fails the import
        outbox.put(("failed", traceback.format_exc()))
    finally:
        connections.close_all()
