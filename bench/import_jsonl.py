"""Benchmark: import 100,000 messages in 2,000 conversations into PostgreSQL.

    .venv/bin/python bench/import_jsonl.py [--conversations 2000] [--messages-per 50] [--batch 100 1] [--workers 1]

With 50 messages a conversation has about 21 pairs, too few to plan a
segment; `--conversations 1000 --messages-per 100` (about 43 pairs, two
segments each) also measures segment rows and the hand-off to the engine.

Generates a JSONL file (user/assistant pairs, a tool call every fifth run),
imports it with ``manage.py import_conversations`` (each document validated
whole and written all-or-nothing; commits grouped by ``--batch``) into the
database ``compaction_bench_import``, and prints messages per second and the
process's resident memory as the import goes (it should stay flat; with
``--workers`` that is the reading process, each worker holds at most a few
groups). Target:
at least 20,000 messages/s.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import peak_rss_mib, rss_mib, use_database  # noqa: E402

T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)


def document(c: int, messages_per: int) -> dict:
    runs, messages = [], []
    t = T0 + timedelta(hours=c)
    i = 0
    r = 0
    while len(messages) < messages_per:
        run_id = f"r{r}"
        runs.append({"id": run_id, "status": "completed", "created_at": t.isoformat()})
        messages.append({"id": f"m{i}", "run_id": run_id, "role": "user", "status": "completed",
                         "content": f"Conversation {c}, question {r}: what was the balance of account AC-{c:05d} on 2026-10-{r % 28 + 1:02d}?",
                         "created_at": (t + timedelta(seconds=i)).isoformat()})
        i += 1
        if r % 5 == 4 and len(messages) + 3 <= messages_per:
            messages.append({"id": f"m{i}", "run_id": run_id, "role": "assistant", "status": "completed", "content": "",
                             "tool_calls": [{"id": f"call{r}", "name": "lookup_balance", "arguments": "{\"account\": 1}"}],
                             "created_at": (t + timedelta(seconds=i)).isoformat()})
            i += 1
            messages.append({"id": f"m{i}", "run_id": run_id, "role": "tool", "tool_call_id": f"call{r}", "status": "completed",
                             "content": "{\"balance\": \"1204.50 EUR\"}", "created_at": (t + timedelta(seconds=i)).isoformat()})
            i += 1
        messages.append({"id": f"m{i}", "run_id": run_id, "role": "assistant", "status": "completed",
                         "content": f"As of 2026-10-{r % 28 + 1:02d} the balance of AC-{c:05d} was {1000 + r * 7.5:.2f} EUR; no transfer is pending.",
                         "created_at": (t + timedelta(seconds=i)).isoformat()})
        i += 1
        r += 1
    return {"scope": "bench", "id": f"bench-{c}", "title": f"Bench conversation {c}", "runs": runs, "messages": messages[:messages_per]}


def workers_rss_mib() -> list[float]:
    """Resident memory of each child process (the import's workers)."""
    found = []
    for task in Path("/proc/self/task").iterdir():
        for pid in (task / "children").read_text().split():
            try:
                pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
            except (OSError, IndexError, ValueError):
                continue
            found.append(pages * os.sysconf("SC_PAGE_SIZE") / 2**20)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=2000)
    parser.add_argument("--messages-per", type=int, default=50)
    parser.add_argument("--batch", type=int, nargs="+", default=[100, 1],
                        help="import_conversations --batch values to measure (default: 100 and 1)")
    parser.add_argument("--workers", type=int, default=1, help="import_conversations --workers (default 1)")
    args = parser.parse_args()

    use_database("compaction_bench_import")
    from django.db import connection


    with tempfile.NamedTemporaryFile("wb", suffix=".jsonl", delete=False) as f:
        for c in range(args.conversations):
            f.write(json.dumps(document(c, args.messages_per), ensure_ascii=False).encode() + b"\n")
        path = f.name
    total_messages = args.conversations * args.messages_per
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")
    print(f"generated {path}: {args.conversations} conversations, {total_messages} messages, "
          f"{Path(path).stat().st_size / 2**20:.1f} MiB")

    import io
    import threading

    from django.core.management import call_command

    for batch in args.batch:
        with connection.cursor() as cur:
            cur.execute("TRUNCATE conversations_conversation, compaction_compactionjob, compaction_attempt, "
                        "compaction_summarygeneration, compaction_review, compaction_auditevent CASCADE")
        samples: list[float] = []
        worker_samples: list[float] = []
        done = threading.Event()

        def sample():
            while not done.wait(0.5):
                samples.append(rss_mib())
                worker_samples.append(max(workers_rss_mib(), default=0.0))

        sampler = threading.Thread(target=sample, daemon=True)
        rss_start = rss_mib()
        sampler.start()
        out = io.StringIO()
        start = time.perf_counter()
        call_command("import_conversations", path, quiet=True, batch=batch, workers=args.workers, stdout=out)
        elapsed = time.perf_counter() - start
        done.set()
        sampler.join()
        print(f"--batch {batch} --workers {args.workers}: {out.getvalue().strip()}")
        print(f"--batch {batch}: imported {total_messages} messages in {elapsed:.2f} s: "
              f"{total_messages / elapsed:,.0f} messages/s ({args.conversations / elapsed:,.0f} documents/s)")
        step = max(1, len(samples) // 8)
        print(f"--batch {batch}: resident memory (MiB) start {rss_start:.1f}, during "
              + ", ".join(f"{m:.1f}" for m in samples[::step])
              # The kernel updates its high-water mark lazily, so a sample can top it.
              + f", peak {max([peak_rss_mib(), *samples]):.1f}")
        if args.workers > 1:
            print(f"--batch {batch}: largest worker's resident memory (MiB) during "
                  + ", ".join(f"{m:.1f}" for m in worker_samples[::step]))
    print(f"load average {os.getloadavg()[0]:.2f} at end")
    Path(path).unlink()


if __name__ == "__main__":
    main()
