"""Benchmark: a rolling conversation grown to 2,000 pairs, its planning cost
flat however long its hand-off chain (issue 13; SPEC §7).

    .venv/bin/python bench/rolling.py [--pairs 2000] [--per-ingest 10] [--min-new-tokens 4000]
                                      [--projections 500] [--budget 65536]

In the PostgreSQL database ``compaction_bench_rolling_chain`` (created and
migrated on first use), a scope set to the rolling policy, and one new
conversation grown by ingests of ``--per-ingest`` pairs through the real
ingest service (English requests with conditions, questions, holds,
abandonments and some confirmed submissions as tool calls). After every
ingest the chain is planned and compacted as it grows, with the offline
``handoff-extractive`` builder: the trigger is asked (``handoff_plan``), the
planned job runs through the engine (``job_run``), and each written note
asks for the next round (the binding's ``after_generation``), until
nothing is pending.

Prints the number of generations, the note length (characters) per
generation, the planning cost per ingest (the trigger after the ingest plus
every next-round planning it led to; median, p99), the ratio of the last
100 ingests' median planning cost to the first 100's (flat: planning reads
only the pairs after the chain's cut, each message's tokens counted once)
— in wall time, and, since wall time on a shared machine follows its load,
also in this process's CPU time and in SQL statements — and the p99 of
``--projections`` projections of the grown conversation.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import use_database  # noqa: E402

DB_NAME = "compaction_bench_rolling_chain"
SCOPE = "bench-rolling"
T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)
CITIES = ("Lisbon", "Osaka", "Quito", "Tallinn", "Hanoi", "Accra", "Perth", "Bergen", "Cusco", "Dakar", "Malmo")


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def ts(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")


def pair(i: int) -> tuple[str, str, dict | None]:
    """The user's message, the answer, and a tool call with its result (or None)."""
    city, trip = CITIES[i % len(CITIES)], f"TR-{4000 + i // 7}"
    kind = i % 7
    if kind == 0:
        return (f"Book trip {trip} to {city} on 2027-{i % 12 + 1:02d}-{i % 27 + 1:02d}, only economy, under "
                f"{300 + i % 500} EUR, and no overnight layover.",
                f"Noted: {trip} to {city}, economy only, under {300 + i % 500} EUR, no overnight layover.", None)
    if kind == 1:
        return (f"What is the baggage allowance for {trip}?",
                f"For {trip} the allowance is one 23 kg bag plus a cabin bag of 8 kg.", None)
    if kind == 2:
        return (f"Hold {trip} for now, I will confirm the dates next week.",
                f"Understood, {trip} stays on hold until you confirm.", None)
    if kind == 3:
        return (f"Yes, go ahead and submit {trip} now.", f"Done: {trip} is booked, reference BK-{90000 + i}.",
                {"name": "submit_booking", "arguments": json.dumps({"trip": trip}),
                 "result": json.dumps({"ok": True, "booking_id": f"BK-{90000 + i}", "status": "confirmed"})})
    if kind == 4:
        return (f"Can I change the seat on {trip} later?", "Yes, seats can be changed up to 24 hours before.", None)
    if kind == 5:
        return (f"Forget the side trip to {CITIES[(i + 3) % len(CITIES)]}, I am not going.",
                f"Dropped the side trip to {CITIES[(i + 3) % len(CITIES)]}.", None)
    return (f"Also I need a hotel in {city} near the station, at most {80 + i % 90} EUR a night, only with breakfast.",
            f"I will look for hotels in {city} near the station under {80 + i % 90} EUR with breakfast.", None)


