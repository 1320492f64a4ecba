"""In-run tool-loop compaction through ``POST /api/v1/context/assemble`` (SPEC
§10; seed 002 §7, §11): the offline builder by default; with
``COMPACTION_PROVIDER=openai`` the ``loop@1`` prompt sent to a scripted
OpenAI-compatible server on a real socket — the only thing mocked is the
model endpoint. Any failure keeps the raw history."""

from __future__ import annotations

import json
import logging

import pytest
from prometheus_client import REGISTRY

from compaction.context.assembly import LOOP_PROMPT_V1, validate_request
from compaction.context.assembly.notes import LEDGER_NOTE_HEADER, WORK_SUMMARY_HEADER
from tests.compaction.context.assembly.helpers import assistant, ring, system, user

URL = "/api/v1/context/assemble"
RESULT = {"flights": [{"flight_number": f"HAT{n:03d}", "seats": n, "price": 100 + n} for n in range(25)]}


def loop(rounds: int) -> list[dict]:
    messages = [system("You are the airline agent."), user("Book me to Seattle."), assistant("Which date?"),
                user("March 10, economy, and cancel Q7K2LM.")]
    for k in range(rounds):
        name = "cancel_reservation" if k == 1 else "search_direct_flight"
        messages += ring(f"r{k}", name, {**RESULT, "reservation_id": f"R{k}"}, date=f"2026-03-{k + 1:02d}")
    return messages


LAST_USER = 3


def assemble(client, messages, **config):
    config.setdefault("model_input_limit", 500_000)
    response = client.post(URL, data=json.dumps({"format": "openai", "messages": messages, "config": config}),
                           content_type="application/json")
    assert response.status_code == 200, response.content
    return response.json()


def without_ledger_note(messages):
    """The messages less the pinned ledger note, which names the side effects
    the fold took out of the raw history (derived from the calls, never from
    the summariser); returns (messages, the note's text or None)."""
    notes = [m for m in messages if m["role"] == "system" and (m.get("content") or "").startswith(LEDGER_NOTE_HEADER)]
    return [m for m in messages if m not in notes], (notes[0]["content"] if notes else None)


def loop_count(outcome: str) -> float:
    return REGISTRY.get_sample_value("context_loop_compactions_total", {"outcome": outcome}) or 0.0


def test_below_the_trigger_nothing_is_folded(clients):
    body = assemble(clients["integrator"], loop(4))
    assert body["messages"] == loop(4) and body["work_summary"] is None and body["report"]["events"] == []


def test_past_the_trigger_the_offline_builder_folds_the_oldest_rounds(clients, caplog):
    before = loop_count("compacted")
    with caplog.at_level(logging.INFO, logger="compaction.events"):
        body = assemble(clients["integrator"], loop(7))
    summary = body["work_summary"]
    assert summary.startswith(WORK_SUMMARY_HEADER) and "(through call r1; 2 rounds folded; compaction 1)" in summary
    messages, note = without_ledger_note(body["messages"])
    assert "cancel_reservation call=r1 " in note
    # prefix up to the last user message, one work-summary message, the 5 newest rounds raw
    assert messages[:LAST_USER + 1] == loop(7)[:LAST_USER + 1]
    assert messages[LAST_USER + 1] == {"role": "system", "content": summary}
    assert messages[LAST_USER + 2:] == loop(7)[LAST_USER + 1 + 4:]
    assert validate_request("openai", body["messages"]) == []
    # the side effect folded away stays named
    assert "cancel_reservation" in summary and "call=r1" in summary
    events = body["report"]["events"]
    assert [e["event"] for e in events] == ["compacting", "compacted"]
    assert events[1]["folded_rounds"] == 2 and events[1]["kept_rounds"] == 5
    assert events[1]["tokens_after"] < events[1]["tokens_before"]
    assert events[1]["summariser"] == "loop-deterministic"
    assert loop_count("compacted") == before + 1
    lines = [r.getMessage() for r in caplog.records if r.name == "compaction.events"]
    assert any(line.startswith("compacted ") and 'layer="tool_loop"' in line and "folded_rounds=2" in line
               for line in lines)


def test_the_caller_passes_the_work_summary_back_and_only_the_newly_aged_round_folds(clients):
    first = assemble(clients["integrator"], loop(7))
    # the agent ran one more round and sends the rebuilt history plus it
    more = loop(8)
    second = assemble(clients["integrator"], first["messages"] + more[-2:], work_summary=first["work_summary"])
    assert "(through call r2; 3 rounds folded; compaction 2)" in second["work_summary"]
    assert validate_request("openai", second["messages"]) == []
    kept, note = without_ledger_note(second["messages"])
    assert [m["role"] for m in kept].count("system") == 2  # the prompt and one work summary
    assert "call=r1 " in note


def test_openai_provider_writes_the_work_summary_with_the_frozen_loop_prompt(clients, server, openai_settings):
    server.queue("ok")
    body = assemble(clients["integrator"], loop(7))
    assert len(server.requests) == 1
    sent = server.requests[0]["body"]
    assert sent["model"] == "test-model"
    assert sent["messages"][0] == {"role": "system", "content": LOOP_PROMPT_V1}
    assert "March 10, economy, and cancel Q7K2LM." in sent["messages"][1]["content"]
    assert "search_direct_flight" in sent["messages"][1]["content"]
    assert body["work_summary"].endswith("[a-0] The fee was 0.00 EUR. [a-1] The fee was 1.01 EUR.")
    assert body["report"]["events"][-1]["summariser"] == "openai"


@pytest.mark.parametrize("script, code", [("http500", "provider_error"), ("malformed", "provider_error"),
                                          ("slow", "timeout"), ("text_and_tools", "tool_calls"),
                                          ("length", "finish_reason"), ("empty", "empty")])
def test_a_failing_provider_keeps_the_raw_history(clients, server, openai_settings, script, code, caplog):
    before = loop_count("failed")
    fails = REGISTRY.get_sample_value("context_assemble_summary_fail_total", {"format": "openai"}) or 0.0
    server.queue(script)
    with caplog.at_level(logging.INFO, logger="compaction.events"):
        body = assemble(clients["integrator"], loop(7))
    assert body["messages"] == loop(7)  # raw history, untouched
    assert body["work_summary"] is None
    events = body["report"]["events"]
    assert [e["event"] for e in events] == ["compacting", "compaction_failed"]
    assert events[1]["failure_code"] == code and events[1]["folded_rounds"] == 0
    assert loop_count("failed") == before + 1
    assert REGISTRY.get_sample_value("context_assemble_summary_fail_total", {"format": "openai"}) == fails + 1
    assert any(r.getMessage().startswith("compaction_failed ") for r in caplog.records
               if r.name == "compaction.events")


def test_a_failing_provider_keeps_the_previous_work_summary(clients, server, openai_settings):
    server.queue("ok")
    first = assemble(clients["integrator"], loop(7))
    server.queue("http500")
    more = loop(9)
    second = assemble(clients["integrator"], first["messages"] + more[-4:], work_summary=first["work_summary"])
    assert second["work_summary"] == first["work_summary"]
    assert second["messages"] == first["messages"] + more[-4:]
    assert validate_request("openai", second["messages"]) == []
