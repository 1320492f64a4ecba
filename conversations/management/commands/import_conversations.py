"""Import conversation documents from a JSONL file, one per line (SPEC §3).

Each line is validated whole and imported in its own transaction; the
command reports, per line, what was imported or why not (line number and
field), and exits non-zero if any line was refused.
"""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError

from conversations.documents import DocumentInvalid, parse_document_bytes
from conversations.services import conversation_ingest


class Command(BaseCommand):
    help = "Import conversation documents from a JSONL file (one JSON document per line)."

    def add_arguments(self, parser):
        parser.add_argument("file", help="path to a .jsonl file, or - for standard input")
        parser.add_argument("--quiet", action="store_true", help="report only refused lines and the total")

    def handle(self, *args, **options):
        path = options["file"]
        try:
            stream = sys.stdin.buffer if path == "-" else open(path, "rb")
        except OSError as exc:
            raise CommandError(f"cannot open {path}: {exc.strerror}") from None
        imported = unchanged = refused = 0
        with stream:
            for number, line in enumerate(stream, start=1):
                if not line.strip():
                    continue
                try:
                    document = parse_document_bytes(line.rstrip(b"\r\n"))
                    result = conversation_ingest(document=document, actor=f"import:{path}")
                except DocumentInvalid as exc:
                    refused += 1
                    for field, messages in exc.errors.items():
                        for message in messages:
                            self.stderr.write(f"line {number}: refused: {field}: {message}")
                    continue
                if result.changed:
                    imported += 1
                else:
                    unchanged += 1
                if not options["quiet"]:
                    conv = result.conversation
                    verb = "created" if result.created else ("updated" if result.changed else "unchanged")
                    self.stdout.write(
                        f"line {number}: {verb} {conv.scope}/{conv.external_id} (id {conv.pk}): "
                        f"{result.messages_created} new messages, {result.messages_updated} changed, "
                        f"{result.revisions_created} revisions, {result.pair_count} pairs, "
                        f"{len(result.segments)} planned segments"
                    )
        self.stdout.write(f"{imported} imported, {unchanged} unchanged, {refused} refused")
        if refused:
            raise CommandError(f"{refused} line(s) refused; nothing from those lines was written")
