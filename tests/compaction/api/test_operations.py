"""POST re-run, grant-attempt, compact and reviews: the desk's actions and
audit events, the same role checks, a required reason (issue 6)."""

from __future__ import annotations

import pytest

from compaction.models import Attempt, AuditEvent, CompactionJob, JobState, Review
from tests.compaction.api.conftest import client_for, ingest

pytestmark = pytest.mark.django_db

REASON = {"reason": "provider outage is over"}


def rerun_url(job):
    return f"/api/v1/jobs/{job.pk}/rerun/"


def grant_url(job):
    return f"/api/v1/jobs/{job.pk}/grant-attempt/"


def replan_url(job):
    return f"/api/v1/jobs/{job.pk}/replan/"


@pytest.mark.parametrize("role", ["staff", "operator"])
def test_operator_reruns_an_exhausted_job_with_a_reason(clients, history, role):
    response = clients[role].post(rerun_url(history["failed"]), REASON, format="json")
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["job"] == history["failed"].pk and body["state"] == "pending" and body["max_attempts"] == 3
    event = AuditEvent.objects.get(action="job.rerun")
    assert event.reason == "provider outage is over" and event.job_id == history["failed"].pk
    assert event.before["state"] == "exhausted" and event.after["state"] == "pending"
    assert event.actor.username == ("root" if role == "staff" else "olga")


def test_grant_attempt_raises_the_limit_by_one_and_is_logged(clients, history):
    response = clients["operator"].post(grant_url(history["failed"]), REASON, format="json")
    assert response.status_code == 202
    job = CompactionJob.objects.get(pk=history["failed"].pk)
    assert (job.state, job.max_attempts) == (JobState.PENDING, 3)
    assert AuditEvent.objects.filter(action="job.grant_attempt", job=job, reason=REASON["reason"]).count() == 1


@pytest.mark.parametrize("url", [rerun_url, grant_url, replan_url])
@pytest.mark.parametrize("role, status", [("support", 403), ("integrator", 403), ("norole", 403), ("anonymous", 401)])
def test_only_operators_may_rerun_or_grant(clients, history, url, role, status):
    response = clients[role].post(url(history["failed"]), REASON, format="json")
    assert response.status_code == status and response.json()["code"]
    assert CompactionJob.objects.get(pk=history["failed"].pk).state == JobState.EXHAUSTED
    assert not AuditEvent.objects.exists()


