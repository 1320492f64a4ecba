"""Conversation read endpoints (SPEC §4, §11): the list and its cursor,
one conversation, its pairs and segments; token auth and scopes."""

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from compaction.keyset import cursor_pack
from conversations.models import Conversation, TokenScope
from tests.factories import conversation_document, make_user, post_document as post_doc, token_for

pytestmark = pytest.mark.django_db


def test_list_filters_by_scope_and_external_id_and_hides_other_scopes(api):
    staff = make_user("root", staff=True, scopes=())
    root = APIClient()
    root.credentials(HTTP_AUTHORIZATION=f"Token {token_for(staff)}")
    post_doc(root, conversation_document(1, external_id="a"))
    post_doc(root, conversation_document(1, external_id="b"))
    post_doc(root, conversation_document(1, scope="other", external_id="a"))
    mine = api.get("/api/v1/conversations/").json()["results"]
    assert sorted(c["external_id"] for c in mine) == ["a", "b"] and {c["scope"] for c in mine} == {"default"}
    assert len(root.get("/api/v1/conversations/").json()["results"]) == 3
    only = root.get("/api/v1/conversations/", {"scope": "other"}).json()["results"]
    assert [(c["scope"], c["external_id"]) for c in only] == [("other", "a")]
    by_id = root.get("/api/v1/conversations/", {"external_id": "b"}).json()["results"]
    assert [c["external_id"] for c in by_id] == ["b"]


def test_list_rejects_unknown_filters(api):
    response = api.get("/api/v1/conversations/", {"colour": "red"})
    assert response.status_code == 400 and response.json()["code"] == "unknown_filter"


def test_list_is_paginated_with_a_cursor(api):
    for i in range(5):
        post_doc(api, conversation_document(1, external_id=f"c{i}"))
    first = api.get("/api/v1/conversations/", {"page_size": 2}).json()
    second = api.get(first["next"]).json()
    ids = [c["id"] for c in first["results"]] + [c["id"] for c in second["results"]]
    assert len(ids) == 4 and len(set(ids)) == 4


@pytest.mark.parametrize("position", [
    "garbage", "2026-13-45T00:00:00Z", "2026-01-01T00:00:00+99:00", "", "2026-01-01 00:00:00",
])
def test_list_answers_a_cursor_naming_no_time_with_400(api, position):
    # The position is compared with updated_at: one that is no time (or an
    # offset PostgreSQL refuses) must be refused, not answer 500.
    post_doc(api, conversation_document(1, external_id="c0"))
    response = api.get("/api/v1/conversations/", {"cursor": cursor_pack({"k": "conversations", "p": [position, 1]})})
    assert response.status_code == 400 and response.json()["code"] == "invalid_cursor"


def test_list_reads_a_cursor_time_in_an_offset_postgresql_refuses_as_that_moment(api):
    # Python takes offsets up to ±23:59, PostgreSQL only ±15:59 (a 500 before).
    post_doc(api, conversation_document(1, external_id="c0"))
    cursor = cursor_pack({"k": "conversations", "p": ["2999-01-01T00:00:00+20:00", 2**62]})
    response = api.get("/api/v1/conversations/", {"cursor": cursor})
    assert response.status_code == 200 and [c["external_id"] for c in response.json()["results"]] == ["c0"]


def test_detail_pairs_and_segments(api):
    conv_id = post_doc(api, conversation_document(31)).json()["conversation"]
    detail = api.get(f"/api/v1/conversations/{conv_id}/").json()
    assert detail["pair_count"] == 31 and detail["segment_count"] == 1
    pairs = api.get(f"/api/v1/conversations/{conv_id}/pairs/", {"page_size": 10}).json()
    assert pairs["count"] == 31
    assert pairs["results"][0]["user"] == {"id": "u-0", "text": "Question 0: what was the fee on day 0?"}
    assert pairs["results"][0]["assistant"]["id"] == "a-0"
    segments = api.get(f"/api/v1/conversations/{conv_id}/segments/").json()["results"]
    assert segments[0]["message_ids"][:4] == ["u-0", "a-0", "u-1", "a-1"]


@pytest.mark.parametrize("path", ["pairs/", "segments/"])
@pytest.mark.parametrize("params, name", [
    ({"page": "x"}, "page"), ({"page": "0"}, "page"), ({"page": "-1"}, "page"),
    ({"page_size": "ten"}, "page_size"), ({"page_size": "0"}, "page_size"),
])
def test_a_page_that_is_not_a_positive_number_is_a_400_naming_it(api, path, params, name):
    conv_id = post_doc(api, conversation_document(31)).json()["conversation"]
    response = api.get(f"/api/v1/conversations/{conv_id}/{path}", params)
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_filter" and name in response.json()["errors"]