def document(external_id: str, start: int, count: int) -> dict:
    runs, messages = [], []
    for i in range(start, start + count):
        user, answer, call = pair(i)
        run = f"run-{i}"
        runs.append({"id": run, "status": "completed", "created_at": ts(i * 3)})
        messages.append({"id": f"u-{i}", "run_id": run, "role": "user", "content": user, "status": "completed",
                         "created_at": ts(i * 3)})
        if call:
            messages.append({"id": f"c-{i}", "run_id": run, "role": "assistant", "content": "", "status": "completed",
                             "created_at": ts(i * 3 + 0.5),
                             "tool_calls": [{"id": f"call-{i}", "name": call["name"], "arguments": call["arguments"]}]})
            messages.append({"id": f"t-{i}", "run_id": run, "role": "tool", "tool_call_id": f"call-{i}",
                             "content": call["result"], "status": "completed", "created_at": ts(i * 3 + 1)})
        messages.append({"id": f"a-{i}", "run_id": run, "role": "assistant", "content": answer, "status": "completed",
                         "created_at": ts(i * 3 + 2)})
    return {"scope": SCOPE, "id": external_id, "title": "bench rolling", "runs": runs, "messages": messages}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--per-ingest", type=int, default=10)
    parser.add_argument("--min-new-tokens", type=int, default=2000, help="the scope's min_new_token_count")
    parser.add_argument("--projections", type=int, default=500)
    parser.add_argument("--budget", type=int, default=64 * 1024)
    args = parser.parse_args()
    os.environ.setdefault("COMPACTION_AUTO_PLAN", "0")  # this script plans after each ingest itself
    os.environ.setdefault("DJANGO_DEBUG", "0")
    use_database(DB_NAME)
    from django.db import connection

    from compaction.actions import do_scope_policy_set
    from compaction.bindings.handoff import HANDOFF, handoff_plan
    from compaction.context.projection import conversation_projection
    from compaction.engine.run import job_run
    from compaction.models import CompactionJob, SummaryGeneration
    from compaction.tokens import token_estimator_name
    from conversations.documents import validate_document
    from conversations.services.ingest import conversation_ingest

    do_scope_policy_set(scope=SCOPE, actor="bench", reason="bench/rolling.py", policy="rolling",
                        min_new_token_count=args.min_new_tokens)
    external_id = f"bench-rolling-{int(time.time())}"
    print(f"PostgreSQL {connection.pg_version}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start; "
          f"{args.pairs} pairs in ingests of {args.per_ingest}, min_new_token_count {args.min_new_tokens}, "
          f"other thresholds at their defaults; tokens: {token_estimator_name()}")
    planning_ms: list[float] = []
    planning_cpu_ms: list[float] = []
    planning_statements: list[int] = []
    statements = [0]

    def count(execute, sql, params, many, context):
        statements[0] += 1
        return execute(sql, params, many, context)

    ingest_ms: list[float] = []
    builder_ms = 0.0
    conversation = None
    started = time.perf_counter()
    for start in range(0, args.pairs, args.per_ingest):
        doc = validate_document(document(external_id, start, min(args.per_ingest, args.pairs - start)))
        t = time.perf_counter()
        conversation = conversation_ingest(document=doc, actor="bench").conversation
        ingest_ms.append((time.perf_counter() - t) * 1000)
        statements[0] = 0
        with connection.execute_wrapper(count):
            t, c = time.perf_counter(), time.process_time()
            pending = handoff_plan(conversation=conversation)
            planned, planned_cpu = time.perf_counter() - t, time.process_time() - c
        while pending:
            job = pending.pop()
            t = time.perf_counter()
            outcome = job_run(job_id=job.pk)
            builder_ms += (time.perf_counter() - t) * 1000
            assert outcome.status == "succeeded", outcome
            written = CompactionJob.objects.get(pk=job.pk)
            with connection.execute_wrapper(count):
                t, c = time.perf_counter(), time.process_time()
                pending += HANDOFF.after_generation(job=written)
                planned, planned_cpu = planned + time.perf_counter() - t, planned_cpu + time.process_time() - c
        planning_ms.append(planned * 1000)
        planning_cpu_ms.append(planned_cpu * 1000)
        planning_statements.append(statements[0])
    total = time.perf_counter() - started
    generations = list(SummaryGeneration.objects.filter(conversation=conversation).order_by("number")
                       .values_list("number", "from_pair", "to_pair", "text"))
    print(f"grown to {conversation.pair_count} pairs in {len(ingest_ms)} ingests, {total:.1f} s "
          f"(ingest median {statistics.median(ingest_ms):.1f} ms, first 100 {statistics.median(ingest_ms[:100]):.1f} ms,"
          f" last 100 {statistics.median(ingest_ms[-100:]):.1f} ms; builder {builder_ms / max(1, len(generations)):.1f}"
          f" ms per generation)")
    print(f"generations: {len(generations)}; last cut at pair {generations[-1][2] if generations else None}")
    print("note length per generation (characters): " + ", ".join(str(len(g[3])) for g in generations))
    print(f"planning per ingest: median {statistics.median(planning_ms):.2f} ms, p99 {percentile(planning_ms, 99):.2f} ms,"
          f" max {max(planning_ms):.2f} ms")
    first, last = statistics.median(planning_ms[:100]), statistics.median(planning_ms[-100:])
    print(f"planning median, first 100 ingests {first:.2f} ms, last 100 {last:.2f} ms: ratio last/first {last / first:.2f}")
    first_cpu, last_cpu = statistics.median(planning_cpu_ms[:100]), statistics.median(planning_cpu_ms[-100:])
    print(f"planning CPU of this process, median first 100 {first_cpu:.2f} ms, last 100 {last_cpu:.2f} ms: "
          f"ratio {last_cpu / first_cpu:.2f}; SQL statements per ingest, median first 100 "
          f"{statistics.median(planning_statements[:100]):.0f}, last 100 {statistics.median(planning_statements[-100:]):.0f}")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    for _ in range(20):
        conversation_projection(conversation=conversation, budget_bytes=args.budget)
    projection_ms = []
    for _ in range(args.projections):
        t = time.perf_counter()
        body = conversation_projection(conversation=conversation, budget_bytes=args.budget)
        projection_ms.append((time.perf_counter() - t) * 1000)
    kinds = [b["kind"] for b in body["blocks"]]
    print(f"projection at the end ({args.budget} B budget, {args.projections} runs): p50 "
          f"{statistics.median(projection_ms):.2f} ms, p99 {percentile(projection_ms, 99):.2f} ms; "
          f"{kinds.count('handoff')} handoff block + {kinds.count('raw')} raw pairs, used {body['used']['bytes']} B, "
          f"complete {body['complete']}")
    print(f"load average {os.getloadavg()[0]:.1f} at end")


if __name__ == "__main__":
    main()
