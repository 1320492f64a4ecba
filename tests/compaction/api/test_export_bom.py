"""``?bom=1``: the CSV audit export starts with a UTF-8 byte order mark, so a
spreadsheet opens Chinese text correctly (issue 16 §6)."""

from __future__ import annotations

import csv
import io

import pytest

from compaction.audit import CSV_COLUMNS
from compaction.bindings.segments import conversation_plan
from tests.compaction.api.conftest import ingest, succeed

pytestmark = pytest.mark.django_db

BOM = b"\xef\xbb\xbf"
CHINESE = "基金的管理费为每年1.5%，申购费已打一折 (a-0 .. a-9)。"


@pytest.fixture
def chinese_summary(users):
    conversation = ingest(30, external_id="cn-1")
    (job,) = conversation_plan(conversation=conversation)
    return succeed(job, text=CHINESE)


def export(client, **params):
    response = client.get("/api/v1/audits/", {"format": "csv", **params})
    assert response.status_code == 200, response.content
    return response, b"".join(response.streaming_content)


def test_bom_1_starts_the_csv_with_a_utf8_byte_order_mark_as_its_own_chunk(clients, chinese_summary):
    response, body = export(clients["staff"], bom="1")
    response = clients["staff"].get("/api/v1/audits/", {"format": "csv", "bom": "1"})
    chunks = list(response.streaming_content)
    assert chunks[0] == BOM and not chunks[1].startswith(BOM)
    assert body.startswith(BOM) and body.count(BOM) == 1
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    # What a spreadsheet reads with the mark: the same rows, the Chinese intact.
    rows = list(csv.reader(io.StringIO(body.decode("utf-8-sig"))))
    assert tuple(rows[0]) == CSV_COLUMNS
    record = dict(zip(CSV_COLUMNS, rows[1]))
    assert record["generation_text"] == CHINESE


def test_without_bom_or_with_bom_0_the_csv_starts_with_its_header(clients, chinese_summary):
    for params in ({}, {"bom": "0"}):
        _, body = export(clients["staff"], **params)
        assert body.startswith(b"job,") and BOM not in body
        assert CHINESE.encode("utf-8") in body


@pytest.mark.parametrize("params, message", [
    ({"format": "csv", "bom": "yes"}, "bom: must be 1 or 0, got 'yes'"),
    ({"format": "jsonl", "bom": "1"}, "bom: applies to the csv export only"),
    ({"bom": "1"}, "bom: applies to the csv export only"),
])
def test_a_bad_or_misplaced_bom_is_refused_naming_the_field(clients, chinese_summary, params, message):
    response = clients["staff"].get("/api/v1/audits/", params)
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid_filter" and body["message"] == message and "bom" in body["errors"]


def test_the_schema_documents_bom(clients):
    schema = clients["staff"].get("/api/schema/", {"format": "json"}).json()
    params = {p["name"]: p for p in schema["paths"]["/api/v1/audits/"]["get"]["parameters"]}
    assert params["bom"]["schema"]["enum"] == ["0", "1"]
    assert "byte order mark" in params["bom"]["description"]