def test_a_page_past_the_last_is_a_404_and_last_is_the_last(api):
    conv_id = post_doc(api, conversation_document(31)).json()["conversation"]
    assert api.get(f"/api/v1/conversations/{conv_id}/pairs/", {"page": "9"}).status_code == 404
    last = api.get(f"/api/v1/conversations/{conv_id}/pairs/", {"page": "last", "page_size": "10"}).json()
    assert [p["index"] for p in last["results"]] == [30]


def test_other_scopes_conversation_is_404(api):
    staff = make_user("root", staff=True, scopes=())
    root = APIClient()
    root.credentials(HTTP_AUTHORIZATION=f"Token {token_for(staff)}")
    conv_id = post_doc(root, conversation_document(1, scope="other")).json()["conversation"]
    for path in ("", "pairs/", "segments/"):
        assert api.get(f"/api/v1/conversations/{conv_id}/{path}").status_code == 404


def test_token_limited_to_a_scope_sees_only_that_scope():
    user = make_user("multi", role="integrator", scopes=("a", "b"))
    key = token_for(user)
    TokenScope.objects.create(token=Token.objects.get(key=key), scopes=["a"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert post_doc(client, conversation_document(1, scope="a")).status_code == 201
    assert post_doc(client, conversation_document(1, scope="b")).status_code == 403


def test_schema_is_served():
    response = APIClient().get("/api/schema/")
    assert response.status_code == 200 and b"/api/v1/ingest/" in response.content


def test_staff_token_limited_to_a_scope_sees_only_that_scope():
    # grant_access lets a staff user's token be limited to any scope
    # (TokenScope: "only the intersection of scopes and its user's grants";
    # staff are granted every scope), so the limit must hold for staff too.
    staff = make_user("root", staff=True, scopes=())
    key = token_for(staff)
    unlimited = APIClient()
    unlimited.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    mine = post_doc(unlimited, conversation_document(1, scope="a", external_id="mine")).json()["conversation"]
    theirs = post_doc(unlimited, conversation_document(1, scope="b", external_id="theirs")).json()["conversation"]
    TokenScope.objects.create(token=Token.objects.get(key=key), scopes=["a"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    listed = client.get("/api/v1/conversations/").json()["results"]
    assert [c["id"] for c in listed] == [mine]
    for path in ("", "pairs/", "segments/"):
        assert client.get(f"/api/v1/conversations/{theirs}/{path}").status_code == 404
    assert client.get(f"/api/v1/conversations/{theirs}/projection", {"budget_bytes": 1000}).status_code == 404
    assert post_doc(client, conversation_document(1, scope="b", external_id="more")).status_code == 403


def _tied_conversations(api, n):
    """c0 newest, then n-1 conversations sharing one updated_at, as one
    COPY import group leaves them."""
    from datetime import datetime, timezone

    for i in range(n):
        post_doc(api, conversation_document(1, external_id=f"c{i}"))
    Conversation.objects.exclude(external_id="c0").update(updated_at=datetime(2026, 11, 1, tzinfo=timezone.utc))
    Conversation.objects.filter(external_id="c0").update(updated_at=datetime(2026, 11, 2, tzinfo=timezone.utc))


def test_list_skips_no_unchanged_conversation_when_one_already_read_gets_activity(api):
    # DRF positioned the cursor by updated_at alone plus an offset over the
    # tie; the read conversation leaving the tie made the offset skip c3.
    from datetime import datetime, timezone

    _tied_conversations(api, 6)
    first = api.get("/api/v1/conversations/", {"page_size": 3}).json()
    seen = [c["external_id"] for c in first["results"]]
    Conversation.objects.filter(external_id=seen[-1]).update(updated_at=datetime(2026, 11, 3, tzinfo=timezone.utc))
    url = first["next"]
    while url:
        page = api.get(url).json()
        seen += [c["external_id"] for c in page["results"]]
        url = page["next"]
    assert sorted(seen) == [f"c{i}" for i in range(6)] and len(seen) == 6


def test_list_walks_forward_and_back_over_tied_rows(api):
    _tied_conversations(api, 7)
    pages, url = [], "/api/v1/conversations/?page_size=2"
    while url:
        page = api.get(url).json()
        pages.append([c["external_id"] for c in page["results"]])
        last, url = page, page["next"]
    forward = [x for p in pages for x in p]
    assert forward[0] == "c0" and sorted(forward) == [f"c{i}" for i in range(7)]
    back, url = [], last["previous"]
    while url:
        page = api.get(url).json()
        back.insert(0, [c["external_id"] for c in page["results"]])
        url = page["previous"]
    assert back == pages[:-1]
