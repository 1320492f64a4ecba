"""Benchmark: stream the audit export (issue 6) and show its memory stays flat.

    .venv/bin/python bench/audit_export.py [--jobs 20000] [--chunk 500]

Fills the database ``compaction_api_bench`` (created and migrated if
missing) with two scopes of synthetic jobs, ``bench-small`` (a tenth of
``--jobs``) and ``bench-large`` (``--jobs``), each job with its planned
segment, two failed attempts and a verdict on every fifth, then streams
``GET /api/v1/audits/?format=jsonl|csv&scope=…`` through the real Django
stack in this process and prints records per second and the peak of memory
allocated while streaming (tracemalloc). A streaming export over a
server-side cursor keeps that peak about the same for ten times the rows.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
import tracemalloc
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import use_database  # noqa: E402


def fill(scope: str, jobs: int, reviewer) -> None:
    """``jobs`` jobs in ``scope`` (1,000 per conversation), once."""
    from django.db import transaction
    from django.utils import timezone

    from compaction.models import Attempt, CompactionJob, PromptVersion, Review
    from conversations.models import Conversation, Segment

    if CompactionJob.objects.filter(scope=scope).count() == jobs:
        return
    prompt = PromptVersion.objects.get(is_current=True)
    now = timezone.now()
    per_conversation = 1000
    with transaction.atomic():
        for c in range((jobs + per_conversation - 1) // per_conversation):
            count = min(per_conversation, jobs - c * per_conversation)
            conv, _ = Conversation.objects.get_or_create(scope=scope, external_id=f"{scope}-{c}")
            segments, new_jobs = [], []
            for k in range(count):
                ids = [f"{side}-{10 * k + i}" for i in range(10) for side in ("u", "a")]
                digest = hashlib.sha256(f"{scope}/{c}/{k}".encode()).hexdigest()
                segments.append(Segment(conversation=conv, number=k, from_pair=10 * k, to_pair=10 * k + 9,
                                        message_ids=ids, digest=digest if k % 7 else "0" * 64))
                new_jobs.append(CompactionJob(
                    scope=scope, conversation=conv, from_pair=10 * k, to_pair=10 * k + 9, message_ids=ids,
                    source_digest=digest, model_id="extractive-v1", prompt_version=prompt, state="exhausted",
                    attempts_used=2, last_failure_code="tool_calls"))
            Segment.objects.bulk_create(segments, ignore_conflicts=True)
            created = CompactionJob.objects.bulk_create(new_jobs)
            Attempt.objects.bulk_create(
                Attempt(job=job, number=n, worker="bench", started_at=now - timedelta(seconds=n),
                        finished_at=now, outcome="failed", failure_code="tool_calls", finish_reason="tool_calls",
                        failure_detail="=the model called a tool", input_tokens=1200, output_tokens=80,
                        latency_ms=900)
                for job in created for n in (1, 2))
            Review.objects.bulk_create(
                Review(job=job, reviewer=reviewer, verdict="needs_work", note="-see attempts")
                for job in created[::5])


def stream(client, params: dict, *, traced: bool) -> tuple[int, int, float, float]:
    """(lines, bytes, seconds, peak MiB allocated while streaming or 0)."""
    if traced:
        tracemalloc.start()
    started = time.perf_counter()
    response = client.get("/api/v1/audits/", params)
    assert response.status_code == 200, response.status_code
    lines = size = 0
    for part in response.streaming_content:
        lines += part.count(b"\n")
        size += len(part)
    response.close()
    seconds = time.perf_counter() - started
    peak = 0
    if traced:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return lines, size, seconds, peak / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--chunk", type=int, default=500)
    args = parser.parse_args()
    os.environ["COMPACTION_API_EXPORT_CHUNK"] = str(args.chunk)
    use_database("compaction_api_bench")

    from django.contrib.auth.models import User
    from django.test import Client
    from rest_framework.authtoken.models import Token

    admin, _ = User.objects.get_or_create(username="bench-admin", defaults={"is_staff": True})
    token, _ = Token.objects.get_or_create(user=admin)
    fill("bench-small", args.jobs // 10, admin)
    fill("bench-large", args.jobs, admin)
    client = Client(HTTP_AUTHORIZATION=f"Token {token.key}")
    stream(client, {"format": "jsonl", "scope": "bench-small"}, traced=False)  # warm: imports, connection
    print(f"audit export, chunk {args.chunk}, PostgreSQL, in-process Django stack")
    print("  (speed measured untraced; memory in a second, traced pass)")
    for fmt in ("jsonl", "csv"):
        for scope in ("bench-small", "bench-large"):
            lines, size, seconds, _ = stream(client, {"format": fmt, "scope": scope}, traced=False)
            *_, peak = stream(client, {"format": fmt, "scope": scope}, traced=True)
            records = lines - (1 if fmt == "csv" else 0)
            print(f"  {fmt:5} {scope:11} {records:>7} records {size / 2**20:6.1f} MiB in {seconds:6.2f} s "
                  f"= {records / seconds:6.0f} records/s; peak allocated while streaming {peak:5.1f} MiB")


if __name__ == "__main__":
    main()
