"""The audit export built by PostgreSQL (issue 17) is byte for byte the
export built in Python (``compaction.audit``), for every kind of job,
attempt, generation, review and drift finding, Chinese text, JSON escapes
and cells that need CSV neutralising, whatever the filters."""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime, timedelta, timezone

import psycopg
import pytest
from django.contrib.auth.models import User
from django.db import connection
from hypothesis import HealthCheck, given
from hypothesis import settings as examples
from hypothesis import strategies as st

from compaction import audit_export
from compaction.audit import iso
from compaction.csvsafe import csv_cell
from compaction.bindings.segments import conversation_plan
from compaction.models import (Attempt, AttemptOutcome, CompactionJob, DriftFinding, DriftReport, JobState, Review,
                               SummaryGeneration)
from tests.compaction.api.conftest import attempt, client_for, exhaust, ingest, succeed
from tests.compaction.conftest import live_db
from tests.compaction.bindings.rolling import (ScriptedHandoffModel, edit_message, rolling_document, rolling_scope,
                                               run_chain)
from tests.compaction.bindings.rolling import ingest as ingest_rolling
from tests.factories import make_user, token_for

pytestmark = [pytest.mark.django_db,
              pytest.mark.skipif(connection.vendor != "postgresql", reason="the SQL export is PostgreSQL's")]

# Text a JSON or CSV writer has to get exactly right.
AWKWARD = "摘要：用户说 \"好的\", 然后\n- 第二行\r\n\ttab \\ back\\slash \x01 ctrl \u2028 sep, é"


@pytest.fixture
def world(db):
    staff = make_user("root", staff=True, scopes=())
    reviewer = User.objects.create_user(username="审核员")
    second = make_user("=evil", role="support", scopes=("default", "@ops"))

    # Segment jobs in every state, with every kind of attempt.
    conv = ingest(75, external_id="=HYPERLINK(\"http://evil\"), 会话")
    done, failed, pending, running, stale_range = conversation_plan(conversation=conv)
    generation = succeed(done, text="=cmd|' /C calc'!A0\n" + AWKWARD)
    Review.objects.create(job=done, generation=generation, reviewer=reviewer, verdict="needs_work", note=AWKWARD)
    Review.objects.create(job=done, generation=generation, reviewer=second, verdict="approved", note="-ok, \"now\"")
    exhaust(failed)
    Attempt.objects.filter(job=failed, number=1).update(failure_detail="=1+1, " + AWKWARD, model="")
    running.state = JobState.RUNNING
    running.attempts_used = 1
    running.save()
    Attempt.objects.create(job=running, number=1, worker="w", started_at=datetime(2026, 3, 1, 12, 0, 0, tzinfo=timezone.utc),
                           outcome=AttemptOutcome.RUNNING)
    empty = succeed(stale_range, text="")  # an empty summary text
    Review.objects.create(job=stale_range, generation=empty, reviewer=reviewer, verdict="needs_work", note="")
    # Times on a whole second (no microseconds) and with them.
    CompactionJob.objects.filter(pk=pending.pk).update(created_at=datetime(2026, 2, 1, tzinfo=timezone.utc))
    # Message ids that look like the separators of a JSON list.
    CompactionJob.objects.filter(pk=pending.pk).update(
        message_ids=[", ", "x\\", "\", ", "q\"", "", "\\\", \"", "末, \"尾\"", "\\\\\", ", "\\"])
    # A range whose source changed since (not valid), and one no longer planned (current digest null).
    edit_message(conv, "u-41", "@SUM(1+1) 改过了")
    CompactionJob.objects.filter(pk=running.pk).update(to_pair=999)

    other = ingest(35, scope="@ops", external_id="+1-555")
    (other_job,) = conversation_plan(conversation=other)
    exhaust(other_job, code="not_plain_text")
    CompactionJob.objects.filter(pk=other_job.pk).update(last_failure_code="", model_id="-model")

    # A rolling chain, broken, with drift findings on its generations.
    rolling_scope(scope="default", recent_turns=4, min_new_token_count=0, max_compaction_batch_messages=20)
    chain = ingest_rolling(rolling_document(34, scope="default", external_id="链-1"))
    g1, g2, g3 = run_chain(chain, provider=ScriptedHandoffModel())
    for g, findings in ((g1, []), (g2, [("wrong", "quote_not_verbatim", "requests", 2, ["u-3", "a-3"]),
                                        ("lost", "lost_constraint", None, None, [])]),
                        (g3, [("extra", "tool_detail_in_requests", "todos", 1, ["a-\"引号\""])])):
        # Planted in place of what the finish's own checks wrote, so every shape is exported.
        DriftFinding.objects.filter(generation=g).delete()
        DriftReport.objects.update_or_create(generation=g, defaults={"finding_count": len(findings)})
        for position, (kind, code, section, line, ids) in enumerate(findings, start=1):
            DriftFinding.objects.create(generation=g, position=position, kind=kind, code=code, section=section,
                                        line=line, message_ids=ids, detail=AWKWARD)
    Review.objects.create(job=g3.job, generation=g3, reviewer=reviewer, verdict="approved", note="@")
    edit_message(chain, "u-15", "Request 15: corrected.")
    return {"staff": client_for(staff), "support": client_for(second), "done": done, "failed": failed,
            "chain": chain}


