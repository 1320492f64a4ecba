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
import logging

from django.db import DatabaseError, connection, transaction

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

    def handle(self, *args, **options):
        path = options["file"]
        try:
            stream = sys.stdin.buffer if path == "-" else open(path, "rb")
        except OSError as exc:
            raise CommandError(f"cannot open {path}: {exc.strerror}") from None
        if options["batch"] < 1:
            raise CommandError("--batch must be at least 1")
        self.counts = {"imported": 0, "unchanged": 0, "refused": 0}
        group: list[tuple[int, bytes]] = []
        with stream:
            for number, line in enumerate(stream, start=1):
                if not line.strip():
                    continue
                group.append((number, line.rstrip(b"\r\n")))
                if len(group) >= options["batch"]:
                    self._apply(group, path, options["quiet"])
                    group = []
            if group:
                self._apply(group, path, options["quiet"])
        imported, unchanged, refused = self.counts["imported"], self.counts["unchanged"], self.counts["refused"]
        self.stdout.write(f"{imported} imported, {unchanged} unchanged, {refused} refused")
        if refused:
            raise CommandError(f"{refused} line(s) refused; nothing from those lines was written")

    def _apply(self, group, path, quiet):
        """Write a group of lines, each all-or-nothing, then report.

        Lines that create a conversation not stored yet (and named by no
        other line of the group) are written together by one statement on
        PostgreSQL; if that statement fails, its savepoint is rolled back and
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
                    # Nothing of the statement stayed (its savepoint rolled
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
        for _, kind, text in reports:
            (self.stderr if kind == "err" else self.stdout).write(text)

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
