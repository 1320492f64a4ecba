"""Benchmark: next-run projection latency follows the budget, not the history.

    .venv/bin/python bench/projection.py [--runs 500] [--budget 65536] [--sizes 100,1000,10000]
                                         [--prefer raw,summary]

Builds (once; reused on later runs) three conversations of 100, 1,000 and
10,000 pairs in the PostgreSQL database ``compaction_bench_projection``, with
a succeeded ``@3`` summary for every planned segment, written in bulk the way
ingest and the engine leave them (pair sizes, segment digests, generation
text sizes). Then runs ``--runs`` projections per conversation with a 64 KiB
budget and prints p50 and p99 latency of the service call alone and of the
service call plus rendering the response body to JSON bytes with the
endpoint's renderer (what the API sends),
and the ratio p99(largest) / p99(smallest), for each packing preference
(``prefer=raw``, the default, and ``prefer=summary``; issue 11). Targets
(issues 4 and 11): ratio <= 1.5 and p99 <= 15 ms at 10,000 pairs, under
both.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import use_database  # noqa: E402
DB_NAME = "compaction_bench_projection"


T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)


def user_text(i: int) -> str:
    return f"Question {i}: what was the net asset value of fund F-{i % 97:03d} on 2026-10-{i % 28 + 1:02d}, and did the fee change?"


def assistant_text(i: int) -> str:
    # ~2.5 KiB, mixed English and Chinese, like a research agent's answer; at
    # this size even the 100-pair history holds more than the 64 KiB budget,
    # so every size is budget-bound and the comparison is like for like.
    return (
        f"As of 2026-10-{i % 28 + 1:02d} the net asset value of F-{i % 97:03d} was {100 + i * 0.37:.2f} EUR. "
        "截至上周的净值不代表当前净值；费用没有变化。 "
        + "The management fee stays at 0.45% a year and no transfer is pending. " * 34
    )


def summary_text(k: int) -> str:
    return (
        f"Pairs {k * 10}-{k * 10 + 9}: the assistant quoted net asset values for ten funds as of their stated dates "
        "(not current values) and confirmed the fee stayed at 0.45% a year. "
        + "[a-x] values are as of the week stated; 截至上周. " * 20
    )


def build(pairs: int):
    """One conversation of ``pairs`` pairs with a summary for every planned segment."""
    from django.db import transaction

    from compaction.digest import digest_input, source_digest
    from compaction.models import CompactionJob, PromptVersion, SummaryGeneration
    from compaction.planning import plan_segments
    from conversations.models import Conversation, Message, Pair, Run, Segment

    external_id = f"bench-projection-{pairs}"
    existing = Conversation.objects.filter(scope="bench", external_id=external_id).first()
    if existing is not None and existing.pair_count == pairs:
        return existing
    if existing is not None:
        external_id += f"-{int(time.time())}"
    started = time.perf_counter()
    with transaction.atomic():
        conv = Conversation.objects.create(scope="bench", external_id=external_id, title=f"{pairs} pairs")
        runs = Run.objects.bulk_create(
            [Run(conversation=conv, external_id=f"r{i}", status="completed", created_at=T0 + timedelta(minutes=i))
             for i in range(pairs)], batch_size=5000,
        )
        messages = []
        for i, run in enumerate(runs):
            at = T0 + timedelta(minutes=i)
            messages.append(Message(conversation=conv, run=run, external_id=f"u-{i}", role="user",
                                    content=user_text(i), created_at=at, sequence=2 * i))
            messages.append(Message(conversation=conv, run=run, external_id=f"a-{i}", role="assistant",
                                    content=assistant_text(i), created_at=at + timedelta(seconds=30), sequence=2 * i + 1))
        Message.objects.bulk_create(messages, batch_size=5000)
        Pair.objects.bulk_create(
            [Pair(conversation=conv, index=i, run=runs[i], user_message=messages[2 * i],
                  assistant_message=messages[2 * i + 1], user_bytes=len(user_text(i).encode()),
                  assistant_bytes=len(assistant_text(i).encode())) for i in range(pairs)],
            batch_size=5000,
        )
        pv = PromptVersion.objects.get(name="conversation-compaction@3")
        segments, jobs = [], []
        for rng in plan_segments(pairs):
            members = range(rng.from_pair, rng.to_pair + 1)
            digest = source_digest(digest_input(i, f"u-{i}", user_text(i), f"a-{i}", assistant_text(i)) for i in members)
            ids = [x for i in members for x in (f"u-{i}", f"a-{i}")]
            segments.append(Segment(conversation=conv, number=rng.number, from_pair=rng.from_pair, to_pair=rng.to_pair,
                                    message_ids=ids, digest=digest,
                                    user_bytes=sum(len(user_text(i).encode()) for i in members),
                                    assistant_bytes=sum(len(assistant_text(i).encode()) for i in members)))
            jobs.append(CompactionJob(scope="bench", conversation=conv, from_pair=rng.from_pair, to_pair=rng.to_pair,
                                      message_ids=ids, source_digest=digest, model_id="extractive-v1", prompt_version=pv,
                                      state="succeeded", attempts_used=1))
        Segment.objects.bulk_create(segments, batch_size=2000)
        CompactionJob.objects.bulk_create(jobs, batch_size=2000)
        SummaryGeneration.objects.bulk_create(
            [SummaryGeneration(job=job, conversation=conv, number=n + 1, text=summary_text(job.from_pair // 10),
                               text_bytes=len(summary_text(job.from_pair // 10).encode()), scope="bench",
                               from_pair=job.from_pair, to_pair=job.to_pair, message_ids=job.message_ids,
                               source_digest=job.source_digest, model_id="extractive-v1", prompt_version=pv)
             for n, job in enumerate(jobs)], batch_size=2000,
        )
        conv.pair_count, conv.segment_count, conv.message_count = pairs, len(segments), 2 * pairs
        conv.save(update_fields=["pair_count", "segment_count", "message_count"])
    print(f"built {pairs:>6} pairs, {len(segments)} summaries in {time.perf_counter() - started:.1f}s", flush=True)
    return conv


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--budget", type=int, default=64 * 1024)
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--format", default="blocks", choices=["blocks", "openai"])
    parser.add_argument("--prefer", default="raw,summary", help="comma-separated: raw, summary")
    parser.add_argument("--database", default=DB_NAME,
                        help=f"PostgreSQL database to build in (default {DB_NAME}; another name keeps concurrent runs apart)")
    args = parser.parse_args()
    use_database(args.database)
    from django.db import connection

    from compaction.context.projection import conversation_projection
    from compaction.api.projection import ProjectionJSONRenderer

    sizes = [int(s) for s in args.sizes.split(",")]
    preferences = [p for p in args.prefer.split(",") if p]
    convs = {n: build(n) for n in sizes}
    # Fresh statistics, as autovacuum would leave them on a live database;
    # right after a bulk load the planner would otherwise scan all segments.
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    renderer = ProjectionJSONRenderer()
    load = os.getloadavg()[0]
    print(f"PostgreSQL {connection.pg_version}, budget {args.budget} bytes, {args.runs} projections each, "
          f"format={args.format}, {os.cpu_count()} CPUs, load average {load:.1f} at start")
    labels = ("service", "service+json")
    keys = [(prefer, n, label) for prefer in preferences for n in sizes for label in labels]
    wall = {key: [] for key in keys}
    cpu = {key: [] for key in keys}
    bodies = {}
    for prefer in preferences:  # warm caches and the connection
        for n, conv in convs.items():
            for _ in range(20):
                conversation_projection(conversation=conv, budget_bytes=args.budget, format=args.format, prefer=prefer)
    # Interleaved, so a burst of load on this shared machine hits every size alike.
    for _ in range(args.runs):
        for prefer in preferences:
            for n, conv in convs.items():
                for label in labels:
                    c, t = time.process_time(), time.perf_counter()
                    body = conversation_projection(conversation=conv, budget_bytes=args.budget, format=args.format,
                                                   prefer=prefer)
                    if label == "service+json":
                        renderer.render(body)
                    wall[(prefer, n, label)].append((time.perf_counter() - t) * 1000)
                    cpu[(prefer, n, label)].append((time.process_time() - c) * 1000)
                    bodies[(prefer, n)] = body
    for prefer in preferences:
        for n in sizes:
            body = bodies[(prefer, n)]
            summaries = sum(1 for p in body["pairs"] if p["as"] == "summary") // 10
            raw = sum(1 for p in body["pairs"] if p["as"] == "raw")
            for label in labels:
                w, c = wall[(prefer, n, label)], cpu[(prefer, n, label)]
                print(
                    f"prefer={prefer:<7} {n:>6} pairs  {label:<13} p50 {statistics.median(w):6.2f} ms"
                    f"  p99 {percentile(w, 99):6.2f} ms"
                    f"  (cpu p50 {statistics.median(c):5.2f} ms, p99 {percentile(c, 99):5.2f} ms)"
                    f"  used {body['used']['bytes']} B  summaries {summaries}  raw pairs {raw}"
                    f"  complete {body['complete']}"
                )
    small, large = min(sizes), max(sizes)
    for prefer in preferences:
        for label in labels:
            ratio = percentile(wall[(prefer, large, label)], 99) / percentile(wall[(prefer, small, label)], 99)
            print(f"prefer={prefer}: ratio p99({large}) / p99({small}) [{label}]: {ratio:.2f}")
    print(f"load average {os.getloadavg()[0]:.1f} at end")


if __name__ == "__main__":
    main()