def export(client, settings, *, in_sql: bool, **params) -> bytes:
    settings.COMPACTION_AUDIT_EXPORT_IN_SQL = in_sql
    response = client.get("/api/v1/audits/", params)
    assert response.status_code == 200, response.content
    return b"".join(response.streaming_content)


FILTERS = [
    {},
    {"state": "exhausted"},
    {"state": ["succeeded", "running"]},
    {"verdict": "none"},
    {"verdict": "approved"},
    {"verdict": ["none", "needs_work"]},
    {"state": "exhausted", "verdict": "none", "scope": "@ops"},
    {"source_valid": "false"},
    {"source_valid": "true"},
    {"scope": "default", "failure_code": "tool_calls"},
    {"prompt_version": "handoff@1"},
    {"conversation_external_id": "链-1"},
    {"created_after": "2026-01-01T00:00:00Z"},
    {"updated_before": "2000-01-01T00:00:00Z"},
]


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
@pytest.mark.parametrize("params", FILTERS, ids=lambda p: "&".join(f"{k}={v}" for k, v in p.items()) or "all")
def test_the_sql_export_is_byte_for_byte_the_python_export(world, settings, fmt, params):
    in_python = export(world["staff"], settings, in_sql=False, format=fmt, **params)
    in_sql = export(world["staff"], settings, in_sql=True, format=fmt, **params)
    assert in_sql == in_python
    if params == {}:
        text = in_sql.decode()
        lines = list(csv.reader(io.StringIO(text, newline=""))) if fmt == "csv" else text.split("\n")[:-1]
        assert len(lines) == CompactionJob.objects.count() + (fmt == "csv")  # every job compared


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_a_scoped_user_and_a_cursor_give_the_same_bytes_both_ways(world, settings, fmt):
    assert export(world["support"], settings, in_sql=True, format=fmt) == export(
        world["support"], settings, in_sql=False, format=fmt)
    settings.COMPACTION_AUDIT_EXPORT_IN_SQL = True
    cursor = world["staff"].get("/api/v1/audits/", {"page_size": 3}).json()["next_cursor"]
    assert export(world["staff"], settings, in_sql=True, format=fmt, cursor=cursor) == export(
        world["staff"], settings, in_sql=False, format=fmt, cursor=cursor)