@pytest.mark.parametrize("body", [{}, {"reason": ""}, {"reason": "   "}, {"reason": None}])
@pytest.mark.parametrize("url", [rerun_url, grant_url])
def test_missing_reason_is_refused_and_nothing_changes(clients, history, url, body):
    fields = ("state", "attempts_used", "max_attempts", "last_failure_code", "updated_at")
    before = CompactionJob.objects.values(*fields).get(pk=history["failed"].pk)
    attempts = Attempt.objects.count()
    response = clients["operator"].post(url(history["failed"]), body, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "reason_required" and "reason" in response.json()["errors"]
    assert before["state"] == JobState.EXHAUSTED
    # Nothing changes: not the job (its state, attempts and limit), no attempt, no audit row.
    assert CompactionJob.objects.values(*fields).get(pk=history["failed"].pk) == before
    assert Attempt.objects.count() == attempts
    assert not AuditEvent.objects.exists()


def test_replan_binds_a_range_whose_source_changed_to_its_current_source(clients, history):
    from conversations.documents import validate_document
    from conversations.services.ingest import conversation_ingest
    from tests.factories import conversation_document

    doc = conversation_document(45)
    doc["messages"][1]["content"] = "Answer 0, corrected."
    conversation_ingest(document=validate_document(doc), actor="tests")
    response = clients["operator"].post(replan_url(history["done"]), REASON, format="json")
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["job"] != history["done"].pk and (body["from_pair"], body["state"]) == (0, "pending")
    assert body["source_valid"] is True and body["source_digest"] != history["done"].source_digest
    event = AuditEvent.objects.get(action="job.replan")
    assert (event.reason, event.before["job"], event.after["job"]) == (REASON["reason"], history["done"].pk, body["job"])
    again = clients["operator"].post(replan_url(history["done"]), REASON, format="json")
    assert again.status_code == 409 and again.json()["code"] == "superseded"


def test_replan_of_a_job_whose_source_did_not_change_is_a_conflict(clients, history):
    response = clients["operator"].post(replan_url(history["failed"]), REASON, format="json")
    assert response.status_code == 409 and response.json()["code"] == "source_unchanged"
    assert not AuditEvent.objects.exists()


def test_rerun_of_a_succeeded_job_is_a_conflict(clients, history):
    response = clients["operator"].post(rerun_url(history["done"]), REASON, format="json")
    assert response.status_code == 409 and response.json()["code"] == "not_rerunnable"
    assert not AuditEvent.objects.exists()


def test_job_outside_the_callers_scopes_is_not_found(users, history):
    outsider = client_for(users["operator"])
    from conversations.models import ScopeGrant

    ScopeGrant.objects.filter(user=users["operator"], scope="default").delete()
    response = outsider.post(rerun_url(history["failed"]), REASON, format="json")
    assert response.status_code == 404 and response.json()["code"] == "not_found"


def test_scope_limited_token_cannot_act_outside_its_scope(users, history):
    from rest_framework.authtoken.models import Token

    from conversations.models import TokenScope

    token = Token.objects.create(user=users["operator"])
    TokenScope.objects.create(token=token, scopes=["other"])
    response = client_for(token=token.key).post(rerun_url(history["failed"]), REASON, format="json")
    assert response.status_code == 404
    assert CompactionJob.objects.get(pk=history["failed"].pk).state == JobState.EXHAUSTED


def test_unknown_job_is_404(clients, history):
    response = clients["operator"].post("/api/v1/jobs/999999/rerun/", REASON, format="json")
    assert response.status_code == 404 and response.json()["code"] == "not_found"


def test_compact_reruns_failed_ranges_and_plans_new_ones(clients, history):
    response = clients["operator"].post(f"/api/v1/conversations/{history['conv'].pk}/compact/", REASON, format="json")
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["conversation"] == history["conv"].pk
    assert [(j["id"], j["state"]) for j in body["jobs"]] == [(history["failed"].pk, "pending")]
    event = AuditEvent.objects.get(action="conversation.rerun")
    assert event.reason == REASON["reason"] and event.after == {"granted": [history["failed"].pk], "planned": []}


def test_compact_plans_jobs_for_a_conversation_that_has_none(clients, users):
    conv = ingest(45, external_id="fresh")
    response = clients["operator"].post(f"/api/v1/conversations/{conv.pk}/compact/", REASON, format="json")
    assert response.status_code == 202
    assert [(j["from_pair"], j["to_pair"], j["state"]) for j in response.json()["jobs"]] == [
        (0, 9, "pending"), (10, 19, "pending")]
    assert CompactionJob.objects.filter(conversation=conv).count() == 2


def test_compact_needs_operator_and_reason(clients, history):
    url = f"/api/v1/conversations/{history['conv'].pk}/compact/"
    assert clients["support"].post(url, REASON, format="json").status_code == 403
    assert clients["anonymous"].post(url, REASON, format="json").status_code == 401
    missing = clients["operator"].post(url, {}, format="json")
    assert missing.status_code == 400 and missing.json()["code"] == "reason_required"
    assert clients["operator"].post("/api/v1/conversations/999999/compact/", REASON, format="json").status_code == 404


@pytest.mark.parametrize("role", ["support", "operator", "staff"])
def test_reviewers_record_a_verdict_that_becomes_current(clients, history, role):
    body = {"job": history["done"].pk, "verdict": "needs_work", "note": "misses the 3.03 EUR fee"}
    response = clients[role].post("/api/v1/reviews/", body, format="json")
    assert response.status_code == 201, response.content
    review = Review.objects.get(pk=response.json()["id"])
    assert review.generation_id == history["generation"].pk and review.note == "misses the 3.03 EUR fee"
    record = clients[role].get(f"/api/v1/audits/{history['done'].pk}/").json()
    assert record["review"]["verdict"] == "needs_work" and record["review"]["note"] == "misses the 3.03 EUR fee"
    event = AuditEvent.objects.get(action="review.record")
    assert event.before == {"verdict": "approved", "note": "ok now", "generation": event.after["generation"]} and event.after["verdict"] == "needs_work"


def test_review_takes_its_note_as_reason_too(clients, history):
    body = {"job": history["done"].pk, "verdict": "approved", "reason": "matches the sources"}
    response = clients["support"].post("/api/v1/reviews/", body, format="json")
    assert response.status_code == 201 and response.json()["note"] == "matches the sources"
    assert AuditEvent.objects.get(action="review.record").reason == "matches the sources"


@pytest.mark.parametrize("role, status", [("integrator", 403), ("norole", 403), ("anonymous", 401)])
def test_others_may_not_review(clients, history, role, status):
    body = {"job": history["done"].pk, "verdict": "approved", "note": "fine"}
    assert clients[role].post("/api/v1/reviews/", body, format="json").status_code == status
    assert Review.objects.count() == 2


@pytest.mark.parametrize(
    "body, code, field",
    [
        ({"verdict": "approved", "note": ""}, "reason_required", "note"),
        ({"verdict": "approved", "reason": "  "}, "reason_required", "reason"),
        # The note once, as `note` or as `reason` (the schema's oneOf), even when both agree (issue 12).
        ({"verdict": "approved", "note": "  ", "reason": ""}, "invalid", "reason"),
        ({"verdict": "approved", "note": "same", "reason": "same"}, "invalid", "reason"),
        ({"verdict": "approved"}, "reason_required", "note"),
        ({"verdict": "approved", "note": "a", "reason": "b"}, "invalid", "reason"),
        ({"verdict": "great", "note": "x"}, "invalid", "verdict"),
        ({"note": "x"}, "invalid", "verdict"),
    ],
)
def test_bad_review_is_refused_with_the_field(clients, history, body, code, field):
    response = clients["support"].post("/api/v1/reviews/", {"job": history["done"].pk, **body}, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == code and field in response.json()["errors"]
    assert Review.objects.count() == 2


def test_review_of_a_job_outside_scope_is_404(clients, history):
    body = {"job": history["pending"].pk, "verdict": "approved", "note": "fine"}
    response = clients["support"].post("/api/v1/reviews/", body, format="json")
    assert response.status_code == 404 and Review.objects.count() == 2


def test_writes_are_throttled_per_user(clients, history, settings):
    settings.COMPACTION_API_WRITE_RATE = "2/minute"
    url = f"/api/v1/conversations/{history['conv'].pk}/compact/"
    codes = [clients["operator"].post(url, REASON, format="json").status_code for _ in range(3)]
    assert codes == [202, 202, 429]
    throttled = clients["operator"].post(url, REASON, format="json")
    assert throttled.json()["code"] == "throttled" and "Retry-After" in throttled
    # Reads are not throttled; another user has their own allowance.
    assert clients["operator"].get("/api/v1/audits/").status_code == 200
    assert clients["staff"].post(url, REASON, format="json").status_code == 202


def test_unknown_query_parameter_on_a_write_is_refused(clients, history):
    response = clients["operator"].post(rerun_url(history["failed"]) + "?force=1", REASON, format="json")
    assert response.status_code == 400 and response.json()["code"] == "unknown_filter"
    assert CompactionJob.objects.get(pk=history["failed"].pk).state == JobState.EXHAUSTED


def test_desk_session_posts_need_csrf(users, history):
    from rest_framework.test import APIClient

    client = APIClient(enforce_csrf_checks=True)
    client.login(username="olga", password="pw-for-tests")
    response = client.post(rerun_url(history["failed"]), REASON, format="json")
    assert response.status_code == 403 and "CSRF" in response.json()["message"]


@pytest.mark.parametrize("body", [{"reason": 42}, {"reason": ["x"]}, {"reason": True}])
def test_reason_must_be_text(clients, history, body):
    response = clients["operator"].post(rerun_url(history["failed"]), body, format="json")
    assert response.status_code == 400 and "reason" in response.json()["errors"]
    assert CompactionJob.objects.get(pk=history["failed"].pk).state == JobState.EXHAUSTED


def test_review_job_must_be_a_json_integer(clients, history):
    body = {"job": str(history["done"].pk), "verdict": "approved", "note": "ok"}
    response = clients["support"].post("/api/v1/reviews/", body, format="json")
    assert response.status_code == 400 and "job" in response.json()["errors"]


def test_writes_take_json_bodies(clients, history):
    response = clients["operator"].post(rerun_url(history["failed"]), REASON)  # form-encoded
    assert response.status_code == 415 and response.json()["code"] == "unsupported_media_type"
