"""Benchmark: the compaction engine's orchestration cost (issue 3 "Measured").

1,000 ranges, 4 worker processes, a provider that answers instantly. Prints
jobs/s, the median and p99 orchestration overhead per job (everything the
engine does around the model call: admission, the claim, reading and
checking the source, the finish transaction, the generation), and the count
of duplicate attempts (must be 0).

Two phases on the same 1,000 ranges (each under its own prompt version, so
each phase has its own 1,000 jobs):

A. 4 processes call the ``compaction.run_job`` task body directly, every
   job id given twice (a redelivery for each) in shuffled order: exact
   per-job overhead, engine throughput without a broker.
B. A real Celery worker (prefork, 4 processes) on Redis db 1, every job
   enqueued twice: end-to-end jobs/s including the broker.

Runs on PostgreSQL; it drops and recreates its own database
(default ``compaction_engine_bench``). Usage::

    /work/main/.venv/bin/python bench/engine.py [--conversations 100] [--pairs 120]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
import uuid
from multiprocessing import get_context
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DB_NAME = os.environ.get("BENCH_DB", "compaction_engine_bench")
DB_URL = f"postgres://postgres@127.0.0.1:5432/{DB_NAME}"
REDIS_URL = os.environ.get("BENCH_REDIS", "redis://127.0.0.1:6379/1")
ENV = {
    "DJANGO_SETTINGS_MODULE": "compaction.config.settings",
    # Workers run with DEBUG off in production; DEBUG on makes Django wrap every
    # cursor to time and record each query, which is not engine overhead.
    "DJANGO_DEBUG": "0",
    "DJANGO_SECRET_KEY": "bench-only",
    "DATABASE_URL": DB_URL,
    "COMPACTION_PROVIDER": "bench.engine:InstantProvider",
    "COMPACTION_AUTO_PLAN": "0",
    "COMPACTION_GLOBAL_CONCURRENCY": "8",
    "LOG_LEVEL": "WARNING",
}
os.environ.update(ENV)

from compaction.contract import ProviderResult  # noqa: E402
from compaction.providers.base import Provider  # noqa: E402


class InstantProvider(Provider):
    """Answers at once with a valid summary; no model, no extraction."""

    name = "instant"
    model_id = "instant-v1"

    def summarise(self, request):
        text = f"[{request.answers[0].message_id}] instant summary"
        return ProviderResult(text=text, finish_reason="stop", model=self.model_id, input_tokens=1,
                              output_tokens=1, latency_ms=0, raw=text)


def recreate_database():
    import psycopg

    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{DB_NAME}"')


def setup_data(conversations: int, pairs: int):
    import django

    django.setup()
    from django.core.management import call_command

    from conversations.documents import validate_document
    from conversations.services.ingest import conversation_ingest
    from tests.factories import conversation_document

    call_command("migrate", verbosity=0)
    for i in range(conversations):
        doc = conversation_document(pairs, external_id=f"bench-{i}", prefix=f"b{i}-")
        conversation_ingest(document=validate_document(doc), actor="bench")


def plan_all(prompt_name: str, limit: int | None = None) -> list[int]:
    from compaction.bindings.segments import conversation_plan
    from compaction.models import PromptVersion
    from conversations.models import Conversation

    pv = PromptVersion.objects.get(name=prompt_name)
    ids = []
    for conv in Conversation.objects.order_by("pk")[:limit]:
        ids += [j.pk for j in conversation_plan(conversation=conv, prompt_version=pv)]
    return ids


def _work(job_ids):
    import django

    django.setup()
    from compaction.tasks import run_job

    out = []
    cpu = time.process_time()
    for job_id in job_ids:
        t = time.perf_counter()
        result = run_job(job_id)
        out.append((job_id, result["status"], result["overhead_ms"], (time.perf_counter() - t) * 1000))
    from django.db import connections

    connections.close_all()
    return out, time.process_time() - cpu


def duplicates(job_ids) -> int:
    from django.db.models import Count

    from compaction.models import Attempt, SummaryGeneration

    extra_attempts = sum(max(0, n - 1) for n in Attempt.objects.filter(job_id__in=job_ids).values("job_id")
                         .annotate(n=Count("id")).values_list("n", flat=True))
    extra_generations = sum(max(0, n - 1) for n in SummaryGeneration.objects.filter(job_id__in=job_ids)
                            .values("job_id").annotate(n=Count("id")).values_list("n", flat=True))
    return extra_attempts + extra_generations


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def phase_a(job_ids, processes=4):
    from django.db import connections

    connections.close_all()
    deliveries = job_ids * 2
    random.Random(7).shuffle(deliveries)
    chunks = [deliveries[i::processes] for i in range(processes)]
    started = time.perf_counter()
    with get_context("fork").Pool(processes) as pool:
        parts = pool.map(_work, chunks)
    wall = time.perf_counter() - started
    results = [r for part, _ in parts for r in part]
    worker_cpu = sum(cpu for _, cpu in parts)
    ran = [r for r in results if r[1] == "succeeded"]
    overhead = [r[2] for r in ran]
    skipped = [r[3] for r in results if r[1] == "skipped"]
    from compaction.models import CompactionJob

    done = CompactionJob.objects.filter(pk__in=job_ids, state="succeeded").count()
    print(f"A{processes}. direct, {processes} process(es): {len(job_ids)} jobs ({len(deliveries)} deliveries incl. one "
          f"redelivery each) in {wall:.2f}s = {done / wall:.1f} jobs/s; succeeded {done}/{len(job_ids)}")
    print(f"   orchestration overhead per job: median {statistics.median(overhead):.2f} ms, "
          f"p99 {pct(overhead, 99):.2f} ms (max {max(overhead):.2f} ms)")
    print(f"   worker CPU time: {worker_cpu * 1000 / len(job_ids):.2f} ms per job incl. its redelivery "
          f"(PostgreSQL's CPU not included); {processes} process(es) on {os.cpu_count()} CPUs")
    print(f"   redelivered (no-op) deliveries: {len(skipped)}, median {statistics.median(skipped):.2f} ms each")
    print(f"   duplicate attempts/generations: {duplicates(job_ids)}")


def phase_b(job_ids, processes=4):
    from compaction.config.celery import app
    from compaction.models import CompactionJob
    from compaction.tasks import run_job
    from tests.workers import celery_worker

    queue = f"bench-{uuid.uuid4().hex[:8]}"
    env = dict(os.environ, CELERY_BROKER_URL=REDIS_URL, CELERY_TASK_DEFAULT_QUEUE=queue)
    with celery_worker(queue=queue, env=env, redis_url=REDIS_URL, processes=processes, stop_timeout=60):
        time.sleep(3)  # let the pool start before the clock does
        started = time.perf_counter()
        with app.connection_for_write(REDIS_URL) as conn:
            for job_id in job_ids:
                run_job.apply_async(args=[job_id], connection=conn, queue=queue)
            for job_id in job_ids:  # a redelivery of every message
                run_job.apply_async(args=[job_id], connection=conn, queue=queue)
        enqueued = time.perf_counter() - started
        while CompactionJob.objects.filter(pk__in=job_ids, state="succeeded").count() < len(job_ids):
            if time.perf_counter() - started > 600:
                break
            time.sleep(0.1)
        wall = time.perf_counter() - started
    # (the unconsumed duplicates are dropped with the queue)
    done = CompactionJob.objects.filter(pk__in=job_ids, state="succeeded").count()
    print(f"B. Celery prefork worker -c {processes} on Redis: {done}/{len(job_ids)} jobs succeeded in "
          f"{wall:.2f}s = {done / wall:.1f} jobs/s (enqueueing {2 * len(job_ids)} messages took {enqueued:.2f}s)")
    print(f"   duplicate attempts/generations: {duplicates(job_ids)}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", type=int, default=100)
    parser.add_argument("--pairs", type=int, default=120)
    parser.add_argument("--skip-celery", action="store_true")
    args = parser.parse_args()
    recreate_database()
    t = time.perf_counter()
    setup_data(args.conversations, args.pairs)
    a_jobs = plan_all("conversation-compaction@2")
    ref_jobs = plan_all("conversation-compaction@1", limit=max(1, args.conversations // 5))
    b_jobs = plan_all("conversation-compaction@3")
    print(f"machine: {os.cpu_count()} CPUs, load average {', '.join(f'{x:.2f}' for x in os.getloadavg())} "
          "(shared with other work while this ran)")
    print(f"setup: {args.conversations} conversations x {args.pairs} pairs, {len(a_jobs)} ranges per phase "
          f"({time.perf_counter() - t:.1f}s); provider InstantProvider; PostgreSQL {DB_NAME}")
    phase_a(a_jobs)
    # Reference: the same work in one process, free of self-contention for CPU.
    phase_a(ref_jobs, processes=1)
    if not args.skip_celery:
        phase_b(b_jobs)
    print(f"load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
