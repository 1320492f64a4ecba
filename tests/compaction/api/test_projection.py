"""SPEC §6 over REST: GET /api/v1/conversations/{id}/projection."""

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from conversations.models import TokenScope
from tests.compaction.context.projection_helpers import ingest_pairs, job_for, summary_for, validate_chat_messages
from tests.factories import make_user, token_for

pytestmark = pytest.mark.django_db


def url(conv_id, query=""):
    return f"/api/v1/conversations/{conv_id}/projection" + (f"?{query}" if query else "")


def client_for(user):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_for(user)}")
    return client


@pytest.fixture
def conv(db):
    conv = ingest_pairs(40)
    summary_for(conv, 0)
    job_for(conv, 10, state="failed", attempts=1)
    return conv


def test_blocks_response_has_the_spec_shape_key_for_key(api, conv):
    response = api.get(url(conv.pk, "budget_bytes=65536&prefer=summary"))
    assert response.status_code == 200
    body = response.json()
    assert {"conversation", "budget", "used", "complete", "blocks", "pairs"} <= set(body)
    assert body["conversation"] == conv.pk
    assert body["budget"] == {"bytes": 65536, "tokens": None}
    assert set(body["used"]) == {"bytes", "tokens"} and body["used"]["tokens"] is None
    assert body["complete"] is True
    summary, raw = body["blocks"][0], body["blocks"][-1]
    assert set(summary) >= {"kind", "from_pair", "to_pair", "generation", "prompt_version", "source_digest",
                            "user_messages", "summary"}
    assert summary["kind"] == "summary" and set(summary["user_messages"][0]) == {"id", "text"}
    assert set(raw) >= {"kind", "pair", "user", "assistant"} and raw["kind"] == "raw"
    assert set(raw["user"]) == {"id", "text"} == set(raw["assistant"])
    assert body["pairs"][0] == {"index": 0, "as": "summary", "reason": None}
    assert body["pairs"][10] == {"index": 10, "as": "raw", "reason": "failed"}
    assert len(body["pairs"]) == 40
    assert body["prefer"] == "summary"


def test_by_default_a_generous_budget_gives_the_whole_history_raw(api, conv):
    body = api.get(url(conv.pk, "budget_bytes=65536")).json()
    assert body["prefer"] == "raw" and body["complete"] is True
    assert [b["kind"] for b in body["blocks"]] == ["raw"] * 40
    assert body["pairs"][0] == {"index": 0, "as": "raw", "reason": None}
    assert body["pairs"][10] == {"index": 10, "as": "raw", "reason": "failed"}


def test_openai_format_says_how_many_older_pairs_were_left_out(api, conv):
    body = api.get(url(conv.pk, "budget_bytes=2000&format=openai")).json()
    omitted = sum(p["as"] == "omitted" for p in body["pairs"])
    assert omitted and body["complete"] is False
    system = body["messages"][0]
    assert system["role"] == "system" and f"{omitted} older pairs of this conversation" in system["content"]
    assert body["used"]["bytes"] == sum(len(m["content"].encode()) for m in body["messages"]) <= 2000


def test_tiny_budget_is_not_an_error_but_an_honest_empty_projection(api, conv):
    body = api.get(url(conv.pk, "budget_bytes=1")).json()
    assert body["complete"] is False and body["blocks"] == [] and body["used"]["bytes"] == 0
    assert {(p["as"], p["reason"]) for p in body["pairs"]} == {("omitted", "over_budget")}


@pytest.mark.parametrize("prefer,budget", [("summary", 65536), ("raw", 65536), ("raw", 3000), ("summary", 3000)])
def test_openai_format_passes_a_strict_chat_completions_validator(api, conv, prefer, budget):
    response = api.get(url(conv.pk, f"budget_bytes={budget}&format=openai&budget_tokens=100000&prefer={prefer}"))
    assert response.status_code == 200
    body = response.json()
    validate_chat_messages(body["messages"])
    # A system message when a summary is given or anything was left out.
    told = prefer == "summary" or not body["complete"]
    assert (body["messages"][0]["role"] == "system") == told and "blocks" not in body
    assert body["used"]["tokens"] <= 100000 and body["budget"]["tokens"] == 100000