@live_db
def test_two_connections_sharing_a_snapshot_give_the_bytes_of_one(world, settings, monkeypatch):
    """Committed (no caller's transaction), an export is built by two
    connections, alternate rows each: the same bytes as one connection
    and as Python, for every filter (none, one, odd and even counts of
    records), a scoped user and a cursor."""
    opened = []
    second_connection = audit_export._second_connection

    def spied(snapshot_id):
        opened.append(snapshot_id)
        return second_connection(snapshot_id)

    monkeypatch.setattr(audit_export, "_second_connection", spied)
    settings.COMPACTION_AUDIT_EXPORT_IN_SQL = True
    cursor = world["staff"].get("/api/v1/audits/", {"page_size": 3}).json()["next_cursor"]
    cases = [(world["staff"], params) for params in FILTERS] + [(world["support"], {}),
                                                               (world["staff"], {"cursor": cursor})]
    counts = set()
    for fmt in ("jsonl", "csv"):
        for client, params in cases:
            settings.COMPACTION_AUDIT_EXPORT_TWO_CONNECTIONS = True
            two = export(client, settings, in_sql=True, format=fmt, **params)
            settings.COMPACTION_AUDIT_EXPORT_TWO_CONNECTIONS = False
            one = export(client, settings, in_sql=True, format=fmt, **params)
            assert two == one == export(client, settings, in_sql=False, format=fmt, **params), (fmt, params)
            counts.add(one.count(b"\n"))
    assert len(opened) == 2 * len(cases)  # every two-connection export did open its second connection
    assert {0, 1} <= counts and any(n % 2 for n in counts if n > 1) and any(n and not n % 2 for n in counts)

    # No second connection to be had (the server's all taken): one builds the export, the same bytes.
    def refused(*args, **kwargs):
        raise psycopg.OperationalError("sorry, too many clients already")

    settings.COMPACTION_AUDIT_EXPORT_TWO_CONNECTIONS = True
    monkeypatch.setattr(audit_export.psycopg, "connect", refused)
    assert export(world["staff"], settings, in_sql=True, format="jsonl") == export(
        world["staff"], settings, in_sql=False, format="jsonl")
    assert len(opened) == 2 * len(cases) + 1


def test_the_compared_export_holds_what_it_claims_to(world, settings):
    """The fixture's records are the hard cases the comparison is about."""
    lines = export(world["staff"], settings, in_sql=True, format="jsonl").decode().split("\n")[:-1]
    records = [json.loads(line) for line in lines]
    by_job = {r["job"]: r for r in records}
    assert {r["state"] for r in records} >= {"succeeded", "exhausted", "pending", "running"}
    assert {r["kind"] for r in records} == {"segment", "handoff"}
    assert any(r["current_digest"] is None for r in records) and any(not r["source_valid"] for r in records)
    assert any(r["chain_break"] for r in records)
    done = by_job[world["done"].pk]
    assert done["review"]["verdict"] == "approved" and done["review"]["reviewer"] == "=evil"
    assert done["generation"]["text"].endswith(AWKWARD) and done["drift"] is None
    rolling = [r for r in records if r["kind"] == "handoff"]
    assert [len(r["drift"]) for r in rolling] == [0, 2, 1]
    assert rolling[1]["drift"][1] == {"kind": "lost", "code": "lost_constraint", "section": None, "line": None,
                                      "message_ids": []}
    assert any(a["finished_at"] is None and a["input_tokens"] is None for r in records for a in r["attempts"])
    assert any(r["created_at"].endswith(":00Z") for r in records)  # a time without microseconds
    raw = "\n".join(lines)
    assert '\\u0001' in raw and '\\r\\n\\t' in raw and "\u2028" in raw and "\\\\ back" in raw

    rows = list(csv.reader(io.StringIO(export(world["staff"], settings, in_sql=True, format="csv").decode(),
                                       newline="")))
    assert rows[0][-1] == "drift" and len(rows) == len(records) + 1
    cells = [cell for row in rows[1:] for cell in row]
    assert "'=HYPERLINK(\"http://evil\"), 会话" in cells and "'=evil" in cells and "'-model" in cells
    assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r", "\n")) for cell in cells)


def test_the_csv_ends_rows_with_crlf_and_keeps_line_breaks_inside_quoted_cells(world, settings):
    body = export(world["staff"], settings, in_sql=True, format="csv")
    assert body.startswith(b"job,scope,") and body.endswith(b"\r\n")
    assert "- 第二行\r\n\ttab".encode() in body  # inside a quoted cell, as written


