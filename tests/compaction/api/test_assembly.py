"""``POST /api/v1/context/assemble`` through Django's whole request stack
(middleware, URL routing, token auth, parsing, the exception handler) and,
once, over a real socket (SPEC §9, §10; issue 15 item 5)."""

from __future__ import annotations

import json

import httpx
import pytest
from prometheus_client import REGISTRY

from compaction.api.assembly import ANTHROPIC_EXAMPLE, OPENAI_EXAMPLE
from compaction.context.assembly import validate_request
from compaction.context.assembly.notes import PLACEHOLDER_OPENAI_CONTENT, WORK_SUMMARY_HEADER
from tests.compaction.api.conftest import client_for
from tests.compaction.context.assembly.helpers import assistant, calls, call, ring, system, tool, user
from tests.factories import token_for

URL = "/api/v1/context/assemble"


def post(client, body, **extra):
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return client.post(URL, data=data, content_type=extra.pop("content_type", "application/json"), **extra)


def metric(name: str, **labels) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


WORDS = " ".join(f"seat{n}" for n in range(600))


def openai_body(messages, **config):
    config.setdefault("model_input_limit", 200_000)
    return {"format": "openai", "messages": messages, "config": config}


# --- who may call it ------------------------------------------------------------

@pytest.mark.parametrize("role, expected", [("integrator", 200), ("operator", 200), ("staff", 200),
                                            ("support", 403), ("norole", 403), ("anonymous", 401)])
def test_integrators_operators_and_staff_may_assemble_support_may_not(clients, role, expected):
    response = post(clients[role], OPENAI_EXAMPLE)
    assert response.status_code == expected, response.content
    if expected != 200:
        assert response.json()["code"] in ("permission_denied", "not_authenticated")


# --- what comes back --------------------------------------------------------------

def test_a_request_that_fits_comes_back_unchanged_with_its_report(clients):
    response = post(clients["integrator"], OPENAI_EXAMPLE)
    assert response.status_code == 200
    body = response.json()
    assert body["messages"] == OPENAI_EXAMPLE["messages"]
    assert body["work_summary"] is None and "system" not in body
    report = body["report"]
    for key in ("tokens_before", "tokens_after", "budget", "dropped_rings", "dropped_turns", "summary_used", "ledger",
                "repairs", "prefix_hash", "steps"):
        assert key in report
    assert report["budget"] == 128_000 - 8192 - 1024
    assert [(e["tool"], e["status"]) for e in report["ledger"]] == [("cancel_reservation", "ok")]
    assert report["ledger"][0]["resource_id"] == "ZFA04Y"


def test_anthropic_requests_get_their_system_prompt_back_as_system(clients):
    response = post(clients["operator"], ANTHROPIC_EXAMPLE)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["system"] == ANTHROPIC_EXAMPLE["system"]
    assert body["messages"] == ANTHROPIC_EXAMPLE["messages"]


def test_trimming_drops_the_oldest_middle_ring_whole_and_pins_the_ledger(clients):
    messages = [system("Agent."), user("Cancel both."),
                *ring("c1", "cancel_reservation", {"reservation_id": "R1"}, reservation_id="R1"),
                *ring("c2", "get_reservation", WORDS, reservation_id="R2"),
                *ring("c3", "get_reservation", WORDS, reservation_id="R3"),
                assistant("Done."), user("And now?")]
    full = post(clients["integrator"], openai_body(messages, recent_tool_rings=1)).json()["report"]["tokens_before"]
    response = post(clients["integrator"], openai_body(messages, recent_tool_rings=1,
                                                       model_input_limit=full - 500 + 9216))
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["report"]["dropped_rings"] == [[2, 3], [4, 5]]
    assert validate_request("openai", body["messages"]) == []
    assert any("call=c1 " in (m.get("content") or "") for m in body["messages"] if m["role"] == "system")


# --- strictness and limits --------------------------------------------------------

def test_unknown_fields_are_refused_by_their_names(clients):
    response = post(clients["integrator"], {**OPENAI_EXAMPLE, "surprise": 1, "budget": 2})
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid_request"
    assert body["errors"] == {"surprise": ["unknown field"], "budget": ["unknown field"]}

    response = post(clients["integrator"], {**OPENAI_EXAMPLE, "config": {"model_input_limit": 9999, "budgett": 1,
                                                                        "loop": {"rounds": 2}}})
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid_config"
    assert set(body["errors"]) == {"config.budgett", "config.loop.rounds"}


