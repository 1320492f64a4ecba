"""``POST /api/v1/ingest/`` (SPEC §3): token auth, scopes, field-level 400s."""


import json

import pytest
from rest_framework.test import APIClient

from conversations.models import Conversation, Message
from tests.factories import conversation_document, make_user, post_document as post_doc, token_for

pytestmark = pytest.mark.django_db


def test_ingest_answers_with_conversation_pair_count_and_planned_segments(api):
    response = post_doc(api, conversation_document(41))
    assert response.status_code == 201, response.json()
    body = response.json()
    conv = Conversation.objects.get()
    assert body["conversation"] == conv.pk and body["pair_count"] == 41
    assert [(s["from_pair"], s["to_pair"]) for s in body["segments"]] == [(0, 9), (10, 19)]
    assert len(body["segments"][0]["message_ids"]) == 20 and len(body["segments"][0]["digest"]) == 64


def test_resending_answers_200_and_unchanged(api):
    doc = conversation_document(5)
    post_doc(api, doc)
    response = post_doc(api, doc)
    assert response.status_code == 200 and response.json()["changed"] is False


def test_bad_document_gets_400_with_field_messages_and_writes_nothing(api):
    doc = conversation_document(3)
    doc["messages"][2]["role"] = "wizard"
    doc["messages"][4].pop("created_at")
    response = post_doc(api, doc)
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid_document"
    assert set(body["errors"]) == {"messages[2].role", "messages[4].created_at"}
    assert Conversation.objects.count() == 0 and Message.objects.count() == 0


def test_malformed_json_and_invalid_utf8_get_400(api):
    assert post_doc(api, None, raw=b"{not json").json()["code"] == "invalid_document"
    response = post_doc(api, None, raw=b'{"scope": "\xc3\x28"}')
    assert response.status_code == 400 and "UTF-8" in response.json()["errors"]["document"][0]


def test_anonymous_gets_401():
    response = APIClient().post("/api/v1/ingest/", data=b"{}", content_type="application/json")
    assert response.status_code == 401 and response.json()["code"] == "not_authenticated"


def test_support_user_may_not_ingest():
    support = make_user("sue", role="support")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_for(support)}")
    assert post_doc(client, conversation_document(1)).status_code == 403


def test_ingest_into_a_scope_not_granted_is_403_and_writes_nothing(api):
    response = post_doc(api, conversation_document(2, scope="someone-else"))
    assert response.status_code == 403 and response.json()["code"] == "scope_forbidden"
    assert Conversation.objects.count() == 0


def test_a_repeated_key_is_refused_with_its_path_and_nothing_is_written(api):
    text = json.dumps(conversation_document(3)).replace('"scope": "default"', '"scope": "default", "scope": "other"')
    response = post_doc(api, None, raw=text.encode())
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid_document"
    assert body["errors"] == {"scope": ["the key 'scope' is given more than once"]}
    assert Conversation.objects.count() == 0


def test_an_unknown_key_in_a_tool_call_and_over_long_arguments_are_field_errors(api, settings):
    settings.INGEST_MAX_TOOL_ARGUMENTS_BYTES = 1000
    doc = conversation_document(2)
    doc["messages"].insert(1, {"id": "m-call", "run_id": doc["runs"][0]["id"], "role": "assistant", "content": "",
                               "created_at": doc["messages"][0]["created_at"],
                               "tool_calls": [{"id": "c1", "name": "lookup", "arguments": "x" * 1001,
                                               "type": "function"}]})
    response = post_doc(api, doc)
    assert response.status_code == 400
    assert response.json()["errors"] == {
        "messages[1].tool_calls[0].type": ["unknown field"],
        "messages[1].tool_calls[0].arguments": ["arguments is 1001 bytes; the limit is 1000 bytes"],
    }
    assert Message.objects.count() == 0
