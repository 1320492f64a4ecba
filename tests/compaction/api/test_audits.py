"""GET /api/v1/audits/: one record per job with its whole source binding
(SPEC §8), filters, keyset pagination and per-role access (issue 6)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from compaction.models import CompactionJob, JobState
from compaction.bindings.segments import conversation_plan
from conversations.documents import validate_document
from conversations.services.ingest import conversation_ingest
from tests.compaction.api.conftest import client_for, exhaust, ingest, succeed
from tests.factories import conversation_document

pytestmark = pytest.mark.django_db

SPEC_KEYS = {
    "job", "scope", "conversation", "conversation_external_id", "from_pair", "to_pair", "message_ids",
    "source_digest", "current_digest", "source_valid", "model", "prompt_version", "state", "attempts",
    "generation", "review",
}
ATTEMPT_KEYS = {"number", "started_at", "finished_at", "outcome", "failure_code", "finish_reason",
                "input_tokens", "output_tokens", "latency_ms"}


def records(client, **params):
    response = client.get("/api/v1/audits/", params)
    assert response.status_code == 200, response.content
    return response.json()["results"]


def by_job(rows):
    return {row["job"]: row for row in rows}


def test_record_carries_every_spec_key_with_the_whole_binding(clients, history):
    rows = by_job(records(clients["staff"]))
    done = rows[history["done"].pk]
    assert SPEC_KEYS <= set(done)
    assert done["scope"] == "default"
    assert done["conversation"] == history["conv"].pk and done["conversation_external_id"] == "conv-1"
    assert (done["from_pair"], done["to_pair"]) == (0, 9)
    assert len(done["message_ids"]) == 20 and done["message_ids"][:2] == ["u-0", "a-0"]
    assert done["source_digest"] == history["done"].source_digest == done["current_digest"]
    assert done["source_valid"] is True
    assert done["model"] == "extractive-v2" and done["prompt_version"] == "conversation-compaction@3"
    assert done["state"] == "succeeded"
    assert done["generation"] == {
        "id": history["generation"].pk, "number": 1, "text": history["generation"].text,
        "created_at": done["generation"]["created_at"],
    }
    (only,) = done["attempts"]
    assert ATTEMPT_KEYS <= set(only)
    assert only["outcome"] == "succeeded" and only["failure_code"] is None
    assert (only["input_tokens"], only["output_tokens"], only["latency_ms"]) == (1200, 300, 2900)


def test_record_review_is_the_newest_verdict_with_reviewer_and_note(clients, history):
    done = by_job(records(clients["staff"]))[history["done"].pk]
    assert done["review"]["verdict"] == "approved"
    assert done["review"]["reviewer"] == "sam" and done["review"]["note"] == "ok now"
    assert by_job(records(clients["staff"]))[history["failed"].pk]["review"] is None


def test_failed_job_lists_every_attempt_and_why_it_failed(clients, history):
    failed = by_job(records(clients["staff"]))[history["failed"].pk]
    assert failed["state"] == "exhausted" and failed["generation"] is None
    assert [(a["number"], a["outcome"], a["failure_code"], a["finish_reason"]) for a in failed["attempts"]] == [
        (1, "failed", "tool_calls", "tool_calls"), (2, "failed", "tool_calls", "tool_calls")]
    assert failed["attempts"][0]["failure_detail"] == "attempt 1: the model called a tool"


def test_edited_source_makes_the_record_invalid_with_the_digest_recomputed_now(clients, history):
    doc = conversation_document(45)
    doc["messages"][3]["content"] = "Answer 1, corrected afterwards."
    conversation_ingest(document=validate_document(doc), actor="tests")
    done = by_job(records(clients["staff"]))[history["done"].pk]
    assert done["source_valid"] is False
    assert done["current_digest"] != done["source_digest"] == history["done"].source_digest
    assert by_job(records(clients["staff"], source_valid="false"))[history["done"].pk]["job"] == history["done"].pk
    assert history["done"].pk not in by_job(records(clients["staff"], source_valid="true"))


def test_range_no_longer_planned_has_null_current_digest_and_is_invalid(clients, history):
    # Six runs fail: 39 pairs remain, so range 10-19 is no longer a candidate.
    doc = conversation_document(45)
    for run in doc["runs"][3:9]:
        run["status"] = "failed"
    conversation_ingest(document=validate_document(doc), actor="tests")
    failed = by_job(records(clients["staff"]))[history["failed"].pk]
    assert failed["current_digest"] is None and failed["source_valid"] is False


@pytest.mark.parametrize("role", ["staff", "operator", "support", "integrator"])
def test_every_role_reads_audits(clients, history, role):
    assert clients[role].get("/api/v1/audits/").status_code == 200


def test_anonymous_gets_401_and_a_user_without_role_403(clients, history):
    anonymous = clients["anonymous"].get("/api/v1/audits/")
    assert anonymous.status_code == 401 and anonymous.json()["code"] == "not_authenticated"
    norole = clients["norole"].get("/api/v1/audits/")
    assert norole.status_code == 403 and norole.json()["code"] == "permission_denied"


def test_bad_token_gets_401(history):
    response = client_for(token="not-a-token").get("/api/v1/audits/")
    assert response.status_code == 401 and response.json()["code"] == "authentication_failed"


def test_users_see_only_their_scopes(clients, history):
    assert {r["scope"] for r in records(clients["support"])} == {"default"}
    assert {r["scope"] for r in records(clients["operator"])} == {"default", "other"}
    assert {r["scope"] for r in records(clients["staff"])} == {"default", "other"}


def test_token_limited_to_a_scope_sees_only_that_scope(users, history):
    from rest_framework.authtoken.models import Token

    from conversations.models import TokenScope

    token = Token.objects.create(user=users["operator"])
    TokenScope.objects.create(token=token, scopes=["other"])
    rows = records(client_for(token=token.key))
    assert {r["scope"] for r in rows} == {"other"} and [r["job"] for r in rows] == [history["pending"].pk]
    hidden = client_for(token=token.key).get(f"/api/v1/audits/{history['done'].pk}/")
    assert hidden.status_code == 404


def test_session_authentication_works_for_the_desk(users, history):
    from rest_framework.test import APIClient

    client = APIClient()
    assert client.login(username="sam", password="pw-for-tests")
    assert client.get("/api/v1/audits/").status_code == 200


@pytest.mark.parametrize(
    "params, expected",
    [
        ({"scope": "other"}, {"pending"}),
        ({"state": "exhausted"}, {"failed"}),
        ({"state": ["exhausted", "pending"]}, {"failed", "pending"}),
        ({"failure_code": "tool_calls"}, {"failed"}),
        ({"failure_code": "timeout"}, set()),
        ({"prompt_version": "conversation-compaction@3"}, {"done", "failed", "pending"}),
        ({"prompt_version": "conversation-compaction@2"}, set()),
        ({"verdict": "approved"}, {"done"}),
        ({"verdict": "needs_work"}, set()),
        ({"verdict": "none"}, {"failed", "pending"}),
        ({"verdict": ["none", "approved"]}, {"done", "failed", "pending"}),
        ({"source_valid": "true"}, {"done", "failed", "pending"}),
        ({"source_valid": "false"}, set()),
        ({"conversation_external_id": "conv-2"}, {"pending"}),
    ],
)
def test_filters_select_the_matching_jobs(clients, history, params, expected):
    got = {r["job"] for r in records(clients["staff"], **params)}
    assert got == {history[name].pk for name in expected}


def test_conversation_filter_takes_the_conversation_id(clients, history):
    got = {r["job"] for r in records(clients["staff"], conversation=history["other"].pk)}
    assert got == {history["pending"].pk}


def test_time_filters_take_any_offset_python_reads(clients, history):
    # PostgreSQL refuses offsets beyond ±15:59; the filter compares in UTC.
    # Each bound is checked from both sides, so an ignored filter fails.
    assert len(records(clients["staff"], updated_after="1619-03-25T23:26:50.5+18:50")) == 3
    assert records(clients["staff"], updated_before="1619-03-25T23:26:50.5+18:50") == []
    assert records(clients["staff"], updated_after="9000-01-01T00:00:00-18:50") == []
    assert records(clients["staff"], created_after="9000-01-01T00:00:00+18:50") == []
    assert len(records(clients["staff"], created_before="9000-01-01T00:00:00+18:50")) == 3


def test_created_and_updated_ranges(clients, history):
    pending = CompactionJob.objects.get(pk=history["pending"].pk)
    stamp = pending.created_at.isoformat()
    assert {r["job"] for r in records(clients["staff"], created_after=stamp)} == {pending.pk}
    assert pending.pk not in {r["job"] for r in records(clients["staff"], created_before=stamp)}
    newest = max(CompactionJob.objects.values_list("updated_at", flat=True))
    assert {r["job"] for r in records(clients["staff"], updated_after=pending.updated_at.isoformat())} >= {pending.pk}
    assert {r["job"] for r in records(clients["staff"], updated_after=newest.isoformat())} == set(
        CompactionJob.objects.filter(updated_at=newest).values_list("pk", flat=True))
    assert pending.pk not in {r["job"] for r in records(clients["staff"], updated_before=pending.updated_at.isoformat())}
    assert records(clients["staff"], updated_before="2000-01-01T00:00:00Z") == []


@pytest.mark.parametrize(
    "params, code, field",
    [
        ({"colour": "red"}, "unknown_filter", "colour"),
        ({"state": "sleeping"}, "invalid_filter", "state"),
        ({"source_valid": "maybe"}, "invalid_filter", "source_valid"),
        ({"conversation": "abc"}, "invalid_filter", "conversation"),
        ({"conversation": "0"}, "invalid_filter", "conversation"),
        ({"created_after": "yesterday"}, "invalid_filter", "created_after"),
        ({"created_after": "0001-01-01T00:00:00+05:00"}, "invalid_filter", "created_after"),
        ({"state": ""}, "invalid_filter", "state"),
        ({"scope": ["default", "other"]}, "invalid_filter", "scope"),
        ({"page_size": ["5", "6"]}, "invalid_filter", "page_size"),
        ({"page_size": "0"}, "invalid_filter", "page_size"),
        ({"page_size": "501"}, "invalid_filter", "page_size"),
        ({"cursor": "not-a-cursor"}, "invalid_cursor", "cursor"),
        ({"format": "xml"}, "invalid_format", "format"),
    ],
)
def test_bad_query_is_refused_with_a_code_and_the_field(clients, history, params, code, field):
    response = clients["staff"].get("/api/v1/audits/", params)
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] == code and body["message"] and field in body["errors"]


def test_pages_walk_every_job_once_in_creation_order(clients, history):
    seen, url = [], "/api/v1/audits/?page_size=2"
    while url:
        body = clients["staff"].get(url).json()
        seen += [r["job"] for r in body["results"]]
        url = body["next"]
    expected = list(CompactionJob.objects.order_by("created_at", "id").values_list("pk", flat=True))
    assert seen == expected and len(seen) == 3


def test_cursor_is_stable_while_rows_are_inserted_between_pages(clients, history):
    first = clients["staff"].get("/api/v1/audits/", {"page_size": 2}).json()
    # New jobs arrive between the two page requests.
    more = ingest(55, external_id="conv-3")
    new_jobs = conversation_plan(conversation=more)
    assert len(new_jobs) == 3
    rest, url = [], first["next"]
    while url:
        body = clients["staff"].get(url).json()
        rest += [r["job"] for r in body["results"]]
        url = body["next"]
    walked = [r["job"] for r in first["results"]] + rest
    assert len(walked) == len(set(walked)) == 6
    assert walked[:3] == [history["done"].pk, history["failed"].pk, history["pending"].pk]
    assert walked[3:] == [j.pk for j in new_jobs]


def test_cursor_of_another_list_is_refused(clients, history):
    from compaction.actions import activity_log

    for _ in range(3):
        activity_log(actor=None, action="job.rerun", target_type="job", target_id=1, scope="default")
    activity_cursor = clients["staff"].get("/api/v1/activity/", {"page_size": 1}).json()["next_cursor"]
    response = clients["staff"].get("/api/v1/audits/", {"cursor": activity_cursor})
    assert response.status_code == 400 and response.json()["code"] == "invalid_cursor"


def test_a_page_costs_a_fixed_number_of_queries(clients, users, history):
    for i in range(6):
        conv = ingest(45, external_id=f"bulk-{i}")
        for job in conversation_plan(conversation=conv):
            exhaust(job)
    client = clients["staff"]
    client.get("/api/v1/audits/", {"page_size": 5})  # warm caches (groups, token)
    with CaptureQueriesContext(connection) as small:
        client.get("/api/v1/audits/", {"page_size": 5})
    with CaptureQueriesContext(connection) as large:
        client.get("/api/v1/audits/", {"page_size": 15})
    assert len(small) == len(large)


def test_detail_returns_one_record_and_404_outside_scope(clients, history):
    response = clients["support"].get(f"/api/v1/audits/{history['done'].pk}/")
    assert response.status_code == 200 and response.json()["job"] == history["done"].pk
    hidden = clients["support"].get(f"/api/v1/audits/{history['pending'].pk}/")
    assert hidden.status_code == 404 and hidden.json()["code"] == "not_found"


def test_unknown_api_url_is_a_json_404(clients):
    response = clients["staff"].get("/api/v1/no-such-thing/")
    assert response.status_code == 404 and response.json()["code"] == "not_found"


def test_stale_job_state_is_reported(clients, history):
    CompactionJob.objects.filter(pk=history["failed"].pk).update(state=JobState.STALE)
    assert by_job(records(clients["staff"], state="stale")).keys() == {history["failed"].pk}


def test_generation_text_is_returned_as_data(clients, users):
    conv = ingest(35, external_id="html")
    (job,) = conversation_plan(conversation=conv)
    succeed(job, text="<script>alert(1)</script> =SUM(A1)")
    row = by_job(records(clients["staff"]))[job.pk]
    assert row["generation"]["text"] == "<script>alert(1)</script> =SUM(A1)"


def test_unknown_page_outside_the_api_is_not_json(clients):
    response = clients["staff"].get("/no-such-page/")
    assert response.status_code == 404 and not response["Content-Type"].startswith("application/json")


def test_every_api_operation_documents_its_errors():
    from drf_spectacular.generators import SchemaGenerator

    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]
    ours = {
        ("/api/v1/audits/", "get"), ("/api/v1/audits/{job_id}/", "get"), ("/api/v1/activity/", "get"),
        ("/api/v1/jobs/{job_id}/rerun/", "post"), ("/api/v1/jobs/{job_id}/grant-attempt/", "post"),
        ("/api/v1/conversations/{conversation_id}/compact/", "post"), ("/api/v1/reviews/", "post"),
    }
    for path, method in ours:
        operation = paths[path][method]
        assert {"400", "401", "403"} <= set(operation["responses"]), (path, method)
        if method == "post":
            assert {"404", "409", "429"} <= set(operation["responses"]), path
            assert operation["requestBody"]["required"] is True, path
    assert set(paths["/api/v1/audits/"]["get"]["responses"]["200"]["content"]) == {
        "application/json", "application/x-ndjson", "text/csv"}