def test_bad_values_and_shapes_name_their_fields(clients):
    response = post(clients["integrator"], openai_body([{"role": "robot", "content": "hi"}], recent_tool_rings=True))
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid_config" and "config.recent_tool_rings" in body["errors"]
    response = post(clients["integrator"], openai_body([{"role": "robot", "content": "hi"}]))
    assert response.json()["code"] == "invalid_request"
    assert "messages[0].role" in response.json()["errors"]
    response = post(clients["integrator"], {"messages": []})
    assert set(response.json()["errors"]) == {"format", "config"}


@pytest.mark.parametrize("raw, problem", [(b"{not json", "malformed JSON"),
                                          (b'{"format": NaN}', "NaN is not a JSON value"),
                                          (b'{"format": "\xff"}', "not valid UTF-8")])
def test_the_body_must_be_strict_json(clients, raw, problem):
    response = post(clients["integrator"], raw)
    assert response.status_code == 400
    assert problem in response.json()["errors"]["body"][0]


def test_only_json_bodies_are_taken(clients):
    response = clients["integrator"].post(URL, data="format=openai", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415


def test_unknown_query_parameters_are_refused(clients):
    response = clients["integrator"].post(URL + "?budget=3", data=json.dumps(OPENAI_EXAMPLE),
                                          content_type="application/json")
    assert response.status_code == 400 and response.json()["code"] == "unknown_filter"


def test_limits_like_ingests(clients, settings):
    settings.CONTEXT_ASSEMBLE_MAX_BODY_BYTES = 2000
    big = openai_body([user("x" * 3000)])
    response = post(clients["integrator"], big)
    assert response.status_code == 400 and response.json()["code"] == "request_too_large"

    settings.CONTEXT_ASSEMBLE_MAX_BODY_BYTES = 10**6
    settings.CONTEXT_ASSEMBLE_MAX_MESSAGES = 3
    response = post(clients["integrator"], openai_body([user("a")] * 4))
    assert response.status_code == 400 and response.json()["errors"] == {"messages": ["4 messages; at most 3 allowed"]}

    settings.CONTEXT_ASSEMBLE_MAX_MESSAGE_BYTES = 100
    response = post(clients["integrator"], openai_body([user("ok"), user("é" * 60)]))
    assert response.status_code == 400
    assert response.json()["errors"] == {"messages[1]": ["is 135 bytes of text; the limit is 100 bytes"]}

    response = post(clients["integrator"], openai_body([user("ok")], model_input_limit=10**12))
    assert response.status_code == 400 and "config.model_input_limit" in response.json()["errors"]


def test_a_lone_surrogate_is_refused_not_a_server_error(clients):
    response = post(clients["integrator"], b'{"format": "openai", "messages": [{"role": "user", "content": "\\ud800"}],'
                                           b' "config": {"model_input_limit": 50000}}')
    assert response.status_code == 400
    assert "messages[0]" in response.json()["errors"]


# --- fail closed ------------------------------------------------------------------

BROKEN = [user("Cancel it."), calls(call("c1", "cancel_reservation", reservation_id="R1"),
                                    call("c2", "get_reservation", reservation_id="R1")),
          tool("c1", "ok"), assistant("Done?"), tool("zz", "stray"), user("Well?")]


def test_broken_pairing_is_422_listing_every_violation(clients):
    before = metric("context_assemble_pairing_error_total", format="openai")
    rejects = metric("context_assemble_reject_total", code="context_assembly_pairing_error")
    response = post(clients["integrator"], openai_body(BROKEN))
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "context_assembly_pairing_error"
    assert [(v["index"], v["id"], v["problem"]) for v in body["violations"]] == [
        (1, "c2", "missing_result"), (4, "zz", "result_without_call")]
    assert metric("context_assemble_pairing_error_total", format="openai") == before + 1
    assert metric("context_assemble_reject_total", code="context_assembly_pairing_error") == rejects + 1


def test_anthropic_broken_pairing_is_422_too(clients):
    messages = [{"role": "user", "content": "Cancel it."},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "cancel", "input": {}}]},
                {"role": "assistant", "content": "Done."}, {"role": "user", "content": "Thanks"}]
    response = post(clients["integrator"], {"format": "anthropic", "messages": messages,
                                            "config": {"model_input_limit": 50000}})
    assert response.status_code == 422
    assert [(v["index"], v["id"], v["problem"]) for v in response.json()["violations"]] == [(1, "t1", "missing_result")]


