"""Desk benchmark (issue 5, "Measured, not assumed").

Fills a PostgreSQL database with 100,000 conversations and 5,000,000
messages (runs, pairs, segments with real source digests, and jobs,
attempts and generations for the segments) using COPY, then renders the
conversations page, one large conversation page and one segment page with
Django's test client as a signed-in staff user, and prints p50/p95 latency
and the number of queries per page. The review queue (issue 16) is measured
with half of the summaries — the oldest, as a queue worked oldest first
leaves them — already reviewed (``ensure_reviews``), as staff and as a
support user granted two of the four scopes: the queue page, its next page,
a filtered queue, the segment page in review mode, and the "next" move
(a POST that claims the next summary).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/compaction_bench_desk \\
        .venv/bin/python bench/desk.py [--conversations 100000] [--messages 5000000] [--requests 200]

Generation runs once; later runs reuse the data (``--regenerate`` forces it).
Memory stays flat: rows are produced and copied in batches of conversations.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import re
import statistics
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/compaction_bench_desk")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "compaction.config.settings")
os.environ.setdefault("DJANGO_SECRET_KEY", "bench-only-secret-key")
os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "testserver")
os.environ.setdefault("COMPACTION_VAR_DIR", str(ROOT / "var" / "bench"))

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
SCOPES = ["default", "acme", "globex", "initech"]
BATCH = 1000
BIG_PAIRS = 600  # conversation 1: a long one, for the conversation page


def ensure_database(url: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1]
    admin = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def pair_counts(n_conversations: int, n_messages: int) -> list[int]:
    """Pairs per conversation: spread around the mean that gives the message
    total (two messages a pair), one long conversation first."""
    rng = random.Random(42)
    total_pairs = n_messages // 2
    rest = total_pairs - BIG_PAIRS
    mean = rest / (n_conversations - 1)
    counts = [max(1, int(rng.triangular(1, 2 * mean - 1, mean))) for _ in range(n_conversations - 1)]
    # Nudge to the exact total.
    diff = rest - sum(counts)
    i = 0
    while diff:
        step = 1 if diff > 0 else -1
        if counts[i % len(counts)] + step >= 1:
            counts[i % len(counts)] += step
            diff -= step
        i += 1
    return [BIG_PAIRS] + counts


def generate(url: str, n_conversations: int, n_messages: int) -> None:
    import psycopg

    from compaction.digest import digest_input, source_digest

    counts = pair_counts(n_conversations, n_messages)
    rng = random.Random(7)
    started = time.perf_counter()
    with psycopg.connect(url) as conn:
        pv = conn.execute("SELECT id FROM compaction_promptversion WHERE is_current").fetchone()[0]
        ids = {"run": 0, "msg": 0, "pair": 0, "seg": 0, "job": 0, "att": 0, "gen": 0}
        for start in range(0, n_conversations, BATCH):
            rows = {k: [] for k in ("conv", "run", "msg", "pair", "seg", "job", "att", "gen")}
            for cid in range(start + 1, min(start + BATCH, n_conversations) + 1):
                n_pairs = counts[cid - 1]
                scope = SCOPES[cid % len(SCOPES)]
                base = T0 + timedelta(minutes=cid * 3)
                texts = []
                for i in range(n_pairs):
                    ids["run"] += 1
                    run_id = ids["run"]
                    at = base + timedelta(seconds=i * 40)
                    rows["run"].append((run_id, cid, f"run-{i}", "completed", at))
                    u_text = f"Question {i} about order {cid}-{i}: where is my refund of {i % 97}.50 EUR?"
                    a_text = (f"Answer {i}: the refund of {i % 97}.50 EUR for order {cid}-{i} was issued on "
                              f"2026-{(i % 12) + 1:02d}-{(i % 28) + 1:02d}; reference R{cid * 1000 + i}.")
                    ids["msg"] += 1
                    u_id = ids["msg"]
                    rows["msg"].append((u_id, cid, run_id, f"u-{i}", "user", u_text, "completed", "", at, 2 * i, 0, at))
                    ids["msg"] += 1
                    a_id = ids["msg"]
                    rows["msg"].append((a_id, cid, run_id, f"a-{i}", "assistant", a_text, "completed", "",
                                        at + timedelta(seconds=5), 2 * i + 1, 0, at))
                    ids["pair"] += 1
                    rows["pair"].append((ids["pair"], cid, i, run_id, u_id, a_id, len(u_text.encode()),
                                         len(a_text.encode())))
                    texts.append((f"u-{i}", u_text, f"a-{i}", a_text))
                n_segments = max(0, (n_pairs - 20) // 10)
                last = base + timedelta(seconds=n_pairs * 40)
                rows["conv"].append((cid, scope, f"conv-{cid:06d}", f"Refunds and orders, customer {cid}", "{}",
                                     n_pairs, n_segments, 2 * n_pairs, base, last, last))
                gen_number = 0
                for k in range(n_segments):
                    f, t = 10 * k, 10 * k + 9
                    seg_texts = texts[f:t + 1]
                    digest = source_digest(digest_input(f + j, *seg_texts[j]) for j in range(10))
                    mids = "[" + ",".join(f'"{u}","{a}"' for u, _, a, _ in seg_texts) + "]"
                    ids["seg"] += 1
                    rows["seg"].append((ids["seg"], cid, k, f, t, mids, digest,
                                        sum(len(x[1].encode()) for x in seg_texts),
                                        sum(len(x[3].encode()) for x in seg_texts), last))
                    roll = rng.random()
                    state, code, attempts = (
                        ("succeeded", "", 1) if roll < 0.80 else
                        ("failed", "tool_calls", 1) if roll < 0.88 else
                        ("exhausted", "too_long", 2) if roll < 0.92 else
                        ("stale", "", 0) if roll < 0.95 else
                        ("pending", "", 0)
                    )
                    ids["job"] += 1
                    job_id = ids["job"]
                    job_digest = digest if state != "stale" else hashlib.sha256(digest.encode()).hexdigest()
                    rows["job"].append((job_id, scope, cid, f, t, mids, job_digest, "extractive-v1", pv, state,
                                        attempts, 2, code, "", None, last, last))
                    for n in range(1, attempts + 1):
                        ids["att"] += 1
                        ok = state == "succeeded"
                        rows["att"].append((ids["att"], job_id, n, "worker-1", last, last + timedelta(seconds=2),
                                            "succeeded" if ok else "failed", "" if ok else code, "",
                                            "extractive-v1", "stop" if ok else "tool_calls", 900, 150, 1800,
                                            "" if ok else "I will look up the order first.", False))
                    if state == "succeeded":
                        gen_number += 1
                        ids["gen"] += 1
                        text = " ".join(x[3] for x in seg_texts[:4])
                        rows["gen"].append((ids["gen"], job_id, cid, gen_number, text, len(text.encode()), scope,
                                            f, t, mids, digest, "extractive-v1", pv, last))
            with conn.cursor() as cur:
                for table, columns, key in (
                    ("conversations_conversation", "id, scope, external_id, title, metadata, pair_count, "
                     "segment_count, message_count, created_at, updated_at, last_activity_at", "conv"),
                    ("conversations_run", "id, conversation_id, external_id, status, created_at", "run"),
                    ("conversations_message", "id, conversation_id, run_id, external_id, role, content, status, "
                     "tool_call_id, created_at, sequence, revision_count, updated_at", "msg"),
                    ("conversations_pair", "id, conversation_id, index, run_id, user_message_id, "
                     "assistant_message_id, user_bytes, assistant_bytes", "pair"),
                    ("conversations_segment", "id, conversation_id, number, from_pair, to_pair, message_ids, digest, "
                     "user_bytes, assistant_bytes, updated_at", "seg"),
                    ("compaction_compactionjob", "id, scope, conversation_id, from_pair, to_pair, message_ids, "
                     "source_digest, model_id, prompt_version_id, state, attempts_used, max_attempts, "
                     "last_failure_code, lease_owner, lease_expires_at, created_at, updated_at", "job"),
                    ("compaction_attempt", "id, job_id, number, worker, started_at, finished_at, outcome, "
                     "failure_code, failure_detail, model, finish_reason, input_tokens, output_tokens, latency_ms, "
                     "raw_output, raw_output_truncated", "att"),
                    ("compaction_summarygeneration", "id, job_id, conversation_id, number, text, text_bytes, scope, "
                     "from_pair, to_pair, message_ids, source_digest, model_id, prompt_version_id, created_at", "gen"),
                ):
                    if not rows[key]:
                        continue
                    with cur.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                        for row in rows[key]:
                            copy.write_row(row)
            conn.commit()
            done = min(start + BATCH, n_conversations)
            if done % 10_000 == 0 or done == n_conversations:
                print(f"  {done:>7} conversations, {ids['msg']:>8} messages, {ids['job']:>7} jobs "
                      f"({time.perf_counter() - started:.0f}s)", flush=True)
        for table, key in (("conversations_conversation", None), ("conversations_run", "run"),
                           ("conversations_message", "msg"), ("conversations_pair", "pair"),
                           ("conversations_segment", "seg"), ("compaction_compactionjob", "job"),
                           ("compaction_attempt", "att"), ("compaction_summarygeneration", "gen")):
            conn.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                         f"(SELECT COALESCE(MAX(id), 1) FROM {table}))")
        conn.commit()
        conn.autocommit = True
        conn.execute("VACUUM ANALYZE")
    print(f"generated in {time.perf_counter() - started:.0f}s")


def ensure_reviews(url: str) -> None:
    """Review the oldest half of the summaries once (what a queue worked
    oldest first leaves behind), through COPY-free SQL in one statement."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        # The queue's index table is filled by migration 0018 (and triggers):
        # give the planner its statistics, as autovacuum would.
        conn.execute("ANALYZE compaction_reviewawaiting")
    with psycopg.connect(url) as conn:
        if conn.execute("SELECT EXISTS (SELECT 1 FROM compaction_review)").fetchone()[0]:
            return
        started = time.perf_counter()
        conn.execute("INSERT INTO auth_user (username, password, is_superuser, is_staff, is_active, first_name, "
                     "last_name, email, date_joined) VALUES ('bench-reviewer', '!', false, false, true, '', '', '', "
                     "now()) ON CONFLICT (username) DO NOTHING")
        uid = conn.execute("SELECT id FROM auth_user WHERE username = 'bench-reviewer'").fetchone()[0]
        half = conn.execute("SELECT COUNT(*) / 2 FROM compaction_summarygeneration").fetchone()[0]
        conn.execute(
            "INSERT INTO compaction_review (job_id, generation_id, reviewer_id, verdict, note, created_at) "
            "SELECT job_id, id, %s, CASE WHEN id %% 7 = 0 THEN 'needs_work' ELSE 'approved' END, 'bench', "
            "created_at + interval '1 hour' FROM compaction_summarygeneration ORDER BY created_at, id LIMIT %s",
            [uid, half])
        conn.commit()
        conn.autocommit = True
        conn.execute("ANALYZE compaction_review")
        conn.execute("ANALYZE compaction_reviewawaiting")
        print(f"reviewed the oldest {half} summaries in {time.perf_counter() - started:.0f}s")


