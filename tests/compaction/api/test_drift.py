"""Drift findings through the REST API (SPEC §8, §11): a rolling job's
audit record carries ``drift``, a generation's GET returns its findings,
the audit list and its exports filter by finding code, and the CSV has a
``drift`` column."""

from __future__ import annotations

import csv
import io
import json

import pytest

from compaction.audit import CSV_COLUMNS
from compaction.models import DriftFinding
from tests.compaction.api.conftest import rolling_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(db):
    world = rolling_world()
    # The third note's findings are taken away: a rolling job without findings.
    DriftFinding.objects.filter(generation=world["generations"][2]).delete()
    return world


def _expected(generation):
    return [{"kind": f.kind, "code": f.code, "section": f.section, "line": f.line, "message_ids": f.message_ids}
            for f in DriftFinding.objects.filter(generation=generation).order_by("position")]


def test_a_rolling_jobs_audit_record_carries_its_generations_drift_and_a_segments_is_null(world):
    client, generations = world["client"], world["generations"]
    g1 = generations[0]
    assert _expected(g1), "the scripted notes quote words no user said"
    record = client.get(f"/api/v1/audits/{g1.job_id}/").json()
    assert record["drift"] == _expected(g1)
    assert set(record["drift"][0]) == {"kind", "code", "section", "line", "message_ids"}
    assert client.get(f"/api/v1/audits/{generations[2].job_id}/").json()["drift"] == []
    assert client.get(f"/api/v1/audits/{world['segment_job'].pk}/").json()["drift"] is None


def test_a_generations_get_returns_its_findings(world):
    client, conversation, (g1, g2, g3) = world["client"], world["conversation"], world["generations"]
    response = client.get(f"/api/v1/conversations/{conversation.pk}/generations/{g1.pk}/")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["id"] == g1.pk and body["text"] == g1.text and body["drift_checked"] is True
    stored = list(DriftFinding.objects.filter(generation=g1).order_by("position"))
    assert [(f["id"], f["code"], f["line"], f["detail"], f["subject"]) for f in body["drift"]] == [
        (f.pk, f.code, f.line, f.detail, f.subject) for f in stored]
    listed = client.get(f"/api/v1/conversations/{conversation.pk}/generations/").json()["results"]
    assert [len(r["drift"]) for r in listed] == [DriftFinding.objects.filter(generation=g).count()
                                                 for g in (g1, g2, g3)]


def test_a_generation_of_another_conversation_is_not_found(world):
    client, g1 = world["client"], world["generations"][0]
    other = world["segment_job"].conversation_id
    response = client.get(f"/api/v1/conversations/{other}/generations/{g1.pk}/")
    assert response.status_code == 404 and response.json()["code"] == "not_found"


def test_the_audit_list_filters_by_drift_code_and_by_drift_found(world):
    client, generations = world["client"], world["generations"]
    code = DriftFinding.objects.filter(generation=generations[0]).first().code
    with_code = {g.job_id for g in generations if DriftFinding.objects.filter(generation=g, code=code).exists()}
    rows = client.get("/api/v1/audits/", {"drift_code": code}).json()["results"]
    assert {r["job"] for r in rows} == with_code and generations[2].job_id not in with_code
    assert all(any(f["code"] == code for f in r["drift"]) for r in rows)
    found = {r["job"] for r in client.get("/api/v1/audits/", {"drift_found": "true"}).json()["results"]}
    assert found == {g.job_id for g in generations if DriftFinding.objects.filter(generation=g).exists()}
    clean = {r["job"] for r in client.get("/api/v1/audits/", {"drift_found": "false"}).json()["results"]}
    assert {generations[2].job_id, world["segment_job"].pk} <= clean and not clean & found


def test_an_unknown_drift_code_is_a_400_naming_the_field(world):
    response = world["client"].get("/api/v1/audits/", {"drift_code": "made_up"})
    assert response.status_code == 400
    assert "drift_code" in json.dumps(response.json())


def test_the_exports_filter_by_drift_code_and_the_csv_has_a_drift_column(world):
    client, generations = world["client"], world["generations"]
    code = DriftFinding.objects.filter(generation=generations[0]).first().code
    lines = b"".join(client.get("/api/v1/audits/", {"drift_code": code, "format": "jsonl"}).streaming_content)
    records = [json.loads(line) for line in lines.decode().splitlines()]
    assert records and all(any(f["code"] == code for f in r["drift"]) for r in records)
    body = b"".join(client.get("/api/v1/audits/", {"format": "csv"}).streaming_content).decode()
    rows = list(csv.DictReader(io.StringIO(body)))
    assert "drift" in CSV_COLUMNS and CSV_COLUMNS[-1] == "drift"
    by_job = {int(r["job"]): r for r in rows}
    assert json.loads(by_job[generations[0].job_id]["drift"]) == _expected(generations[0])
    assert by_job[generations[2].job_id]["drift"] == "[]"
    assert by_job[world["segment_job"].pk]["drift"] == ""


def test_a_verdict_through_the_api_cites_findings_of_its_note(world):
    client, (g1, g2, g3) = world["client"], world["generations"]
    mine = list(DriftFinding.objects.filter(generation=g1).values_list("pk", flat=True))
    response = client.post("/api/v1/reviews/", {"job": g1.job_id, "verdict": "needs_work", "note": "made-up quote",
                                                "cited_findings": mine[:1]}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["cited_findings"] == mine[:1]
    foreign = DriftFinding.objects.filter(generation=g2).first().pk
    response = client.post("/api/v1/reviews/", {"job": g1.job_id, "verdict": "approved", "note": "fine",
                                                "cited_findings": [foreign]}, format="json")
    assert response.status_code == 400 and response.json()["code"] == "invalid_citation"
    assert "cited_findings" in response.json()["errors"]
