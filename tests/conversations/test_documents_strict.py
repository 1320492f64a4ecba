"""Ingest is exactly as strict as the README says (issue 12 item 6;
``conversations/documents.py``): a key given twice anywhere in a document,
an unknown key at any level (a tool call's included), tool-call arguments
or metadata over their configured limits — each is refused with the field
named, and nothing is written."""

from __future__ import annotations

import json

import pytest

from conversations.documents import DocumentInvalid, parse_document_bytes
from tests.factories import conversation_document


def refused(raw: bytes | str) -> dict[str, list[str]]:
    with pytest.raises(DocumentInvalid) as caught:
        parse_document_bytes(raw.encode() if isinstance(raw, str) else raw)
    return caught.value.errors


def with_tool_call(**call) -> dict:
    doc = conversation_document(2)
    doc["messages"].insert(1, {"id": "m-call", "run_id": doc["runs"][0]["id"], "role": "assistant", "content": "",
                               "created_at": doc["messages"][0]["created_at"],
                               "tool_calls": [{"id": "call-1", "name": "lookup", "arguments": "{}", **call}]})
    return doc


def test_a_repeated_top_level_key_is_refused_even_scope():
    text = json.dumps(conversation_document(1))
    errors = refused('{"scope": "other-tenant", ' + text[1:])
    assert errors == {"scope": ["the key 'scope' is given more than once"]}


def test_repeated_keys_are_refused_at_every_level_each_under_its_path():
    doc = with_tool_call()
    text = json.dumps(doc)
    text = text.replace('"role": "user"', '"role": "user", "role": "user"', 1)
    text = text.replace('"name": "lookup"', '"name": "lookup", "name": "drop_table"')
    text = text.replace('"metadata": {}', '"metadata": {"a": {"b": 1, "b": 2}}')
    text = text.replace('"status": "completed", "created_at"', '"status": "completed", "status": "failed", "created_at"', 1)
    errors = refused(text)
    assert errors == {
        "messages[0].role": ["the key 'role' is given more than once"],
        "messages[1].tool_calls[0].name": ["the key 'name' is given more than once"],
        "metadata.a.b": ["the key 'b' is given more than once"],
        "runs[0].status": ["the key 'status' is given more than once"],
    }


def test_a_repeated_key_inside_object_arguments_is_refused():
    text = json.dumps(with_tool_call(arguments={"order": "1"})).replace('"order": "1"', '"order": "1", "order": "2"')
    assert refused(text) == {"messages[1].tool_calls[0].arguments.order": ["the key 'order' is given more than once"]}


@pytest.mark.parametrize("key", ["type", "function", "ID", "argumentz"])
def test_an_unknown_key_in_a_tool_call_is_refused(key):
    assert refused(json.dumps(with_tool_call(**{key: "x"}))) == {f"messages[1].tool_calls[0].{key}": ["unknown field"]}


def test_unknown_keys_are_refused_at_every_other_level_too():
    doc = conversation_document(1)
    doc["extra"] = 1
    doc["runs"][0]["extra"] = 1
    doc["messages"][0]["extra"] = 1
    assert set(refused(json.dumps(doc))) == {"extra", "runs[0].extra", "messages[0].extra"}


def test_tool_call_arguments_over_their_limit_are_refused_with_the_field_named(settings):
    settings.INGEST_MAX_TOOL_ARGUMENTS_BYTES = 100
    assert parse_document_bytes(json.dumps(with_tool_call(arguments="x" * 100)).encode())
    errors = refused(json.dumps(with_tool_call(arguments="x" * 101)))
    assert errors == {"messages[1].tool_calls[0].arguments": ["arguments is 101 bytes; the limit is 100 bytes"]}
    # Object arguments count as the JSON text they are stored as.
    errors = refused(json.dumps(with_tool_call(arguments={"q": "é" * 60})))
    assert list(errors) == ["messages[1].tool_calls[0].arguments"]


def test_the_default_limits_refuse_five_mib_arguments_and_twenty_mib_metadata():
    errors = refused(json.dumps(with_tool_call(arguments="a" * (5 * 1024 * 1024))))
    assert errors["messages[1].tool_calls[0].arguments"] == [
        f"arguments is {5 * 1024 * 1024} bytes; the limit is {64 * 1024} bytes"]
    doc = conversation_document(1)
    doc["metadata"] = {"blob": "m" * (20 * 1024 * 1024)}
    assert list(refused(json.dumps(doc))) == ["metadata"]


def test_metadata_over_its_limit_is_refused_and_at_the_limit_accepted(settings):
    settings.INGEST_MAX_METADATA_BYTES = 50
    doc = conversation_document(1)
    doc["metadata"] = {"k": "v" * 40}  # {"k":"vvv…"} is 48 bytes as compact JSON
    assert parse_document_bytes(json.dumps(doc).encode()).metadata == doc["metadata"]
    doc["metadata"] = {"k": "v" * 43}
    assert refused(json.dumps(doc)) == {"metadata": ["metadata is 51 bytes as JSON; the limit is 50 bytes"]}
