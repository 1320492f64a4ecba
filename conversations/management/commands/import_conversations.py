"""Import conversation documents from a JSONL file, one per line (SPEC §3).

Each line is validated whole and written all-or-nothing: a line is either
imported completely or not at all, and a refused line never affects another.
Lines are applied as nested transactions (savepoints) inside a group of up to
``--batch`` lines that commits together, because one durable commit per line
costs more than the writing itself; what the command prints about a line is
printed only after its group has committed, so it never reports an import
that a crash could still undo. ``--batch 1`` commits every line on its own.
The command exits non-zero if any line was refused.
"""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError
import json
import logging
import multiprocessing
import queue
import traceback
import zlib

from django.db import DatabaseError, connection, connections, transaction

from conversations.documents import DocumentInvalid, parse_document_bytes
from conversations.services import (
    check_new_document,
    conversation_ingest,
    conversations_ingest_new,
    stored_conversation_keys,
)

logger = logging.getLogger(__name__)


class Command(BaseCommand):
    help = "Import conversation documents from a JSONL file (one JSON document per line)."

    def add_arguments(self, parser):
        parser.add_argument("file", help="path to a .jsonl file, or - for standard input")
        parser.add_argument("--quiet", action="store_true", help="report only refused lines and the total")
        parser.add_argument("--batch", type=int, default=100,
                            help="lines per commit (each line stays all-or-nothing); default 100")
        parser.add_argument("--workers", type=int, default=1,
                            help="processes importing in parallel, each with its own connection; lines of "
                                 "one conversation always go to the same one, in file order; default 1")

    def handle(self, *args, **options):
        path = options["file"]
        if options["batch"] < 1:
            raise CommandError("--batch must be at least 1")
        if options["workers"] < 1:
            raise CommandError("--workers must be at least 1")
        if options["workers"] > 1 and connection.vendor != "postgresql":
            # SQLite allows one writer at a time, and an in-memory database
            # would not even be shared with the worker processes.
            raise CommandError("--workers above 1 needs PostgreSQL")
        try:
            stream = sys.stdin.buffer if path == "-" else open(path, "rb")
        except OSError as exc:
            raise CommandError(f"cannot open {path}: {exc.strerror}") from None
        self.counts = {"imported": 0, "unchanged": 0, "refused": 0}
        with stream:
            if options["workers"] == 1:
                group: list[tuple[int, bytes]] = []
                for number, line in _lines(stream):
                    group.append((number, line))
                    if len(group) >= options["batch"]:
                        self._write(self._apply(group, path, options["quiet"]))
                        group = []
                if group:
                    self._write(self._apply(group, path, options["quiet"]))
            else:
                self._import_in_workers(stream, path, options)
        imported, unchanged, refused = self.counts["imported"], self.counts["unchanged"], self.counts["refused"]
        self.stdout.write(f"{imported} imported, {unchanged} unchanged, {refused} refused")
        if refused:
            raise CommandError(f"{refused} line(s) refused; nothing from those lines was written")

    def _write(self, reports):
        for kind, text in reports:
            (self.stderr if kind == "err" else self.stdout).write(text)

    def _import_in_workers(self, stream, path, options):
        """Spread lines over worker processes by conversation, so every line
        of one conversation goes to the same worker, in file order. Each
        worker has its own connection and commits its own groups; it sends a
        group's reports only after that group committed, and they are printed
        as they arrive (so lines of different workers interleave)."""
        workers, batch, quiet = options["workers"], options["batch"], options["quiet"]
        context = multiprocessing.get_context("fork")
        connections.close_all()  # a forked child must not share the parent's socket
        inboxes = [context.Queue(maxsize=4) for _ in range(workers)]
        outbox = context.Queue()
        processes = [
            context.Process(target=_worker, args=(self.__class__, inbox, outbox, path, quiet), daemon=True)
            for inbox in inboxes
        ]
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
                    reports, counts = payload
                    self._write(reports)
                    for name, value in counts.items():
                        self.counts[name] += value
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
                        raise CommandError(f"worker {worker} ended early; see the errors above")

        groups: list[list[tuple[int, bytes]]] = [[] for _ in range(workers)]
        try:
            for number, line in _lines(stream):
                worker = _worker_for(line, workers)
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
            for failure in failures:
                self.stderr.write(failure)
            raise CommandError("a worker failed; lines it had not reported were not imported "
                               "(every reported line is committed)")

    def _apply(self, group, path, quiet):
        """Write a group of lines, each all-or-nothing, and commit; return
        the reports (kind, text) in line order.

        Lines that create a conversation not stored yet (and named by no
        other line of the group) are written together, one COPY per table, on
        PostgreSQL; if that fails, its savepoint is rolled back and
        those lines go the ordinary way (a conversation created meanwhile by
        someone else is then updated, as ingest always does). Every other line is ingested on its
        own, in file order, in its own savepoint.
        """
        reports: list[tuple[int, str, str]] = []
        actor = f"import:{path}"
        with transaction.atomic():
            parsed: list[tuple[int, object]] = []
            for number, raw in group:
                try:
                    parsed.append((number, parse_document_bytes(raw)))
                except DocumentInvalid as exc:
                    self._refused(reports, number, exc)
            done: dict[int, object] = {}
            fresh = self._new_conversations(parsed)
            if fresh:
                try:
                    results = conversations_ingest_new(documents=[d for _, d in fresh], actor=actor)
                except DatabaseError:
                    # Nothing of the group stayed (its savepoint rolled
                    # back); each of these lines is ingested on its own below.
                    logger.warning("group insert failed; importing its lines one by one", exc_info=True)
                    results = []
                done = {number: result for (number, _), result in zip(fresh, results)}
            for number, document in parsed:
                result = done.get(number)
                if result is None:
                    try:
                        result = conversation_ingest(document=document, actor=actor)
                    except DocumentInvalid as exc:
                        self._refused(reports, number, exc)
                        continue
                self._report(reports, number, result, quiet)
        reports.sort(key=lambda report: report[0])
        return [(kind, text) for _, kind, text in reports]

    @staticmethod
    def _new_conversations(parsed):
        """The (number, document) pairs that can be written as one group:
        PostgreSQL, a conversation named once in the group, not stored, and
        no reference the ordinary ingest would refuse."""
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

    def _refused(self, reports, number, exc):
        self.counts["refused"] += 1
        for field, messages in exc.errors.items():
            for message in messages:
                reports.append((number, "err", f"line {number}: refused: {field}: {message}"))

    def _report(self, reports, number, result, quiet):
        self.counts["imported" if result.changed else "unchanged"] += 1
        if not quiet:
            conv = result.conversation
            verb = "created" if result.created else ("updated" if result.changed else "unchanged")
            reports.append((number, "out", (
                f"line {number}: {verb} {conv.scope}/{conv.external_id} (id {conv.pk}): "
                f"{result.messages_created} new messages, {result.messages_updated} changed, "
                f"{result.revisions_created} revisions, {result.pair_count} pairs, "
                f"{len(result.segments)} planned segments"
            )))


def _lines(stream):
    for number, line in enumerate(stream, start=1):
        if line.strip():
            yield number, line.rstrip(b"\r\n")


def _worker_for(line: bytes, workers: int) -> int:
    """The worker that owns a line's conversation (a line that is not a
    document with a scope and an id is refused wherever it goes)."""
    try:
        document = json.loads(line)
        key = f"{document['scope']}\x00{document['id']}".encode("utf-8", "surrogatepass")
    except Exception:  # noqa: BLE001 - refused by the worker with the precise reason
        return 0
    return zlib.crc32(key) % workers


def _worker(command_class, inbox, outbox, path, quiet):
    """One import process: apply groups as they come, report each after it committed."""
    try:
        command = command_class()
        command.counts = {"imported": 0, "unchanged": 0, "refused": 0}
        while (group := inbox.get()) is not None:
            before = dict(command.counts)
            reports = command._apply(group, path, quiet)
            outbox.put(("group", (reports, {k: v - before[k] for k, v in command.counts.items()})))
        outbox.put(("done", None))
    except BaseException:  # noqa: BLE001 - the parent reports it and exits non-zero
        outbox.put(("failed", traceback.format_exc()))
    finally:
        connections.close_all()
