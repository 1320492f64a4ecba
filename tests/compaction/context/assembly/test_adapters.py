"""Adapters: OpenAI and Anthropic requests to the neutral form and back,
losslessly (SPEC §9; seed 004 "适配层应按 provider 做往返单测")."""

from __future__ import annotations

import copy

import pytest

from compaction.context.assembly import RequestFormatError, from_anthropic, from_openai, to_anthropic, to_openai
from compaction.context.assembly.adapters import parse, render_system
from compaction.context.assembly.neutral import NULL, PARTS, STRING, Opaque, Text, ToolCall, ToolResult

from .fixtures import TRAJECTORIES
from .helpers import call, calls, tool

OPENAI_SHAPES = [
    {"role": "system", "content": "policy"},
    {"role": "developer", "content": [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}]},
    {"role": "user", "content": "hi", "name": "ada"},
    {"role": "user", "content": [{"type": "text", "text": "look"},
                                 {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]},
    {"role": "assistant", "content": None, "tool_calls": [call("c1", "lookup", q="a"), call("c2", "lookup", q="b")]},
    {"role": "tool", "tool_call_id": "c2", "content": "b found", "name": "lookup"},
    {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "a found"}]},
    {"role": "assistant", "content": "Checking.", "tool_calls": [
        {"id": "c3", "type": "function", "function": {"name": "send_email", "arguments": "{\"to\": \"x\"}",
                                                      "strict": True}}]},
    {"role": "tool", "tool_call_id": "c3", "content": ""},
    {"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}], "refusal": "no", "audio": None},
    {"role": "assistant", "content": "", "tool_calls": []},
    {"role": "assistant"},
]

ANTHROPIC_SHAPES = [
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "plan", "signature": "sig"},
        {"type": "text", "text": "Let me check both."},
        {"type": "tool_use", "id": "t1", "name": "lookup", "input": {"q": "a"}},
        {"type": "tool_use", "id": "t2", "name": "lookup", "input": {"q": "b"}, "cache_control": {"type": "ephemeral"}},
    ]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": "a found"},
        {"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": "b"}], "is_error": False},
        {"type": "text", "text": "and hurry"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
    ]},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "t3", "name": "x", "input": {}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t3"}]},
]


def test_openai_messages_round_trip_exactly_in_every_content_form():
    original = copy.deepcopy(OPENAI_SHAPES)
    assert to_openai(from_openai(OPENAI_SHAPES)) == original
    assert OPENAI_SHAPES == original  # parsing never mutates the input


def test_anthropic_messages_and_system_round_trip_exactly():
    for system in ("be brief", [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}], None):
        messages, system_content = from_anthropic(ANTHROPIC_SHAPES, system)
        assert to_anthropic(messages) == ANTHROPIC_SHAPES
        assert render_system(system_content) == system


# Next to the commonest shapes, which the adapter reads on a shortcut
# (a call of id, type "function" and function; a tool message of role,
# content, tool_call_id and maybe name): one key more, one less, another value.
NEAR_COMMON_OPENAI = [
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "function": {"name": "lookup", "arguments": "{}"}},
        {"id": "c2", "type": "function", "index": 1, "function": {"name": "lookup", "arguments": "{}"}},
        {"id": "c3", "type": "custom", "function": {"name": "lookup", "arguments": "{}"}},
        {"type": "function", "function": {"name": "lookup", "arguments": "{}"}, "index": 3}]},
    {"role": "tool", "tool_call_id": "c1", "content": "a", "name": "lookup", "cache": True},
    {"role": "tool", "tool_call_id": "c2", "name": "lookup"},
    {"role": "tool", "tool_call_id": "c3", "content": "c", "label": "x"},
    {"role": "assistant", "content": "done", "tool_calls": [call("c4", "lookup")], "name": "bot"},
    {"role": "tool", "tool_call_id": "c4", "content": "d", "name": "lookup"},
]


