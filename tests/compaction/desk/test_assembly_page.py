"""The context assembly inspector (SPEC §9, §11; issue 15 item 7): for a stored
run with its tool calls and results ingested, the rings and turns, the
buckets, and for a typed token budget what assembly keeps, drops, folds and
summarises, with the report. Support staff may use it; integrators may
not; conversation text is escaped."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse

from compaction.context.assembly import validate_request
from compaction.desk.inspector import assembly_input, assembly_runs
from tests.compaction.desk.conftest import XSS, ingest
from tests.factories import make_user, ts

pytestmark = pytest.mark.django_db

BIG = " ".join(f"seat{n}" for n in range(400))


def tool_run_document(*, rounds: int = 4, broken: bool = False) -> dict:
    """A system prompt, one plain run, then a run with ``rounds`` tool rounds
    (the second cancels a reservation), then (``broken``) a failed run whose
    call never got its result."""
    messages = [{"id": "sys", "role": "system", "content": "You are the airline agent.", "created_at": ts(0)}]
    runs = [{"id": "run-1", "status": "completed"}, {"id": "run-2", "status": "completed"}]
    messages += [
        {"id": "u1", "run_id": "run-1", "role": "user", "content": "Hello " + XSS, "created_at": ts(1)},
        {"id": "a1", "run_id": "run-1", "role": "assistant", "content": "Hi, how can I help?", "created_at": ts(2)},
        {"id": "u2", "run_id": "run-2", "role": "user", "content": "Cancel ZFA04Y and find flights.",
         "created_at": ts(3)},
    ]
    minute = 4
    for k in range(rounds):
        name = "cancel_reservation" if k == 1 else "search_direct_flight"
        messages.append({"id": f"c{k}", "run_id": "run-2", "role": "assistant", "content": "",
                         "created_at": ts(minute),
                         "tool_calls": [{"id": f"call-{k}", "name": name,
                                         "arguments": {"reservation_id": "ZFA04Y", "day": k}}]})
        messages.append({"id": f"t{k}", "run_id": "run-2", "role": "tool", "tool_call_id": f"call-{k}",
                         "content": json.dumps({"reservation_id": "ZFA04Y", "note": BIG + " " + XSS}),
                         "created_at": ts(minute + 0.5)})
        minute += 1
    messages.append({"id": "a2", "run_id": "run-2", "role": "assistant", "content": "Done: ZFA04Y is cancelled.",
                     "created_at": ts(minute)})
    if broken:
        runs.append({"id": "run-3", "status": "failed"})
        messages += [
            {"id": "u3", "run_id": "run-3", "role": "user", "content": "Now book HAT001.", "created_at": ts(minute + 1)},
            {"id": "c9", "run_id": "run-3", "role": "assistant", "content": "", "created_at": ts(minute + 2),
             "tool_calls": [{"id": "call-9", "name": "book_reservation", "arguments": "{\"flight\": \"HAT001\"}"}]},
            {"id": "a9", "run_id": "run-3", "role": "assistant", "content": "The booking system timed out.",
             "created_at": ts(minute + 3)},
        ]
    return {"scope": "default", "id": "tools-1", "title": "Tools", "runs": runs, "messages": messages}


@pytest.fixture
def conversation():
    return ingest(tool_run_document(broken=True))


def url(conversation, **params):
    base = reverse("desk-conversation-assembly", args=[conversation.pk])
    return base + ("?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else "")


def test_the_stored_run_comes_back_as_a_valid_request(conversation):
    runs = assembly_runs(conversation=conversation)
    assert [(r.run.external_id, r.messages, r.tool_calls) for r in runs] == [("run-1", 2, 0), ("run-2", 10, 4),
                                                                            ("run-3", 3, 1)]
    messages, rows, cut = assembly_input(conversation=conversation, run=runs[1].run, limit=1000)
    assert not cut and [r.external_id for r in rows][:4] == ["sys", "u1", "a1", "u2"]
    assert rows[-1].external_id == "a2"
    (call,) = messages[4]["tool_calls"]
    assert {k: v for k, v in messages[4].items() if k != "tool_calls"} == {"role": "assistant", "content": None}
    assert call["id"] == "call-0" and call["type"] == "function" and call["function"]["name"] == "search_direct_flight"
    assert json.loads(call["function"]["arguments"]) == {"reservation_id": "ZFA04Y", "day": 0}
    assert messages[5]["role"] == "tool" and messages[5]["tool_call_id"] == "call-0"
    assert validate_request("openai", messages) == []
    _, rows, cut = assembly_input(conversation=conversation, run=runs[1].run, limit=3)
    assert cut and [r.external_id for r in rows] == ["c3", "t3", "a2"]


@pytest.mark.parametrize("role, status", [("support", 200), ("operator", 200), ("staff", 200),
                                          ("integrator", 403), (None, 403)])
def test_support_operators_and_staff_may_inspect(client, conversation, role, status):
    user = make_user(f"u-{role}", role=role if role != "staff" else None, staff=role == "staff")
    client.force_login(user)
    assert client.get(url(conversation)).status_code == status


def test_anonymous_users_are_sent_to_sign_in(client, conversation):
    response = client.get(url(conversation))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_another_scopes_conversation_is_not_found(client, conversation):
    client.force_login(make_user("elsewhere", role="support", scopes=("other",)))
    assert client.get(url(conversation)).status_code == 404


def test_without_a_budget_the_page_shows_rings_turns_and_buckets(client):
    conversation = ingest(tool_run_document())
    client.force_login(make_user("sue", role="support"))
    response = client.get(url(conversation))
    page = response.content.decode()
    assert "run-2" in page  # the newest run with tool calls is chosen
    assert "no budget" in page
    for word in ("ring", "turn", "prefix", "suffix", "middle", "first_user_message"):
        assert word in page
    inspection = response.context["inspection"]
    assert {u["fate"] for u in inspection["units"]} == {"kept"}
    assert [u["kind"] for u in inspection["units"]].count("ring") == 4


def test_a_budget_shows_what_is_kept_dropped_and_the_ledger(client, conversation):
    client.force_login(make_user("sue", role="support"))
    total = client.get(url(conversation, run="run-2")).context["inspection"]["total_tokens"]
    response = client.get(url(conversation, run="run-2", budget=total - 300, recent_tool_rings=1))
    assert response.status_code == 200
    inspection = response.context["inspection"]
    fates = {tuple(u["indices"]): u["fate"] for u in inspection["units"]}
    assert fates[(4, 5)] == "dropped"  # the oldest middle ring goes first, whole
    assert inspection["report"]["dropped_rings"][0] == [4, 5]
    assert [e["tool"] for e in inspection["report"]["ledger"]] == ["cancel_reservation"]
    page = response.content.decode()
    assert "Side-effect ledger" in page and "cancel_reservation" in page and "dropped" in page


def test_summarise_shows_the_note_assembly_wrote(client, conversation):
    client.force_login(make_user("sue", role="support"))
    total = client.get(url(conversation, run="run-2")).context["inspection"]["total_tokens"]
    response = client.get(url(conversation, run="run-2", budget=total // 2, recent_tool_rings=1, summarize="on"))
    inspection = response.context["inspection"]
    assert inspection["report"]["summary_used"] is True
    assert [n["kind"] for n in inspection["notes"]] == ["summary note"]
    assert "call=call-1 " in inspection["notes"][0]["text"]


def test_broken_pairing_shows_the_refusal_and_the_repair(client, conversation):
    client.force_login(make_user("sue", role="support"))
    response = client.get(url(conversation, run="run-3", budget=100000))
    inspection = response.context["inspection"]
    assert inspection["refusal"]["code"] == "context_assembly_pairing_error"
    assert [(v["id"], v["problem"]) for v in inspection["refusal"]["violations"]] == [("call-9", "missing_result")]
    assert {u["fate"] for u in inspection["units"]} == {"refused"}
    page = response.content.decode()
    assert "context_assembly_pairing_error" in page and "missing_result" in page

    response = client.get(url(conversation, run="run-3", budget=100000, repair="on"))
    report = response.context["inspection"]["report"]
    assert report["repairs"] == [{"index": 14, "id": "call-9", "problem": "missing_result",
                                  "repair": "synthesized_error_result"}]
    assert [(e["tool"], e["status"]) for e in report["ledger"]] == [("cancel_reservation", "ok"),
                                                                    ("book_reservation", "missing")]


def test_a_budget_below_the_protected_prefix_is_refused_with_the_sizes(client, conversation):
    client.force_login(make_user("sue", role="support"))
    response = client.get(url(conversation, run="run-2", budget=5))
    refusal = response.context["inspection"]["refusal"]
    assert refusal["code"] == "context_over_budget" and refusal["sizes"]["budget"] == 5


def test_the_tool_loop_fold_shows_as_folded(client):
    conversation = ingest(tool_run_document(rounds=8))
    client.force_login(make_user("sue", role="support"))
    response = client.get(url(conversation, run="run-2", budget=100000))
    inspection = response.context["inspection"]
    folded = [u for u in inspection["units"] if u["fate"] == "folded"]
    # run-2 ends with an assistant answer, so the loop region is its rounds after u2: 8 rounds, 5 kept raw
    assert [u["indices"][0] for u in folded] == [4, 6, 8]
    assert [n["kind"] for n in inspection["notes"]][-1] == "work summary"


def test_htmx_gets_only_the_inspection_region(client, conversation):
    client.force_login(make_user("sue", role="support"))
    response = client.get(url(conversation, run="run-2", budget=5000), HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert page.lstrip().startswith('<section class="card flush" id="inspection">')
    assert "<html" not in page


def test_bad_input_is_refused_with_the_field_named(client, conversation):
    client.force_login(make_user("sue", role="support"))
    response = client.get(url(conversation, run="run-2", budget="lots"))
    assert response.status_code == 400 and "budget" in response.content.decode()
    response = client.get(url(conversation, run="no-such-run"))
    assert response.status_code == 400


def test_conversation_text_is_escaped_everywhere(client, conversation):
    client.force_login(make_user("sue", role="support"))
    total = client.get(url(conversation, run="run-2")).context["inspection"]["total_tokens"]
    for params in ({}, {"run": "run-2", "budget": total // 2, "summarize": "on", "recent_tool_rings": 1},
                   {"run": "run-3", "budget": 100000}):
        page = client.get(url(conversation, **params)).content.decode()
        assert "<script>alert" not in page and "<img src=x" not in page
        assert "&lt;script&gt;" in page


def test_the_conversation_page_links_to_the_inspector(client, conversation):
    client.force_login(make_user("sue", role="support"))
    page = client.get(reverse("desk-conversation", args=[conversation.pk])).content.decode()
    assert re.search(rf'href="{re.escape(url(conversation))}"', page)


@pytest.mark.parametrize("module", ["airline_support", "debugging"])
def test_every_run_of_a_demo_conversation_with_tools_can_be_inspected(client, module):
    """The demo's tool-calling conversations, every run, at a budget of half
    their tokens: each page renders, and what it shows either passes the
    validator or is a refusal that names why."""
    import importlib

    from conversations.demo.builder import build

    built = build(importlib.import_module(f"conversations.demo.{module}").conversation())
    conversation = ingest(built.document)
    client.force_login(make_user("sue", role="support", scopes=(conversation.scope,)))
    runs = assembly_runs(conversation=conversation)
    assert sum(r.tool_calls for r in runs) > 0
    outcomes = set()
    for r in runs[-12:]:
        total = client.get(url(conversation, run=r.run.external_id)).context["inspection"]["total_tokens"]
        response = client.get(url(conversation, run=r.run.external_id, budget=max(1, total // 2)))
        assert response.status_code == 200
        inspection = response.context["inspection"]
        if inspection["refusal"]:
            outcomes.add(inspection["refusal"]["code"])
        else:
            outcomes.add("assembled")
            assert inspection["report"]["tokens_after"] <= inspection["budget"]
    assert "assembled" in outcomes