def _plan_nodes(node: dict, *, subplans: bool = True):
    """Every node of a plan; without ``subplans``, not those of per-row
    lookups (SubPlan, InitPlan: the verdict that stands reads other jobs of
    the range through their own index)."""
    yield node
    for child in node.get("Plans", []):
        if subplans or child.get("Parent Relationship") not in ("SubPlan", "InitPlan"):
            yield from _plan_nodes(child, subplans=subplans)


@pytest.mark.parametrize("params, indexes", [
    ({"scope": "default"}, {"job_scope_created"}),
    ({"scope": "default", "state": "exhausted", "verdict": "none"}, {"job_scope_created", "job_scope_state_created"}),
], ids=["scope", "scope&state&verdict"])
@pytest.mark.parametrize("half", [None, 1, 0], ids=["one connection", "odd rows", "even rows"])
def test_one_scope_is_read_through_an_index_in_the_export_order(world, params, indexes, half):
    from django.test import RequestFactory
    from rest_framework.request import Request

    from compaction.api.audits import AUDITS, AuditListApi

    view = AuditListApi()
    request = Request(RequestFactory().get("/api/v1/audits/", params))
    request.user = User.objects.get(username="root")
    view.request, view.format_kwarg = request, None
    queryset = AUDITS.after(view.filter_queryset(view.get_queryset()), None)
    sql, params = audit_export.export_sql(queryset, fmt="csv", half=half)
    _scope_one_percent_of_the_jobs()
    with audit_export._snapshot(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # a table this small would be read whole
        cursor.execute(cursor.cursor.mogrify("EXPLAIN (FORMAT JSON) " + sql, params))
        (plan,) = cursor.fetchone()[0]
    nodes = list(_plan_nodes(plan["Plan"]))
    jobs = [n for n in _plan_nodes(plan["Plan"], subplans=False) if n.get("Relation Name") == "compaction_compactionjob"]
    # The scan that drives the export (the outer side, first in the plan) reads the scope's index.
    assert jobs[0]["Node Type"] == "Index Scan" and jobs[0]["Index Name"] in indexes
    # Per-row lookups of the job table go through an index too: never a scan of it.
    assert {n["Node Type"] for n in nodes if n.get("Relation Name") == "compaction_compactionjob"} <= {
        "Index Scan", "Index Only Scan", "Bitmap Index Scan", "Bitmap Heap Scan"}
    # Nothing between the job scan and the client sorts or gathers the whole result.
    assert not {"Sort", "Incremental Sort", "Gather", "Gather Merge", "Hash Join"} & {
        n["Node Type"] for n in nodes if n.get("Parent Relationship") != "SubPlan" and not _under_lateral(n, nodes)}


def _scope_one_percent_of_the_jobs():
    """The planner sees what the bench measures: the exported scope is 1% of
    the job table (copies of its jobs in another scope), with statistics
    taken now. Left to autovacuum, whether the tiny fixture had statistics
    yet, and so which plan won, depended on timing."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT column_name FROM information_schema.columns WHERE table_name = "
                       "'compaction_compactionjob' AND column_name <> 'id' ORDER BY ordinal_position")
        columns = [name for (name,) in cursor.fetchall()]
        copied = {"scope": "'elsewhere'", "model_id": "model_id || '-' || g"}
        cursor.execute(
            f"INSERT INTO compaction_compactionjob ({', '.join(columns)}) "
            f"SELECT {', '.join(copied.get(c, c) for c in columns)} "
            "FROM compaction_compactionjob, generate_series(1, 99) AS g")
        cursor.execute("ANALYZE compaction_compactionjob")


def test_a_half_export_needs_an_order_that_ends_ties_by_id(world):
    from compaction.audit import audit_jobs

    jobs = audit_jobs(user=User.objects.get(username="root"))
    with pytest.raises(ValueError, match="ends ties by id"):
        audit_export.export_sql(jobs.order_by("created_at"), fmt="jsonl", half=1)
    assert "rn %% 2 = 0" in audit_export.export_sql(jobs.order_by("-created_at", "-id"), fmt="jsonl", half=0)[0]
    audit_export.export_sql(jobs.order_by("created_at"), fmt="jsonl")  # one connection: any order


def _under_lateral(node: dict, nodes: list[dict]) -> bool:
    """Inside the per-row review lookup (its own small sort is fine)."""
    return node["Node Type"] in ("Sort", "Incremental Sort") and any(
        node in p.get("Plans", []) and p["Node Type"] == "Limit" for p in nodes)


# --- the SQL pieces against their Python rules, on any text -----------------------

_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12)
_AWKWARD_TEXT = st.one_of(_TEXT, st.sampled_from([", ", '", "', '\\', '\\"', '", ', '"', "", "=1", "-", "\u2028"]))


def _sql(expression: str, value):
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + expression, {"v": value})
        return cursor.fetchone()[0]


@examples(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ids=st.lists(_AWKWARD_TEXT, max_size=6))
def test_a_stored_list_of_ids_is_written_as_python_writes_it(db, ids):
    assert _sql(audit_export._j_ids("%(v)s::jsonb"), json.dumps(ids)) == json.dumps(
        ids, ensure_ascii=False, separators=(",", ":"))


@examples(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_AWKWARD_TEXT)
def test_text_is_escaped_and_neutralised_as_python_does_it(db, text):
    assert _sql(audit_export._j_text("%(v)s::text"), text) == json.dumps(text, ensure_ascii=False)
    cell = _sql(audit_export._csv_text("%(v)s::text"), text)
    assert (cell or "") == csv_cell(text)


@examples(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(moment=st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30),
                           timezones=st.sampled_from([timezone.utc, timezone(timedelta(hours=-5, minutes=-30))])))
def test_times_are_spelled_as_python_spells_them(db, moment):
    assert _sql(audit_export._iso("%(v)s::timestamptz"), moment) == iso(moment.astimezone(timezone.utc))


# --- one snapshot; a client that goes away ------------------------------------------

def _planned_jobs(n_pairs: int, *, text: str = "summary") -> list[CompactionJob]:
    conv = ingest(n_pairs, external_id=f"big-{n_pairs}")
    jobs = conversation_plan(conversation=conv)
    for job in jobs:
        succeed(job, text=text)
    return jobs


@live_db
def test_the_export_runs_in_a_repeatable_read_read_only_transaction():
    with audit_export._snapshot(), connection.cursor() as cursor:
        cursor.execute("SHOW transaction_isolation")
        assert cursor.fetchone()[0] == "repeatable read"
        cursor.execute("SHOW transaction_read_only")
        assert cursor.fetchone()[0] == "on"
        cursor.execute("SHOW enable_sort")
        assert cursor.fetchone()[0] == "off"
    with connection.cursor() as cursor:
        cursor.execute("SHOW enable_sort")  # its planner settings went with it
        assert cursor.fetchone()[0] == "on"


def _planner(execute) -> dict:
    return {name: execute(f"SHOW {name}") for name in audit_export.PLANNER}


@live_db
def test_the_second_connection_plans_in_the_snapshot_with_the_same_settings():
    """The connection that builds every other record reads the export's
    snapshot with the export's planner settings, for its transaction only."""
    with audit_export._snapshot(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_export_snapshot()")
        other = audit_export._second_connection(cursor.fetchone()[0])
        assert other is not None

        def show(sql):
            cursor.execute(sql)
            return cursor.fetchone()[0]

        try:
            def show_other(sql):
                return other.execute(sql).fetchone()[0]

            assert _planner(show_other) == _planner(show) == audit_export.PLANNER
            assert (show_other("SHOW transaction_isolation"), show_other("SHOW transaction_read_only")) == (
                "repeatable read", "on")
            other.execute("COMMIT")
            assert _planner(show_other) != audit_export.PLANNER  # they went with its transaction
        finally:
            other.close()


@live_db
@pytest.mark.parametrize("in_sql", [True, False], ids=["sql", "python"])
def test_an_export_is_one_snapshot_whatever_is_written_meanwhile(settings, monkeypatch, in_sql):
    import threading

    settings.COMPACTION_AUDIT_EXPORT_IN_SQL = in_sql
    settings.COMPACTION_API_EXPORT_CHUNK = 2  # the Python builder reads two jobs at a time
    monkeypatch.setattr(audit_export, "CHUNK_BYTES", 1)  # one line per chunk
    jobs = _planned_jobs(235)
    client = client_for(make_user("root", staff=True, scopes=()))
    before = b"".join(client.get("/api/v1/audits/", {"format": "jsonl"}).streaming_content)

    response = client.get("/api/v1/audits/", {"format": "jsonl"})
    lines = iter(response.streaming_content)
    first = next(lines)  # the export's transaction is open, its COPY under way

    def write_meanwhile():
        try:
            CompactionJob.objects.filter(pk__in=[j.pk for j in jobs]).update(state=JobState.STALE)
            attempt(jobs[-1], 9, outcome=AttemptOutcome.FAILED, failure_code="tool_calls")
            Review.objects.create(job=jobs[-1], generation=jobs[-1].generation,
                                  reviewer=User.objects.get(username="root"), verdict="approved")
            _planned_jobs(45)
        finally:
            connection.close()

    writer = threading.Thread(target=write_meanwhile)
    writer.start()
    writer.join(30)
    assert not writer.is_alive()
    during = first + b"".join(lines)
    response.close()
    after = b"".join(client.get("/api/v1/audits/", {"format": "jsonl"}).streaming_content)
    assert during == before
    assert after != before and after.count(b"\n") == before.count(b"\n") + 2  # the writes did land


@live_db
def test_a_client_that_goes_away_frees_the_worker_and_the_database_connection_at_once(tmp_path):
    import socket
    import struct
    import subprocess
    import sys
    import time
    from pathlib import Path

    from tests.compaction.conftest import subprocess_env

    _planned_jobs(100, text="x" * (4 << 20))  # 8 jobs, 32 MiB of export: more than any socket buffer holds
    token = token_for(make_user("root", staff=True, scopes=()))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # One process, one thread: while an export holds it, nothing else is served.
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", "--noreload", "--nothreading", f"127.0.0.1:{port}"],
        cwd=Path(__file__).resolve().parents[2], env=subprocess_env(COMPACTION_AUDIT_EXPORT_IN_SQL="1"),
        stdout=subprocess.DEVNULL, stderr=(tmp_path / "server.log").open("w"))

    def request(path: str) -> socket.socket:
        deadline = time.monotonic() + 60
        while True:
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=30)
                break
            except ConnectionRefusedError:
                assert time.monotonic() < deadline and server.poll() is None, (tmp_path / "server.log").read_text()
                time.sleep(0.2)
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Token {token}\r\n"
                     "Connection: close\r\n\r\n".encode())
        return sock

    def exports() -> list[tuple[int, str]]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pid, state FROM pg_stat_activity WHERE datname = current_database() "
                           "AND pid <> pg_backend_pid() AND query LIKE 'COPY (SELECT%%' AND state <> 'idle'")
            return cursor.fetchall()

    try:
        sock = request("/api/v1/audits/?format=jsonl")
        received = b""
        while len(received) < 256 * 1024:
            received += sock.recv(65536)
        assert received.startswith(b"HTTP/1.1 200")
        # Both COPYs under way (each connection builds every other record), held by the client.
        assert [state for _, state in exports()] == ["active", "active"]
        # Gone without a word: a reset, as a client that crashes or loses its network.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
        gone = time.monotonic()
        while exports():
            assert time.monotonic() - gone < 5, exports()
            time.sleep(0.05)
        freed = time.monotonic() - gone
        with request("/api/v1/audits/?page_size=1") as sock:
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        served = time.monotonic() - gone
    finally:
        server.terminate()
        server.wait(10)
    assert answer.startswith(b"HTTP/1.1 200"), answer[:300]
    assert freed < 2 and served < 5, (freed, served)
