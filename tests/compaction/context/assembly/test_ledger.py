"""The side-effect ledger, derived from calls and results (SPEC §9, seed 004 §4)."""

from __future__ import annotations

import json

import pytest

from compaction.context.assembly import build_ledger, from_openai, has_side_effects
from compaction.context.assembly.ledger import WRITE_VERBS, idempotency_key
from compaction.context.assembly.neutral import ToolCall

from .helpers import call, calls, tool, user


def ledger(messages, declared=None):
    return build_ledger(from_openai(messages), declared, format="openai")


@pytest.mark.parametrize("name", [
    "book_reservation", "cancel_reservation", "update_reservation_flights", "send_certificate",
    "transfer_to_human_agents", "sendEmail", "calendar.create_event", "issue-refund", "delete",
])
def test_write_verbs_in_the_name_mean_side_effects(name):
    assert has_side_effects(name)


@pytest.mark.parametrize("name", [
    "get_reservation_details", "search_direct_flight", "list_all_airports", "calculate", "think",
    "get_post", "lookupOrder", "reservation_status",
])
def test_reads_have_no_side_effects(name):
    assert not has_side_effects(name)


def test_a_declared_list_names_exactly_the_side_effecting_tools():
    assert has_side_effects("lookup", ("lookup",))
    assert not has_side_effects("send_email", ("lookup",))


def test_per_tool_flags_override_the_verbs_and_unnamed_tools_fall_back():
    flags = {"send_email": False, "ping": True}
    assert not has_side_effects("send_email", flags)
    assert has_side_effects("ping", flags)
    assert has_side_effects("cancel_order", flags)


def test_the_verb_list_is_the_documented_one():
    assert {"create", "update", "delete", "cancel", "book", "send", "submit", "pay", "refund", "modify",
            "transfer", "exchange"} <= WRITE_VERBS


def test_idempotency_key_from_an_argument_named_like_one():
    assert idempotency_key(ToolCall("c", "pay", json.dumps({"amount": 5, "Idempotency-Key": "k-77"}))) == (
        "k-77", "argument:Idempotency-Key")
    assert idempotency_key(ToolCall("c", "pay", json.dumps({"client_request_id": "r1"})))[0] == "r1"


def test_idempotency_key_otherwise_hashes_the_canonical_arguments():
    one = idempotency_key(ToolCall("c1", "pay", '{"b": 1, "a": [1, 2]}'))
    same = idempotency_key(ToolCall("c2", "pay", '{"a":[1,2],"b":1}'))
    other = idempotency_key(ToolCall("c3", "pay", '{"a":[1,2],"b":2}'))
    assert one == same and one[1] == "arguments_hash" and one[0].startswith("sha256:") and len(one[0]) == 23
    assert other[0] != one[0]
    assert idempotency_key(ToolCall("c", "pay", "not json"))[0].startswith("sha256:")
    assert idempotency_key(ToolCall("c", "pay", {"b": 1, "a": [1, 2]}))[0] == one[0]  # Anthropic input object


def test_entries_carry_resource_and_status_from_the_results():
    entries = ledger([
        user("go"),
        calls(call("c1", "book_reservation", user_id="u1")), tool("c1", {"reservation_id": "HAT9", "user_id": "u1"}),
        calls(call("c2", "cancel_reservation", reservation_id="R2")), tool("c2", "Error: not allowed"),
        calls(call("c3", "send_email", to="x")), tool("c3", {"id": "msg-4", "status": "queued"}),
        calls(call("c4", "update_profile", profile_id="P1")), tool("c4", {"ok": False}),
        calls(call("c5", "get_reservation_details", reservation_id="R2")), tool("c5", "{}"),
    ])
    assert [(e.call_id, e.tool, e.resource_id, e.resource_id_source, e.status) for e in entries] == [
        ("c1", "book_reservation", "HAT9", "result:reservation_id", "ok"),
        ("c2", "cancel_reservation", "R2", "arguments:reservation_id", "error"),
        ("c3", "send_email", "msg-4", "result:id", "ok"),
        ("c4", "update_profile", "P1", "arguments:profile_id", "error"),
    ]
    assert [e.index for e in entries] == [1, 3, 5, 7]
    assert entries[0].as_dict().keys() >= {"call_id", "tool", "idempotency_key", "resource_id", "status"}


def test_anthropic_is_error_decides_the_status():
    from compaction.context.assembly import from_anthropic

    messages, _ = from_anthropic([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "send_email", "input": {"to": "x"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "sent", "is_error": True}]},
    ])
    [entry] = build_ledger(messages, format="anthropic")
    assert entry.status == "error"


def test_a_reused_call_id_gives_each_call_its_own_result():
    entries = ledger([user("go"), calls(call("a", "update_x", x_id="1")), tool("a", "Error: no"),
                      calls(call("a", "update_x", x_id="1")), tool("a", {"x_id": "1"})])
    assert [(e.index, e.status) for e in entries] == [(1, "error"), (3, "ok")]
