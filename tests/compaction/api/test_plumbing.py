"""The one strict-query rule and the one set of codes every endpoint
answers with (issue 10): an unknown query parameter is ``unknown_filter``,
one given twice (not a repeatable filter) or with a bad value is
``invalid_filter``, a conversation outside the caller's scopes is
``not_found``."""

import pytest

from compaction.keyset import MAX_ID
from compaction.models import CompactionJob
from compaction.bindings.segments import conversation_plan
from tests.compaction.api.conftest import client_for, ingest

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(users):
    conversation = ingest(31)
    (job,) = conversation_plan(conversation=conversation)
    return {"conversation": conversation.pk, "job": job.pk}


READS = [
    "/api/v1/conversations/",
    "/api/v1/conversations/{conversation}/",
    "/api/v1/conversations/{conversation}/pairs/",
    "/api/v1/conversations/{conversation}/segments/",
    "/api/v1/conversations/{conversation}/projection?budget_bytes=100",
    "/api/v1/audits/",
    "/api/v1/audits/{job}/",
    "/api/v1/activity/",
]
WRITES = [
    "/api/v1/ingest/",
    "/api/v1/conversations/{conversation}/compact/",
    "/api/v1/jobs/{job}/rerun/",
    "/api/v1/jobs/{job}/grant-attempt/",
    "/api/v1/jobs/{job}/replan/",
    "/api/v1/reviews/",
]


def with_query(url: str, query: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}{query}"


@pytest.mark.parametrize("url", READS)
def test_every_read_refuses_an_unknown_query_parameter(users, world, url):
    response = client_for(users["staff"]).get(with_query(url.format(**world), "colour=red"))
    assert response.status_code == 400
    assert response.json()["code"] == "unknown_filter" and "colour" in response.json()["errors"]


@pytest.mark.parametrize("url", WRITES)
def test_every_write_refuses_an_unknown_query_parameter(users, world, url):
    response = client_for(users["staff"]).post(with_query(url.format(**world), "colour=red"), {}, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "unknown_filter" and "colour" in response.json()["errors"]


@pytest.mark.parametrize("url, name", [
    ("/api/v1/conversations/?scope=a&scope=b", "scope"),
    ("/api/v1/conversations/{conversation}/pairs/?page=1&page=2", "page"),
    ("/api/v1/conversations/{conversation}/projection?budget_bytes=100&budget_bytes=200", "budget_bytes"),
    ("/api/v1/audits/?scope=a&scope=b", "scope"),
    ("/api/v1/activity/?job=1&job=2", "job"),
])
def test_a_parameter_given_twice_is_invalid_filter(users, world, url, name):
    response = client_for(users["staff"]).get(url.format(**world))
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_filter" and name in response.json()["errors"]


@pytest.mark.parametrize("url, name", [
    ("/api/v1/conversations/?page_size=", "page_size"),
    ("/api/v1/conversations/?page_size=0", "page_size"),
    ("/api/v1/conversations/?scope=", "scope"),
    ("/api/v1/conversations/{conversation}/segments/?page_size=ten", "page_size"),
    ("/api/v1/audits/?page_size=501", "page_size"),
    ("/api/v1/activity/?job=-1", "job"),
])
def test_a_bad_parameter_value_is_invalid_filter_naming_it(users, world, url, name):
    response = client_for(users["staff"]).get(url.format(**world))
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_filter" and name in response.json()["errors"]


@pytest.mark.parametrize("url", [u for u in READS if "{conversation}" in u] + [
    "/api/v1/conversations/{conversation}/compact/"])
@pytest.mark.parametrize("conversation", [0, 10**6, MAX_ID, MAX_ID + 1])
def test_a_conversation_that_is_not_there_is_not_found_everywhere(users, world, url, conversation):
    target = url.format(conversation=conversation, job=world["job"])
    client = client_for(users["staff"])
    response = client.post(target, {"reason": "x"}, format="json") if "compact" in url else client.get(target)
    assert response.status_code == 404 and response.json()["code"] == "not_found"


def test_a_conversation_of_another_scope_is_not_found_like_one_that_is_not_there(users, world):
    outsider = client_for(users["operator"])  # granted "default" and "other"
    CompactionJob.objects.update(scope="elsewhere")
    from conversations.models import Conversation

    Conversation.objects.update(scope="elsewhere")
    response = outsider.get(f"/api/v1/conversations/{world['conversation']}/")
    assert response.status_code == 404 and response.json()["code"] == "not_found"
