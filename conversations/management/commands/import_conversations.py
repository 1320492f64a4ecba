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
from django.db import transaction

from conversations.documents import DocumentInvalid, parse_document_bytes
from conversations.services import conversation_ingest


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
        """Write a group of lines, each in its own savepoint, then report."""
        reports: list[tuple[str, str]] = []
        with transaction.atomic():
            for number, raw in group:
                try:
                    document = parse_document_bytes(raw)
                    result = conversation_ingest(document=document, actor=f"import:{path}")
                except DocumentInvalid as exc:
                    self.counts["refused"] += 1
                    for field, messages in exc.errors.items():
                        for message in messages:
                            reports.append(("err", f"line {number}: refused: {field}: {message}"))
                    continue
                self.counts["imported" if result.changed else "unchanged"] += 1
                if not quiet:
                    conv = result.conversation
                    verb = "created" if result.created else ("updated" if result.changed else "unchanged")
                    reports.append(("out", (
                        f"line {number}: {verb} {conv.scope}/{conv.external_id} (id {conv.pk}): "
                        f"{result.messages_created} new messages, {result.messages_updated} changed, "
                        f"{result.revisions_created} revisions, {result.pair_count} pairs, "
                        f"{len(result.segments)} planned segments"
                    )))
        for kind, text in reports:
            (self.stderr if kind == "err" else self.stdout).write(text)
