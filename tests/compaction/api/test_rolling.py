"""The REST API of rolling conversations (SPEC §7, §11): generations listed
per conversation with their parent links, audit records of hand-off jobs
carrying their parent generation (segment jobs null) and where their chain
broke, and the projection of a rolling scope."""

from __future__ import annotations

import csv
import io
import json

import pytest

from compaction.audit import CSV_COLUMNS
from compaction.models import DriftFinding
from tests.compaction.api.conftest import client_for, rolling_world
from tests.compaction.bindings.rolling import edit_message
from tests.factories import make_user

pytestmark = pytest.mark.django_db

NEW_KEYS = ["kind", "parent_generation", "parent_digest", "chain_break", "drift"]


@pytest.fixture
def world(db):
    return rolling_world()


def test_generations_are_listed_per_conversation_with_their_parent_links(world):
    client, (g1, g2, g3) = world["client"], world["generations"]
    response = client.get(f"/api/v1/conversations/{world['conversation'].pk}/generations/")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["count"] == 3
    rows = body["results"]
    assert [(r["id"], r["number"], r["parent"], r["from_pair"], r["to_pair"]) for r in rows] == [
        (g1.pk, 1, None, 0, 9), (g2.pk, 2, g1.pk, 10, 19), (g3.pk, 3, g2.pk, 20, 29)]
    assert rows[1]["parent_digest"] == g2.parent_digest and rows[0]["parent_digest"] is None
    assert all(r["kind"] == "handoff" and r["valid"] and r["chain_break"] is None for r in rows)
    assert rows[2]["text"] == g3.text and rows[2]["prompt_version"] == "handoff@1"
    assert rows[2]["current_digest"] == g3.source_digest and rows[2]["job"] == g3.job_id


def test_a_broken_chain_shows_where_it_broke_in_the_generations(world):
    conversation, (g1, g2, g3) = world["conversation"], world["generations"]
    edit_message(conversation, "a-12", "Answer 12: corrected.")
    rows = world["client"].get(f"/api/v1/conversations/{conversation.pk}/generations/").json()["results"]
    assert [r["valid"] for r in rows] == [True, False, False]
    assert rows[1]["chain_break"] == {"generation": g2.pk, "pair": 12} == rows[2]["chain_break"]
    assert rows[1]["current_digest"] != rows[1]["source_digest"]
    assert rows[2]["current_digest"] == rows[2]["source_digest"]  # stale only because its parent is


def test_segment_generations_are_listed_too_without_parents(world):
    rows = world["client"].get(f"/api/v1/conversations/{world['segments'].pk}/generations/").json()["results"]
    assert [(r["kind"], r["parent"], r["valid"]) for r in rows] == [("segment", None, True)]


def test_another_scopes_generations_are_not_found(world):
    outsider = client_for(make_user("sam", role="support", scopes=("elsewhere",)))
    response = outsider.get(f"/api/v1/conversations/{world['conversation'].pk}/generations/")
    assert response.status_code == 404


def test_audit_records_of_rolling_jobs_carry_their_parent_and_segment_jobs_null(world):
    rows = world["client"].get("/api/v1/audits/", {"page_size": 100}).json()["results"]
    by_job = {r["job"]: r for r in rows}
    g1, g2, g3 = world["generations"]
    assert by_job[g2.job_id]["parent_generation"] == g1.pk and by_job[g2.job_id]["parent_digest"] == g2.parent_digest
    assert by_job[g1.job_id]["parent_generation"] is None and by_job[g1.job_id]["kind"] == "handoff"
    segment = by_job[world["segment_job"].pk]
    assert (segment["kind"], segment["parent_generation"], segment["parent_digest"], segment["chain_break"],
            segment["drift"]) == ("segment", None, None, None, None)
    # a rolling job carries its generation's stored findings, in their order
    assert by_job[g1.job_id]["drift"] == [f.as_record() for f in
                                           DriftFinding.objects.filter(generation=g1).order_by("position")]
    record = by_job[g3.job_id]
    assert list(record)[-len(NEW_KEYS):] == NEW_KEYS  # added at the end
    assert record["current_digest"] == record["source_digest"] and record["source_valid"] is True
    assert len(record["message_ids"]) == 20


def test_audit_records_show_where_the_chain_broke(world):
    conversation, (g1, g2, g3) = world["conversation"], world["generations"]
    edit_message(conversation, "u-15", "Request 15: corrected.")
    rows = {r["job"]: r for r in world["client"].get("/api/v1/audits/", {"page_size": 100}).json()["results"]}
    assert rows[g1.job_id]["source_valid"] is True and rows[g1.job_id]["chain_break"] is None
    assert rows[g2.job_id]["source_valid"] is False and rows[g2.job_id]["current_digest"] != g2.source_digest
    assert rows[g3.job_id]["source_valid"] is False
    assert rows[g3.job_id]["current_digest"] == g3.source_digest  # its own pairs match; its chain does not
    assert rows[g2.job_id]["chain_break"] == rows[g3.job_id]["chain_break"] == {"generation": g2.pk, "pair": 15}
    stale = world["client"].get("/api/v1/audits/", {"source_valid": "false"}).json()["results"]
    assert {g2.job_id, g3.job_id} <= {r["job"] for r in stale} and g1.job_id not in {r["job"] for r in stale}


def test_the_csv_export_has_the_new_columns_at_the_end(world):
    edit_message(world["conversation"], "u-15", "Request 15: corrected.")
    assert list(CSV_COLUMNS[-len(NEW_KEYS):]) == NEW_KEYS
    response = world["client"].get("/api/v1/audits/", {"format": "csv"})
    text = b"".join(response.streaming_content).decode()
    assert text.splitlines()[0].endswith("kind,parent_generation,parent_digest,chain_break,drift")
    g2 = world["generations"][1]
    rows = {int(r["job"]): r for r in csv.DictReader(io.StringIO(text))}
    # The chain break as JSON text, then the job's drift findings as JSON text.
    assert json.loads(rows[g2.job_id]["chain_break"]) == {"generation": g2.pk, "pair": 15}
    assert json.loads(rows[g2.job_id]["drift"]) == [
        f.as_record() for f in DriftFinding.objects.filter(generation=g2).order_by("position")]
    assert rows[world["segment_job"].pk]["drift"] == ""  # null for a segment job


def test_the_projection_endpoint_gives_a_rolling_scope_its_note(world):
    conversation, generations = world["conversation"], world["generations"]
    response = world["client"].get(f"/api/v1/conversations/{conversation.pk}/projection",
                                   {"budget_bytes": 100000})
    body = response.json()
    assert response.status_code == 200 and body["complete"] is True
    assert body["blocks"][0]["kind"] == "handoff" and body["blocks"][0]["generation"] == generations[-1].pk
    assert [p["index"] for p in body["pairs"]] == list(range(34))


def test_the_generations_endpoint_is_in_the_schema(world):
    schema = world["client"].get("/api/schema/", HTTP_ACCEPT="application/json").json()
    operation = schema["paths"]["/api/v1/conversations/{conversation_id}/generations/"]["get"]
    assert operation["operationId"] == "list_generations"
    audit = schema["components"]["schemas"]["AuditRecord"]["properties"]
    assert {"kind", "parent_generation", "parent_digest", "chain_break"} <= set(audit)