@pytest.mark.parametrize("query,code,field", [
    ("", "missing_budget", "budget_bytes"),
    ("budget_bytes=", "missing_budget", "budget_bytes"),
    ("budget_bytes=0", "invalid_budget", "budget_bytes"),
    ("budget_bytes=-5", "invalid_budget", "budget_bytes"),
    ("budget_bytes=abc", "invalid_budget", "budget_bytes"),
    ("budget_bytes=1.5", "invalid_budget", "budget_bytes"),
    ("budget_bytes=1_000", "invalid_budget", "budget_bytes"),
    ("budget_bytes=%D9%A3", "invalid_budget", "budget_bytes"),
    ("budget_bytes=" + "9" * 5000, "invalid_budget", "budget_bytes"),
    ("budget_bytes=99999999999999", "invalid_budget", "budget_bytes"),
    ("budget_bytes=100&budget_tokens=0", "invalid_budget", "budget_tokens"),
    ("budget_bytes=100&budget_tokens=-1", "invalid_budget", "budget_tokens"),
    ("budget_bytes=100&budget_tokens=999999999", "invalid_budget", "budget_tokens"),
    ("budget_bytes=100&format=xml", "invalid_format", "format"),
    ("budget_bytes=100&prefer=newest", "invalid_prefer", "prefer"),
    ("budget_bytes=100&prefer=", "invalid_prefer", "prefer"),
    ("budget_bytes=100&prefer=raw&prefer=summary", "invalid_filter", "prefer"),
    ("budget_bytes=100&budget=5", "unknown_filter", "budget"),
])
def test_bad_input_is_a_400_naming_what_is_wrong(api, conv, query, code, field):
    response = api.get(url(conv.pk, query))
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == code and field in body["errors"] and body["message"]


def test_unknown_conversation_is_404(api, conv):
    response = api.get(url(conv.pk + 1000, "budget_bytes=100"))
    assert response.status_code == 404 and response.json()["code"] == "not_found"


def test_conversation_in_another_scope_is_404(conv):
    outsider = make_user("outsider", role="integrator", scopes=("other",))
    response = client_for(outsider).get(url(conv.pk, "budget_bytes=100"))
    assert response.status_code == 404 and response.json()["code"] == "not_found"


def test_token_narrowed_to_another_scope_cannot_read(conv):
    user = make_user("narrowed", role="integrator", scopes=("default", "other"))
    client = client_for(user)
    assert client.get(url(conv.pk, "budget_bytes=100")).status_code == 200
    TokenScope.objects.create(token=Token.objects.get(user=user), scopes=["other"])
    response = client.get(url(conv.pk, "budget_bytes=100"))
    assert response.status_code == 404 and response.json()["code"] == "not_found"


def test_user_without_a_role_is_refused(conv):
    nobody = make_user("nobody", role=None)
    response = client_for(nobody).get(url(conv.pk, "budget_bytes=100"))
    assert response.status_code == 403 and response.json()["code"] == "permission_denied"


def test_anonymous_is_refused(conv):
    response = APIClient().get(url(conv.pk, "budget_bytes=100"))
    assert response.status_code == 401


def test_support_staff_may_read_projections(conv):
    support = make_user("support1", role="support")
    assert client_for(support).get(url(conv.pk, "budget_bytes=100")).status_code == 200


def test_projection_is_in_the_openapi_schema(api):
    schema = api.get("/api/schema/?format=json").json()
    operation = schema["paths"]["/api/v1/conversations/{conversation_id}/projection"]["get"]
    names = {p["name"] for p in operation["parameters"]}
    assert {"budget_bytes", "budget_tokens", "format", "prefer"} <= names
    prefer = next(p for p in operation["parameters"] if p["name"] == "prefer")
    assert prefer["schema"]["enum"] == ["raw", "summary"]


def test_spliced_account_is_the_same_json_as_plain_encoding(api):
    import json

    from rest_framework.renderers import JSONRenderer

    from compaction.context.projection import conversation_projection
    from compaction.api.projection import ProjectionJSONRenderer

    conv = ingest_pairs(60)
    summary_for(conv, 0)
    body = conversation_projection(conversation=conv, budget_bytes=600)
    assert body["pairs"].omitted > 0
    spliced = ProjectionJSONRenderer().render(body)
    assert json.loads(spliced) == json.loads(JSONRenderer().render(body))
    response = api.get(url(conv.pk, "budget_bytes=600"))
    assert response.json() == json.loads(spliced)
    assert [p["index"] for p in response.json()["pairs"]] == list(range(60))


def test_shared_account_entries_cannot_be_changed_by_a_caller():
    from compaction.context.projection import conversation_projection

    conv = ingest_pairs(30)
    body = conversation_projection(conversation=conv, budget_bytes=1)
    with pytest.raises(TypeError):
        body["pairs"][0]["reason"] = "changed"
    assert conversation_projection(conversation=conv, budget_bytes=1)["pairs"][0]["reason"] == "over_budget"


def test_inconsistent_stored_sizes_are_a_500_with_a_code_not_a_wrong_answer(api):
    conv = ingest_pairs(30)
    summary_for(conv, 0, text="a summary of ten answers", text_bytes=1)
    response = api.get(url(conv.pk, "budget_bytes=65536&prefer=summary"))
    assert response.status_code == 500 and response.json()["code"] == "projection_inconsistent"