def _timed(label: str, shown: str, request, expected: int, n: int) -> None:
    """Send ``request()`` once to count its queries, then ``n`` times to time
    it; print one line of figures against the 150 ms p95 target."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        response = request()
    assert response.status_code == expected, (shown, response.status_code)
    n_queries = len(ctx.captured_queries)
    times = []
    for _ in range(n):
        t = time.perf_counter()
        response = request()
        times.append((time.perf_counter() - t) * 1000)
        assert response.status_code == expected
    times.sort()
    p50 = statistics.median(times)
    p95 = times[int(0.95 * len(times)) - 1]
    verdict = "OK" if p95 < 150 else "OVER 150 ms"
    print(f"{label:<34} {shown:<40} queries={n_queries:<3} p50={p50:7.1f} ms  p95={p95:7.1f} ms  "
          f"max={times[-1]:7.1f} ms  [{verdict}]")


def measure_post(label: str, client, url: str, data: dict, n: int) -> None:
    """Like ``measure`` for a POST that answers with a redirect."""
    _timed(label, "POST " + url, lambda: client.post(url, data), 302, n)


def measure(label: str, client, url: str, n: int, *, htmx: bool = False) -> None:
    headers = {"HX-Request": "true"} if htmx else {}
    _timed(label, url, lambda: client.get(url, headers=headers), 200, n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=100_000)
    parser.add_argument("--messages", type=int, default=5_000_000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--regenerate", action="store_true")
    parser.add_argument("--only-review", action="store_true", help="measure the review queue pages only")
    args = parser.parse_args()

    url = os.environ["DATABASE_URL"]
    ensure_database(url)
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    with connection.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM conversations_conversation")
        existing = cur.fetchone()[0]
    if args.regenerate and existing:
        with connection.cursor() as cur:
            cur.execute("TRUNCATE compaction_reviewclaim, compaction_reviewawaiting, compaction_review, "
                        "compaction_auditevent, compaction_summarygeneration, "
                        "compaction_attempt, compaction_compactionjob, conversations_segment, conversations_pair, "
                        "conversations_messagerevision, conversations_message, conversations_run, "
                        "conversations_conversation CASCADE")
        existing = 0
    if not existing:
        print(f"generating {args.conversations} conversations / {args.messages} messages ...", flush=True)
        generate(url, args.conversations, args.messages)

    from django.contrib.auth.models import User
    from django.test import Client

    from compaction.models import CompactionJob

    with connection.cursor() as cur:
        cur.execute("SELECT (SELECT COUNT(*) FROM conversations_conversation), "
                    "(SELECT COUNT(*) FROM conversations_message), (SELECT COUNT(*) FROM conversations_pair), "
                    "(SELECT COUNT(*) FROM compaction_compactionjob), (SELECT COUNT(*) FROM compaction_attempt), "
                    "(SELECT COUNT(*) FROM compaction_summarygeneration)")
        conv, msg, pairs, jobs, attempts, gens = cur.fetchone()
    ensure_reviews(url)
    with connection.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM compaction_review")
        reviews = cur.fetchone()[0]
    print(f"data: {conv} conversations, {msg} messages, {pairs} pairs, {jobs} jobs, {attempts} attempts, "
          f"{gens} generations, {reviews} reviews")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    staff, _ = User.objects.get_or_create(username="bench-staff", defaults={"is_staff": True})
    client = Client()
    client.force_login(staff)
    big = 1
    failed_job = CompactionJob.objects.filter(state="exhausted").order_by("-id").values_list("id", flat=True).first()
    big_job = CompactionJob.objects.filter(conversation_id=big).order_by("from_pair").values_list("id", flat=True)[30]
    n = args.requests
    print(f"{n} requests each, signed-in staff, Django test client (no network); "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}:")
    if not args.only_review:
        measure("conversations page", client, "/", n)
        next_url = re.search(r'href="(\?[^"]*cursor=[^"]+)"', client.get("/").content.decode()).group(1)
        measure("conversations page, 2nd page", client, "/" + next_url.replace("&amp;", "&"), n)
        measure("conversations, has failed ranges", client, "/?has=failed", n)
        measure("conversations, search by title", client, "/?q=customer+99999", n)
        measure("conversations, verdict approved", client, "/?verdict=approved", n)
        measure(f"conversation page ({BIG_PAIRS} pairs)", client, f"/conversations/{big}/", n)
        measure("conversation page (typical)", client, f"/conversations/{conv // 2}/", n)
        measure("projection preview (600 pairs, 64 KiB)", client, f"/conversations/{big}/?budget=65536", n)
        measure("segment page (exhausted job)", client, f"/jobs/{failed_job}/", n)
        measure("segment page (long conversation)", client, f"/jobs/{big_job}/", n)
        measure("failed ranges queue", client, "/queue/", n)
        # After a bulk re-run of a page of 50 ranges (issue 16 §4): the page with
        # those rows kept, and the kept rows' own poll.
        kept = ",".join(str(pk) for pk in CompactionJob.objects.filter(state="failed").order_by("-id")
                        .values_list("id", flat=True)[:50])
        measure("queue, 50 rows kept after a re-run", client, f"/queue/?kept={kept}", n)
        measure("queue, kept rows polling", client, f"/queue/?kept={kept}&region=kept", n, htmx=True)
        measure("conversations, source changed", client, "/?has=source_changed", n)
        measure("activity", client, "/activity/", n)

    # The review queue (issue 16).
    from compaction.desk.review_queue import review_awaiting
    from conversations.models import ScopeGrant
    from django.contrib.auth.models import Group

    support, created = User.objects.get_or_create(username="bench-support")
    if created:
        support.groups.add(Group.objects.get(name="support"))
        for scope in SCOPES[1:3]:
            ScopeGrant.objects.get_or_create(user=support, scope=scope)
    support_client = Client()
    support_client.force_login(support)
    oldest = review_awaiting(user=staff).order_by("created_at", "generation_id").first().generation
    oldest_support = review_awaiting(user=support).order_by("created_at", "generation_id").first().generation
    queue_next = re.search(r'href="(\?[^"]*cursor=[^"]+)"', client.get("/review/").content.decode()).group(1)
    measure("review queue", client, "/review/", n)
    measure("review queue, 2nd page", client, "/review/" + queue_next.replace("&amp;", "&"), n)
    measure("review queue, one scope", client, f"/review/?scope={SCOPES[1]}", n)
    measure("review queue, one conversation", client, f"/review/?conversation={oldest.conversation.external_id}", n)
    measure("review queue (support, 2 scopes)", support_client, "/review/", n)
    measure("segment page, review mode", client, f"/jobs/{oldest.job_id}/?review=1", n)
    measure("segment page, review mode (support)", support_client, f"/jobs/{oldest_support.job_id}/?review=1", n)
    measure_post("review queue: next (claims one)", client, "/review/next/",
                 {"from": oldest.pk, "direction": "next"}, n)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
