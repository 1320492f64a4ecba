"""Benchmark: the streaming audit export at scale (issues 6, 17).

    .venv/bin/python bench/audit_export.py [--jobs 1000000] [--path sql|python] [--database NAME]

Fills the database (``compaction_audit_bench`` unless ``--database``;
created and migrated if missing) once, with COPY, with ``--jobs`` jobs in
1,000-job conversations: 1% in scope ``bench-small`` (spread over the
table's whole time range), the rest in ``bench-large``, a mix of states
(60% succeeded with a generation, 25% exhausted after two failed attempts,
10% failed, 5% pending), every seventh segment changed since (source not
valid), a verdict on every third generation (a second, newer one on every
ninth), Chinese text, commas, quotes, line breaks and cells that need CSV
neutralising; 2% are rolling hand-off jobs chained to their parent, every
fifth of whose generations has two drift findings and every eleventh a
broken chain.

Then it streams ``GET /api/v1/audits/?format=jsonl|csv`` through the real
Django stack in this process (the test client, as an HTTP server would
drive it), for the whole table, a filtered export
(``state=exhausted&verdict=none`` in one scope) and the 1% scope, and
prints records/s, the time to the first byte, and how much this process's
resident memory grew while streaming (its high-water mark, reset before
each export), and the CPU time the PostgreSQL backends (the export's
connection and the second one that builds alternate records) and this
process spent: on a machine shared with other work the wall-clock rate
follows the load, while records per CPU-second of the busiest of the
three, or of their sum on two cores when that is more, is what an idle
2-core machine would do (``COMPACTION_AUDIT_EXPORT_TWO_CONNECTIONS=0``:
one connection). ``--path python`` times the record builder in Python (the
SQLite path, and the path before issue 17). Last, ``EXPLAIN`` of the 1%
scope's export query: no sequential scan of the job table.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import use_database  # noqa: E402

PER_CONVERSATION = 1000
SMALL_EVERY = 100  # every hundredth conversation is in the small scope: 1% of the jobs
HANDOFF_EVERY = 50  # every fiftieth conversation is rolling: 2%
BASE_TIME = datetime(2026, 1, 1, tzinfo=timezone.utc)

GENERATION_TEXT = (
    "## 摘要\n用户要求把导出改成流式，\"逐行\"写出；助手确认并给出计划, 第一步是建索引。\n"
    "- 完成: 索引 job_scope_created\n- 待办: 测试, 基准 (1,000,000 行)\n"
)


def _text(value: str) -> str:
    """A COPY text-format field."""
    return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def _ts(value: datetime) -> str:
    return value.isoformat()


def _state_of(i: int) -> str:
    r = (i * 7919) % 20
    if r < 12:
        return "succeeded"
    if r < 17:
        return "exhausted"
    if r < 19:
        return "failed"
    return "pending"


class _Sink:
    """Lines for one table, written to its COPY in blocks of about 1 MiB."""

    def __init__(self, copy):
        self.copy, self.buffer, self.size = copy, [], 0

    def row(self, *fields) -> None:
        line = "\t".join("\\N" if f is None else str(f) for f in fields) + "\n"
        self.buffer.append(line)
        self.size += len(line)
        if self.size > 1 << 20:
            self.flush()

    def flush(self) -> None:
        if self.buffer:
            self.copy.write("".join(self.buffer).encode("utf-8"))
            self.buffer, self.size = [], 0


class _Job:
    """Everything the fill writes for job ``i`` (0-based), derived from ``i`` alone."""

    def __init__(self, i: int):
        self.i = i
        self.n, self.k = n, k = divmod(i, PER_CONVERSATION)
        self.id = i + 1  # its generation, when it has one, has the same id
        self.conversation = n + 1
        self.scope = "bench-small" if n % SMALL_EVERY == 0 else "bench-large"
        self.handoff = n % HANDOFF_EVERY == 1
        self.state = "succeeded" if self.handoff else _state_of(i)
        self.digest = hashlib.sha256(f"{n}/{k}".encode()).hexdigest()
        self.created = BASE_TIME + timedelta(milliseconds=i, microseconds=(i * 37) % 1000 if i % 5 else 0)
        self.failure = {"exhausted": "tool_calls", "failed": "not_plain_text"}.get(self.state, "")
        self.used = {"succeeded": 1, "exhausted": 2, "failed": 1, "pending": 0}[self.state]
        self.parent = self.id - 1 if self.handoff and k else None
        self.parent_digest = hashlib.sha256(f"note {n}/{k - 1}".encode()).hexdigest() if self.parent else ""
        self.broken = self.handoff and k % 11 == 5


def fill(jobs: int) -> None:
    """``jobs`` jobs (and everything a record reads), once, with COPY."""
    from django.contrib.auth.models import User
    from django.db import connection, transaction

    from compaction.models import CompactionJob, PromptVersion

    if CompactionJob.objects.count() == jobs:
        return
    if CompactionJob.objects.exists():
        sys.exit(f"the bench database holds {CompactionJob.objects.count()} jobs, not {jobs}: "
                 "drop it or pick another --database")
    reviewer, _ = User.objects.get_or_create(username="审核员, \"bench\"")
    prompt = PromptVersion.objects.get(is_current=True, family="conversation-compaction")
    started = time.perf_counter()
    ids_of = [
        "[" + ",".join(f'"{side}-{10 * k + i}"' for i in range(10) for side in ("u", "a")) + "]"
        for k in range(PER_CONVERSATION)
    ]
    conversations = (jobs + PER_CONVERSATION - 1) // PER_CONVERSATION
    counts = dict.fromkeys(("attempts", "generations", "reviews", "findings"), 0)

    def every_job():
        return (_Job(i) for i in range(jobs))

    with transaction.atomic(), connection.cursor() as cursor:
        raw = cursor.cursor

        def load(table: str, columns: str, rows) -> None:
            # One COPY at a time: a connection carries one.
            with raw.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                sink = _Sink(copy)
                for row in rows:
                    sink.row(*row)
                sink.flush()

        load("conversations_conversation", "id, scope, external_id, title, metadata, pair_count, segment_count, "
             "message_count, created_at, updated_at",
             ((n + 1, "bench-small" if n % SMALL_EVERY == 0 else "bench-large",
               _text(f"=会话-{n}" if n % 3 == 0 else f"conv-{n}"), "", "{}", 10 * PER_CONVERSATION + 20,
               PER_CONVERSATION, 20 * PER_CONVERSATION + 40, _ts(BASE_TIME), _ts(BASE_TIME))
              for n in range(conversations)))
        load("compaction_compactionjob",
             "id, kind, scope, from_pair, to_pair, message_ids, source_digest, model_id, parent_digest, state, "
             "attempts_used, max_attempts, last_failure_code, lease_owner, created_at, updated_at, conversation_id, "
             "prompt_version_id, parent_generation_id, source_changed_at",
             ((j.id, "handoff" if j.handoff else "segment", j.scope, 10 * j.k, 10 * j.k + 9, ids_of[j.k], j.digest,
               "extractive-v1", j.parent_digest, j.state, j.used, 2, j.failure, "", _ts(j.created),
               _ts(j.created + timedelta(seconds=3)), j.conversation, prompt.pk, j.parent,
               _ts(j.created) if j.broken else None)
              for j in every_job()))

        def attempts():
            for j in every_job():
                ok = j.state == "succeeded"
                for number in range(1, j.used + 1):
                    counts["attempts"] += 1
                    start = j.created + timedelta(seconds=number)
                    yield (counts["attempts"], j.id, number, "bench", _ts(start),
                           _ts(start + timedelta(milliseconds=900)), "succeeded" if ok else "failed",
                           "" if ok else j.failure, "" if ok else _text("=the model called a tool, \"twice\""),
                           "extractive-v1", "stop" if ok else "tool_calls", 1200, 80, 900, "", "f")

        load("compaction_attempt", "id, job_id, number, worker, started_at, finished_at, outcome, failure_code, "
             "failure_detail, model, finish_reason, input_tokens, output_tokens, latency_ms, raw_output, "
             "raw_output_truncated", attempts())

        def generations():
            for j in every_job():
                if j.state == "succeeded":
                    counts["generations"] += 1
                    text = GENERATION_TEXT + f"- 编号 {j.i}\n" + ("-以减号开头\n" if j.i % 13 == 0 else "")
                    yield (j.id, j.id, "handoff" if j.handoff else "segment", j.scope, 10 * j.k, 10 * j.k + 9,
                           ids_of[j.k], j.digest, "extractive-v1", j.parent_digest, j.conversation, j.k + 1,
                           _text(text), len(text.encode()), prompt.pk, j.parent,
                           _ts(j.created + timedelta(seconds=2)))

        load("compaction_summarygeneration", "id, job_id, kind, scope, from_pair, to_pair, message_ids, "
             "source_digest, model_id, parent_digest, conversation_id, number, text, text_bytes, "
             "prompt_version_id, parent_id, created_at", generations())
        load("conversations_segment", "conversation_id, number, from_pair, to_pair, message_ids, digest, "
             "user_bytes, assistant_bytes, updated_at",
             ((j.conversation, j.k, 10 * j.k, 10 * j.k + 9, ids_of[j.k], j.digest if j.k % 7 else "0" * 64, 100,
               100, _ts(BASE_TIME)) for j in every_job() if not j.handoff))

        def reviews():
            for j in every_job():
                if j.state == "succeeded" and j.i % 3 == 0:
                    counts["reviews"] += 1
                    yield (j.id, j.id, reviewer.pk, "needs_work", _text("@see 第二次, \"note\""),
                           _ts(j.created + timedelta(seconds=5)))
                    if j.i % 9 == 0:
                        counts["reviews"] += 1
                        yield (j.id, j.id, reviewer.pk, "approved", "", _ts(j.created + timedelta(seconds=6)))

        load("compaction_review", "job_id, generation_id, reviewer_id, verdict, note, created_at", reviews())
        load("compaction_handoffplan", "job_id, round, trigger, reason, material_messages, material_tokens, "
             "estimate_tokens, current_digest, break_generation_id, break_pair, created_at",
             ((j.id, 1, "plan", "tokens", 20, 4000, 4000, j.digest if j.k % 7 else "0" * 64,
               j.id - 1 if j.broken else None, 10 * j.k + 3 if j.broken else None, _ts(BASE_TIME))
              for j in every_job() if j.handoff))

        def findings():
            for j in every_job():
                if j.handoff and j.k % 5 == 0:
                    counts["findings"] += 2
                    yield (j.id, 1, "wrong", "quote_not_verbatim", "requests", 2, '["u-3", "a-3"]', "", "")
                    yield (j.id, 2, "lost", "lost_constraint", None, None, "[]", "", "")

        load("compaction_driftfinding", "generation_id, position, kind, code, section, line, message_ids, detail, "
             "subject", findings())
        for table in ("conversations_conversation", "compaction_compactionjob", "compaction_attempt",
                      "compaction_summarygeneration"):
            cursor.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE)")
    print(f"filled {jobs} jobs, {counts['attempts']} attempts, {counts['generations']} generations, "
          f"{counts['reviews']} reviews, {counts['findings']} drift findings with COPY "
          f"in {time.perf_counter() - started:.0f} s", flush=True)


def _hwm_reset_kib() -> int:
    """Reset this process's resident high-water mark; its resident size now."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return _status_kib("VmRSS")


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise LookupError(field)


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (this machine's)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _backend_pid() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


class _OtherBackends:
    """The CPU time of the export's other connections (the second one that
    builds alternate records): found once its COPY runs, read while it lives."""

    def __init__(self, dsn: str, own: int):
        import psycopg

        self.conn = psycopg.connect(dsn, autocommit=True)
        self.own, self.first, self.last = own, {}, {}

    def find(self) -> None:
        rows = self.conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid NOT IN (%s, "
            "pg_backend_pid()) AND query LIKE 'COPY (SELECT%%' AND state = 'active'", [self.own]).fetchall()
        for (pid,) in rows:
            self.first[pid] = self.last[pid] = _cpu_seconds(pid)

    def read(self) -> None:
        for pid in self.first:
            try:
                self.last[pid] = _cpu_seconds(pid)
            except (FileNotFoundError, ProcessLookupError):
                pass  # gone: its last reading stands

    def seconds(self) -> float:
        return sum(self.last[pid] - self.first[pid] for pid in self.first)


def stream(client, params: dict, others: _OtherBackends) -> dict:
    from compaction.audit import CSV_COLUMNS

    backend = _backend_pid()  # the connection the export will use (kept between requests)
    others.own, others.first, others.last = backend, {}, {}
    server_cpu, own_cpu = _cpu_seconds(backend), time.process_time()
    rss_before = _hwm_reset_kib()
    started = time.perf_counter()
    response = client.get("/api/v1/audits/", params)
    assert response.status_code == 200, (response.status_code, getattr(response, "content", b"")[:500])
    lines = crlf = size = 0
    first_byte = None
    # The first byte of the first record (a CSV's header row comes before any query).
    header = len(",".join(CSV_COLUMNS)) + 2 if params["format"] == "csv" else 0
    for n, part in enumerate(response.streaming_content):
        if first_byte is None and size + len(part) > header:
            first_byte = time.perf_counter() - started
            others.find()
        elif n % 8 == 0:
            others.read()
        lines += part.count(b"\n")
        crlf += part.count(b"\r\n")
        size += len(part)
    server_cpu, own_cpu = _cpu_seconds(backend) - server_cpu, time.process_time() - own_cpu
    response.close()
    seconds = time.perf_counter() - started
    grown = (_status_kib("VmHWM") - rss_before) / 1024
    assert _backend_pid() == backend, "the export ran on another connection"
    other_cpu = others.seconds()
    # CSV rows end with CR LF; the benchmark's cells hold line breaks, never CR LF.
    records = (crlf - 1) if params["format"] == "csv" else lines
    # An idle 2-core machine: each process on a core, the busiest one sets the
    # pace, and all of them together share the two cores.
    busiest = max(server_cpu, other_cpu, own_cpu, (server_cpu + other_cpu + own_cpu) / 2, 1e-3)
    return {"records": records, "mib": size / 2**20, "seconds": seconds, "rate": records / seconds,
            "first_byte_ms": (first_byte or seconds) * 1000, "grown_mib": grown,
            "server_cpu": server_cpu, "other_cpu": other_cpu, "own_cpu": own_cpu,
            "rate_cpu": records / busiest}


def explain(user, params: dict) -> str:
    """The plan of the export query for ``params``."""
    from django.db import connection, transaction
    from django.test import RequestFactory
    from rest_framework.request import Request

    from compaction import audit_export
    from compaction.api.audits import AUDITS, AuditListApi

    view = AuditListApi()
    request = Request(RequestFactory().get("/api/v1/audits/", params))
    request.user = user
    view.request, view.format_kwarg = request, None
    queryset = AUDITS.after(view.filter_queryset(view.get_queryset()), None)
    # The export's own connection's half (the other half's plan is the same).
    sql, sql_params = audit_export.export_sql(queryset, fmt=params["format"], half=1)
    with connection.cursor() as cursor, transaction.atomic():
        for name, value in audit_export.PLANNER.items():  # as the export plans it
            cursor.execute("SELECT set_config(%s, %s, true)", [name, value])
        cursor.execute(cursor.cursor.mogrify("EXPLAIN " + sql, sql_params))
        return "\n".join(row[0] for row in cursor.fetchall())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--path", choices=("sql", "python"), default="sql")
    parser.add_argument("--database", default="compaction_audit_bench")
    parser.add_argument("--only", default="", help="comma-separated export labels to run (default: all)")
    args = parser.parse_args()
    os.environ["COMPACTION_AUDIT_EXPORT_IN_SQL"] = "1" if args.path == "sql" else "0"
    use_database(args.database)
    from django.db import connections

    # One connection for the whole run (an export outlasts the default 60 s
    # age), so the backend whose CPU time is read is the export's.
    connections["default"].close()
    connections["default"].settings_dict["CONN_MAX_AGE"] = None

    from django.contrib.auth.models import User
    from django.test import Client
    from rest_framework.authtoken.models import Token

    fill(args.jobs)
    admin, _ = User.objects.get_or_create(username="bench-admin", defaults={"is_staff": True})
    token, _ = Token.objects.get_or_create(user=admin)
    client = Client(HTTP_AUTHORIZATION=f"Token {token.key}")
    others = _OtherBackends(os.environ["DATABASE_URL"], _backend_pid())
    stream(client, {"format": "jsonl", "scope": "bench-small", "state": "pending"}, others)  # warm
    exports = {
        "whole table": {},
        "filtered": {"scope": "bench-large", "state": "exhausted", "verdict": "none"},
        "1% scope": {"scope": "bench-small"},
    }
    only = {label.strip() for label in args.only.split(",") if label.strip()}
    print(f"audit export, {args.jobs} jobs, path {args.path}, PostgreSQL, in-process Django stack; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for fmt in ("jsonl", "csv"):
        for label, params in exports.items():
            if only and label not in only:
                continue
            r = stream(client, {"format": fmt, **params}, others)
            print(f"  {fmt:5} {label:11} {r['records']:>8} records {r['mib']:7.1f} MiB in {r['seconds']:6.2f} s "
                  f"= {r['rate']:7.0f} records/s; first record byte {r['first_byte_ms']:5.0f} ms; "
                  f"process memory grew {r['grown_mib']:5.1f} MiB\n"
                  f"        CPU: PostgreSQL backends {r['server_cpu']:6.2f} s + {r['other_cpu']:6.2f} s, "
                  f"Django process {r['own_cpu']:6.2f} s = {r['rate_cpu']:7.0f} records/s on an idle 2-core machine "
                  f"(load average {os.getloadavg()[0]:.2f})", flush=True)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.path == "sql":
        print("EXPLAIN of the 1% scope's JSONL export (scope=bench-small):")
        print(io.StringIO(explain(admin, {"format": "jsonl", "scope": "bench-small"})).read())


if __name__ == "__main__":
    main()
