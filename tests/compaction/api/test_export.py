"""GET /api/v1/audits/?format=jsonl|csv streams every matching record over a
server-side cursor; the CSV is safe to open in a spreadsheet (issue 6)."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.http import StreamingHttpResponse

from compaction.audit import CSV_COLUMNS
from compaction.bindings.segments import conversation_plan
from tests.compaction.api.conftest import exhaust, ingest, succeed

pytestmark = pytest.mark.django_db


def stream(client, **params) -> tuple[StreamingHttpResponse, str]:
    response = client.get("/api/v1/audits/", params)
    assert response.status_code == 200, response.content
    assert isinstance(response, StreamingHttpResponse) and response.streaming
    return response, b"".join(response.streaming_content).decode("utf-8")


def test_jsonl_is_one_record_per_line_equal_to_the_paged_json(clients, history):
    response, text = stream(clients["staff"], format="jsonl")
    assert response["Content-Type"].startswith("application/x-ndjson")
    lines = text.splitlines()
    assert len(lines) == 3
    streamed = [json.loads(line) for line in lines]
    paged = clients["staff"].get("/api/v1/audits/").json()["results"]
    assert streamed == paged


def test_jsonl_honours_filters(clients, history):
    _, text = stream(clients["staff"], format="jsonl", state="exhausted")
    assert [json.loads(line)["job"] for line in text.splitlines()] == [history["failed"].pk]


def test_export_streams_more_than_one_chunk(clients, history, settings):
    settings.COMPACTION_API_EXPORT_CHUNK = 2
    _, text = stream(clients["staff"], format="jsonl")
    jobs = [json.loads(line)["job"] for line in text.splitlines()]
    assert jobs == [history["done"].pk, history["failed"].pk, history["pending"].pk]
    rows = {json.loads(line)["job"]: json.loads(line) for line in text.splitlines()}
    assert len(rows[history["failed"].pk]["attempts"]) == 2  # attempts fetched for the second chunk too


def test_csv_has_a_header_row_and_one_row_per_record(clients, history):
    response, text = stream(clients["staff"], format="csv")
    assert response["Content-Type"].startswith("text/csv")
    assert 'filename="audits.csv"' in response["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(text)))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert len(rows) == 4
    by_job = {int(r[0]): dict(zip(CSV_COLUMNS, r)) for r in rows[1:]}
    failed = by_job[history["failed"].pk]
    assert failed["state"] == "exhausted" and failed["source_valid"] == "true"
    assert [a["failure_code"] for a in json.loads(failed["attempts"])] == ["tool_calls", "tool_calls"]
    assert len(json.loads(failed["message_ids"])) == 20
    done = by_job[history["done"].pk]
    assert done["review_verdict"] == "approved" and done["review_reviewer"] == "sam"
    assert done["generation_text"] == history["generation"].text


def test_csv_neutralises_cells_that_a_spreadsheet_would_run(clients, users):
    conv = ingest(35, external_id="=HYPERLINK(\"http://evil\")")
    (job,) = conversation_plan(conversation=conv)
    succeed(job, text="=cmd|' /C calc'!A0")
    from compaction.models import Review

    Review.objects.create(job=job, generation=job.generation, reviewer=users["support"], verdict="needs_work",
                          note="@SUM(1+1)")
    conv2 = ingest(35, external_id="+1-555", scope="default")
    (job2,) = conversation_plan(conversation=conv2)
    exhaust(job2)
    from compaction.models import Attempt

    Attempt.objects.filter(job=job2).update(failure_detail="-2+3")
    _, text = stream(clients["staff"], format="csv")
    rows = {int(r[0]): dict(zip(CSV_COLUMNS, r)) for r in list(csv.reader(io.StringIO(text)))[1:]}
    first = rows[job.pk]
    assert first["conversation_external_id"] == "'=HYPERLINK(\"http://evil\")"
    assert first["generation_text"] == "'=cmd|' /C calc'!A0"
    assert first["review_note"] == "'@SUM(1+1)"
    assert rows[job2.pk]["conversation_external_id"] == "'+1-555"
    for row in rows.values():
        for value in row.values():
            assert not value.startswith(("=", "+", "-", "@", "\t", "\r")), value


def test_export_errors_are_json_even_when_csv_was_asked_for(clients, history):
    response = clients["staff"].get("/api/v1/audits/", {"format": "csv", "state": "bogus"})
    assert response.status_code == 400
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["code"] == "invalid_filter"


def test_export_refuses_page_size_and_bad_cursor(clients, history):
    paged = clients["staff"].get("/api/v1/audits/", {"format": "jsonl", "page_size": 5})
    assert paged.status_code == 400 and paged.json()["code"] == "invalid_filter"
    bad = clients["staff"].get("/api/v1/audits/", {"format": "csv", "cursor": "xx"})
    assert bad.status_code == 400 and bad.json()["code"] == "invalid_cursor"


def test_export_resumes_after_a_cursor(clients, history):
    cursor = clients["staff"].get("/api/v1/audits/", {"page_size": 1}).json()["next_cursor"]
    _, text = stream(clients["staff"], format="jsonl", cursor=cursor)
    assert [json.loads(line)["job"] for line in text.splitlines()] == [history["failed"].pk, history["pending"].pk]


def test_export_respects_scopes_and_roles(clients, history):
    _, text = stream(clients["support"], format="jsonl")
    assert {json.loads(line)["scope"] for line in text.splitlines()} == {"default"}
    assert clients["anonymous"].get("/api/v1/audits/", {"format": "csv"}).status_code == 401
    assert clients["norole"].get("/api/v1/audits/", {"format": "csv"}).status_code == 403


def test_accept_header_selects_the_export_too(clients, history):
    response = clients["staff"].get("/api/v1/audits/", HTTP_ACCEPT="text/csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")


SQLITE_EXPORT = r"""
import json
import django
django.setup()
from django.core.management import call_command
from django.test import Client
from compaction.bindings.segments import conversation_plan
from conversations.documents import validate_document
from conversations.services.ingest import conversation_ingest
from tests.factories import conversation_document, make_user, token_for

call_command("migrate", verbosity=0)
conv = conversation_ingest(document=validate_document(conversation_document(45)), actor="t").conversation
jobs = conversation_plan(conversation=conv)
client = Client(HTTP_AUTHORIZATION=f"Token {token_for(make_user('root', staff=True, scopes=()))}")
jsonl = b"".join(client.get("/api/v1/audits/", {"format": "jsonl", "state": "pending"}).streaming_content)
records = [json.loads(line) for line in jsonl.decode().split("\n")[:-1]]
csv_text = b"".join(client.get("/api/v1/audits/", {"format": "csv"}).streaming_content).decode()
assert [r["job"] for r in records] == [j.pk for j in jobs] and records[0]["drift"] is None, records
assert csv_text.startswith("job,scope,") and csv_text.count("\r\n") == len(jobs) + 1, csv_text[:300]
print("sqlite-export-ok", len(records))
"""


def test_on_sqlite_the_export_is_built_in_python(tmp_path):
    from tests.compaction.conftest import run_on_sqlite

    assert "sqlite-export-ok 2" in run_on_sqlite(SQLITE_EXPORT, tmp_path)
