"""Import conversation documents from a JSONL file, one per line (SPEC §3).

Thin: parses the arguments, hands the lines to
``conversations.services.bulk_import`` (each line all-or-nothing, groups of
``--batch`` lines committed together, ``--workers`` processes) and prints
what became of each line once its group has committed. Exits non-zero if
any line was refused.
"""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError

from conversations.services.bulk_import import (REFUSED, ImportFailed, ImportRefused, jsonl_lines, lines_import,
                                                options_check)


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

    def handle(self, *args, file, quiet, batch, workers, **options):
        try:
            options_check(batch=batch, workers=workers)
        except ImportRefused as exc:
            raise CommandError(str(exc)) from None
        try:
            stream = sys.stdin.buffer if file == "-" else open(file, "rb")
        except OSError as exc:
            raise CommandError(f"cannot open {file}: {exc.strerror}") from None

        def report(outcomes):
            for outcome in outcomes:
                if outcome.status == REFUSED:
                    for field, messages in outcome.errors.items():
                        for message in messages:
                            self.stderr.write(f"line {outcome.number}: refused: {field}: {message}")
                elif not quiet:
                    self.stdout.write(
                        f"line {outcome.number}: {outcome.status} {outcome.scope}/{outcome.external_id} "
                        f"(id {outcome.conversation_id}): {outcome.messages_created} new messages, "
                        f"{outcome.messages_updated} changed, {outcome.revisions_created} revisions, "
                        f"{outcome.pair_count} pairs, {outcome.segment_count} planned segments")

        try:
            with stream:
                totals = lines_import(lines=jsonl_lines(stream), actor=f"import:{file}", batch=batch,
                                      workers=workers, on_group=report)
        except ImportFailed as exc:
            for detail in exc.details:
                self.stderr.write(detail)
            raise CommandError(str(exc)) from None
        self.stdout.write(f"{totals.imported} imported, {totals.unchanged} unchanged, {totals.refused} refused")
        if totals.refused:
            raise CommandError(f"{totals.refused} line(s) refused; nothing from those lines was written")
