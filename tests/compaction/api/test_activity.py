"""GET /api/v1/activity/: the AuditEvent log, newest first, with filters
and keyset pagination (issue 6)."""

from __future__ import annotations

import pytest

from compaction.actions import activity_log, do_job_rerun, do_review_record
from compaction.models import AuditEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def events(users, history):
    do_job_rerun(job=history["failed"], actor=users["operator"], reason="outage over")
    do_review_record(job=history["done"], reviewer=users["support"], verdict="approved", note="checked")
    activity_log(actor=users["operator"], action="job.rerun", target_type="job", target_id=history["pending"].pk,
                 reason="other scope", scope="other", job=history["pending"])
    # An event without a scope (none of the actions writes one): staff only.
    AuditEvent.objects.create(actor_label="system", action="system.note", target_type="system", target_id="-",
                              reason="no scope")


def test_activity_lists_events_newest_first_with_their_fields(clients, events, history):
    body = clients["staff"].get("/api/v1/activity/").json()
    actions = [e["action"] for e in body["results"]]
    assert actions == ["system.note", "job.rerun", "review.record", "job.rerun"]
    rerun = body["results"][-1]
    assert rerun["actor"] == "olga" and rerun["reason"] == "outage over" and rerun["job"] == history["failed"].pk
    assert rerun["before"]["state"] == "exhausted" and rerun["after"]["state"] == "pending"
    assert body["results"][0]["actor"] is None and body["results"][0]["actor_label"] == "system"


def test_non_staff_see_only_events_of_their_scopes(clients, events):
    assert {e["scope"] for e in clients["support"].get("/api/v1/activity/").json()["results"]} == {"default"}
    assert {e["scope"] for e in clients["operator"].get("/api/v1/activity/").json()["results"]} == {"default", "other"}


@pytest.mark.parametrize(
    "params, expected",
    [
        ({"action": "job.rerun"}, ["job.rerun", "job.rerun"]),
        ({"actor": "sam"}, ["review.record"]),
        ({"scope": "other"}, ["job.rerun"]),
        ({"target_type": "system"}, ["system.note"]),
        ({"created_before": "2000-01-01T00:00:00Z"}, []),
    ],
)
def test_activity_filters(clients, events, params, expected):
    body = clients["staff"].get("/api/v1/activity/", params).json()
    assert [e["action"] for e in body["results"]] == expected


def test_activity_job_and_conversation_filters(clients, events, history):
    by_job = clients["staff"].get("/api/v1/activity/", {"job": history["done"].pk}).json()["results"]
    assert [e["action"] for e in by_job] == ["review.record"]
    by_conv = clients["staff"].get("/api/v1/activity/", {"conversation": history["conv"].pk}).json()["results"]
    assert [e["action"] for e in by_conv] == ["review.record", "job.rerun"]


def test_activity_pages_are_stable_while_events_arrive(clients, events, users):
    first = clients["staff"].get("/api/v1/activity/", {"page_size": 2}).json()
    late = activity_log(actor=users["staff"], action="job.rerun", target_type="job", target_id=1, scope="default")
    second = clients["staff"].get(first["next"]).json()
    walked = [e["id"] for e in first["results"] + second["results"]]
    assert len(walked) == len(set(walked)) == 4 and second["next"] is None
    assert late.pk not in walked


@pytest.mark.parametrize(
    "params, code",
    [({"verb": "x"}, "unknown_filter"), ({"job": "-1"}, "invalid_filter"), ({"cursor": "@@"}, "invalid_cursor"),
     ({"format": "csv"}, "invalid_format")],
)
def test_activity_refuses_bad_queries(clients, events, params, code):
    response = clients["staff"].get("/api/v1/activity/", params)
    assert response.status_code == 400 and response.json()["code"] == code


@pytest.mark.parametrize("role, status", [("support", 200), ("integrator", 200), ("norole", 403), ("anonymous", 401)])
def test_activity_roles(clients, events, role, status):
    assert clients[role].get("/api/v1/activity/").status_code == status