def test_synthesize_error_results_answers_the_missing_result_and_says_so(clients):
    messages = [user("Cancel it."), calls(call("c1", "cancel_reservation", reservation_id="R1"),
                                          call("c2", "get_reservation", reservation_id="R1")),
                tool("c1", "ok"), assistant("Done?"), user("Well?")]
    response = post(clients["integrator"], openai_body(messages, on_pairing_error="synthesize_error_results"))
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["report"]["repairs"] == [{"index": 1, "id": "c2", "problem": "missing_result",
                                          "repair": "synthesized_error_result"}]
    assert {"role": "tool", "tool_call_id": "c2", "content": PLACEHOLDER_OPENAI_CONTENT} in body["messages"]
    assert validate_request("openai", body["messages"]) == []
    # A stray result is never guessed about.
    response = post(clients["integrator"], openai_body(BROKEN, on_pairing_error="synthesize_error_results"))
    assert response.status_code == 422


def test_still_over_budget_is_422_with_the_sizes(clients):
    before = metric("context_assemble_reject_total", code="context_over_budget")
    messages = [user(WORDS), *ring("c1", "search", WORDS, q="x"), user(WORDS)]
    response = post(clients["integrator"], openai_body(messages, model_input_limit=9216 + 1500))
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "context_over_budget"
    assert body["sizes"]["budget"] == 1500
    assert body["sizes"]["reason"] in ("protected_prefix_over_budget", "over_budget_after_trimming")
    assert body["sizes"]["tokens_before"] > 1500
    assert metric("context_assemble_reject_total", code="context_over_budget") == before + 1


# --- metrics ------------------------------------------------------------------------

def test_every_seed_004_metric_is_served_at_metrics(clients, users, client):
    post(clients["integrator"], OPENAI_EXAMPLE)
    client.force_login(users["staff"])
    text = client.get("/metrics").content.decode()
    for name in ("context_assemble_tokens", "context_assemble_dropped_rings_total", "context_assemble_summary_total",
                 "context_assemble_summary_fail_total", "context_assemble_pairing_error_total",
                 "context_assemble_reject_total", "context_assemble_seconds", "context_loop_compactions_total"):
        assert f"\n{name}" in text or f"# TYPE {name.removesuffix('_total')}" in text, name


def test_an_assembly_observes_its_tokens_seconds_and_dropped_rings(clients):
    tokens = metric("context_assemble_tokens_count", format="openai")
    seconds = metric("context_assemble_seconds_count")
    response = post(clients["integrator"], OPENAI_EXAMPLE)
    assert response.status_code == 200
    assert metric("context_assemble_tokens_count", format="openai") == tokens + 1
    assert metric("context_assemble_seconds_count") == seconds + 1


# --- the schema ---------------------------------------------------------------------

def test_the_schema_documents_the_endpoint_with_examples_in_both_formats(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    operation = schema["paths"]["/api/v1/context/assemble"]["post"]
    content = operation["requestBody"]["content"]["application/json"]
    assert {e["value"]["format"] for e in content["examples"].values()} == {"openai", "anthropic"}
    assert content["schema"]["additionalProperties"] is False
    assert set(operation["responses"]) >= {"200", "400", "401", "403", "415", "422"}
    assert operation["security"]


# --- over a real socket -------------------------------------------------------------

@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_over_a_real_socket(live_server, django_user_model):
    from tests.factories import make_user

    key = token_for(make_user("bot", role="integrator"))
    response = httpx.post(f"{live_server.url}{URL}", json=OPENAI_EXAMPLE, headers={"Authorization": f"Token {key}"},
                          timeout=30)
    assert response.status_code == 200
    assert response.json()["messages"] == OPENAI_EXAMPLE["messages"]
    response = httpx.post(f"{live_server.url}{URL}", json=openai_body(BROKEN),
                          headers={"Authorization": f"Token {key}"}, timeout=30)
    assert response.status_code == 422 and response.json()["code"] == "context_assembly_pairing_error"


def test_work_summary_header_is_what_the_library_writes():
    assert WORK_SUMMARY_HEADER.startswith("[Work summary")


def test_json_nested_too_deep_is_refused_with_the_field_named(clients):
    ok = "[" * 60 + "]" * 60
    deep = "[" * 900 + "]" * 900
    for nested, status in ((ok, 200), (deep, 400)):
        raw = ('{"format": "openai", "messages": [{"role": "user", "content": "hi", "meta": ' + nested + '}],'
               ' "config": {"model_input_limit": 50000}}').encode()
        response = post(clients["integrator"], raw)
        assert response.status_code == status, response.content[:300]
    assert response.json()["errors"] == {"messages[0]": ["is nested more than 64 levels deep"]}