def test_shapes_next_to_the_common_ones_round_trip_exactly():
    original = copy.deepcopy(NEAR_COMMON_OPENAI)
    parsed = from_openai(NEAR_COMMON_OPENAI)
    assert to_openai(parsed) == original
    assert [dict(c.extra) for c in parsed[0].calls] == [{}, {"type": "function", "index": 1}, {"type": "custom"},
                                                        {"type": "function", "index": 3}]
    assert parsed[0].calls[3].id is None
    assert [dict(m.extra) for m in parsed[1:4]] == [{"name": "lookup", "cache": True}, {"name": "lookup"},
                                                    {"label": "x"}]
    assert dict(parsed[4].extra) == {"name": "bot"} and dict(parsed[5].extra) == {"name": "lookup"}


def test_the_fixture_trajectories_round_trip():
    for trajectory in TRAJECTORIES:
        assert to_openai(from_openai(trajectory["traj"])) == trajectory["traj"]


def test_openai_parallel_calls_become_one_message_with_calls_in_order():
    parsed = from_openai([calls(call("c1", "a"), call("c2", "b")), tool("c1", "x"), tool("c2", "y")])
    assert [c.id for c in parsed[0].calls] == ["c1", "c2"]
    assert parsed[0].form == NULL
    assert isinstance(parsed[0].calls[0], ToolCall) and parsed[0].calls[0].arguments == "{}"
    assert [(m.role, m.results[0].call_id) for m in parsed[1:]] == [("tool", "c1"), ("tool", "c2")]


def test_anthropic_blocks_keep_their_order_and_kinds():
    messages, _ = from_anthropic(ANTHROPIC_SHAPES)
    kinds = [type(b) for b in messages[1].blocks]
    assert kinds == [Opaque, Text, ToolCall, ToolCall]
    assert messages[1].calls[1].arguments == {"q": "b"}
    assert [type(b) for b in messages[2].blocks] == [ToolResult, ToolResult, Text, Opaque]
    assert messages[2].results[1].is_error is False and messages[2].results[0].is_error is None
    assert messages[2].is_user_turn  # the user added words after the results
    assert not messages[4].is_user_turn  # only the tool answering


def test_content_forms_are_remembered():
    parsed = from_openai(OPENAI_SHAPES)
    assert parsed[0].form == STRING and parsed[1].form == PARTS
    assert parsed[1].blocks[0].extra == {"cache_control": {"type": "ephemeral"}}
    assert isinstance(parsed[3].blocks[1], Opaque)


def test_a_shape_error_names_every_bad_field():
    with pytest.raises(RequestFormatError) as caught:
        from_openai([
            {"role": "robot", "content": "x"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "function": {"name": "a", "arguments": {}}}]},
            {"role": "user", "content": 7},
            "not a message",
        ])
    fields = [e["field"] for e in caught.value.errors]
    assert fields == ["messages[0].role", "messages[1].tool_calls[0].function.arguments", "messages[2].content",
                      "messages[3]"]
    assert caught.value.as_dict()["code"] == "invalid_request"


def test_anthropic_refuses_a_system_role_message_and_points_to_the_top_level_field():
    with pytest.raises(RequestFormatError) as caught:
        from_anthropic([{"role": "system", "content": "x"}])
    assert "top-level system" in caught.value.errors[0]["message"]


def test_a_missing_id_is_left_for_the_validator_not_refused_as_shape():
    parsed = from_openai([calls({"type": "function", "function": {"name": "a", "arguments": "{}"}}),
                          {"role": "tool", "content": "x"}])
    assert parsed[0].calls[0].id is None and parsed[1].results[0].call_id is None
    assert to_openai(parsed)[1] == {"role": "tool", "content": "x"}


def test_parse_refuses_an_unknown_format_and_a_system_field_on_openai():
    with pytest.raises(RequestFormatError):
        parse("gemini", [])
    with pytest.raises(RequestFormatError):
        parse("openai", [], system="x")
