"""``/conversations/{id}/``: bands, segments, the generation chain, re-running
the conversation and the projection preview (issue 5 §3; SPEC §6)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from compaction.models import AuditEvent, CompactionJob, JobState
from tests.compaction.desk.conftest import ingest
from tests.factories import conversation_document

pytestmark = pytest.mark.django_db


def test_conversation_page_shows_bands_tail_segments_and_generation_chain(as_user, world):
    html = as_user(world.support).get(reverse("desk-conversation", args=[world.conversation.pk])).content.decode()
    assert html.count('class="band bg-') == 3
    assert "raw tail · 20 pairs" in html
    assert f'href="/jobs/{world.failed.pk}/"' in html
    assert "<svg" in html and "generation 1:" in html


def test_conversation_of_another_scope_is_404(as_user, world):
    url = reverse("desk-conversation", args=[world.other_conversation.pk])
    assert as_user(world.support).get(url).status_code == 404
    assert as_user(world.staff).get(url).status_code == 200


def test_succeeded_job_whose_source_changed_is_shown_source_changed(as_user, world):
    from tests.compaction.desk.conftest import ingest
    from tests.factories import conversation_document

    doc = conversation_document(50, scope="default", external_id="conv-a", title="Refund for order 88232")
    doc["messages"][1]["content"] = "Answer 0 was corrected: the fee was 1.00 EUR."
    ingest(doc)
    response = as_user(world.support).get(reverse("desk-conversation", args=[world.conversation.pk]))
    first = response.context["segments"][0]
    assert first.job.pk == world.succeeded.pk and first.state == "source_changed" and first.source_valid is False


def test_operator_reruns_a_whole_conversation(as_user, world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks():
        response = as_user(world.operator).post(
            reverse("desk-conversation-rerun", args=[world.conversation.pk]),
            {"rerun-reason": "model upgraded", "rerun-confirm": "on"})
    assert response.status_code == 302
    assert set(CompactionJob.objects.filter(pk__in=[world.failed.pk, world.exhausted.pk])
               .values_list("state", flat=True)) == {JobState.PENDING}
    assert AuditEvent.objects.get(action="conversation.rerun").reason == "model upgraded"


@pytest.mark.parametrize("role", ["support", "outsider"])
def test_conversation_rerun_is_403_for_non_operators(as_user, world, role):
    response = as_user(getattr(world, role)).post(
        reverse("desk-conversation-rerun", args=[world.conversation.pk]),
        {"rerun-reason": "x", "rerun-confirm": "on"})
    assert response.status_code == 403 and not AuditEvent.objects.exists()


def test_conversation_rerun_needs_a_reason_and_stays_in_scope(as_user, world):
    client = as_user(world.operator)
    response = client.post(reverse("desk-conversation-rerun", args=[world.conversation.pk]), {"rerun-confirm": "on"})
    assert response.status_code == 400 and "Give a reason" in response.content.decode()
    response = client.post(reverse("desk-conversation-rerun", args=[world.other_conversation.pk]),
                           {"rerun-reason": "x", "rerun-confirm": "on"})
    assert response.status_code == 404 and not AuditEvent.objects.exists()


def test_conversation_page_loads_the_preview_lazily(as_user, world):
    html = as_user(world.support).get(reverse("desk-conversation", args=[world.conversation.pk])).content.decode()
    assert 'hx-trigger="load"' in html and f"?budget=65536" in html
    assert "Uses <strong>" not in html


def test_projection_preview_shows_how_each_pair_is_given_and_why(as_user, world):
    url = reverse("desk-conversation", args=[world.conversation.pk])
    response = as_user(world.support).get(f"{url}?budget=1000000&prefer=summary")
    preview = {p["index"]: (p["as"], p["reason"]) for p in response.context["preview_pairs"]}
    assert preview[0] == ("summary", None)
    assert preview[10] == ("raw", "failed") and preview[20][0] == "raw"
    assert preview[49] == ("raw", None)
    assert response.context["preview"]["complete"] is True
    html = response.content.decode()
    assert "complete: nothing left out" in html and ">failed</span>" in html


def test_projection_preview_with_a_small_budget_omits_pairs_and_says_so(as_user, world):
    url = reverse("desk-conversation", args=[world.conversation.pk])
    response = as_user(world.support).get(f"{url}?budget=300", HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert html.lstrip().startswith('<section class="card" id="preview"')
    assert "incomplete: some pairs omitted" in html and "over_budget" in html
    assert '<li class="as-omitted"' in html


@pytest.mark.parametrize("budget, message", [("lots", "whole number"), ("0", "at least 1")])
def test_projection_preview_reports_a_bad_budget(as_user, world, budget, message):
    url = reverse("desk-conversation", args=[world.conversation.pk])
    html = as_user(world.support).get(f"{url}?budget={budget}").content.decode()
    assert message in html


def test_projection_preview_prefers_raw_by_default_and_toggles_to_summaries(as_user, world):
    url = reverse("desk-conversation", args=[world.conversation.pk])
    client = as_user(world.support)
    response = client.get(f"{url}?budget=1000000")
    assert response.context["preview"]["prefer"] == "raw"
    assert {p["as"] for p in response.context["preview_pairs"]} == {"raw"}
    html = response.content.decode()
    assert 'name="prefer" value="raw" checked' in html and 'name="prefer" value="summary">' in html
    html = client.get(f"{url}?budget=1000000&prefer=summary", HTTP_HX_REQUEST="true").content.decode()
    assert html.lstrip().startswith('<section class="card" id="preview"')
    assert '<li class="as-summary" title="pair 0: summary">' in html
    assert 'name="prefer" value="summary" checked' in html


def test_projection_preview_shows_the_same_account_as_the_api(as_user, world):
    from compaction.context.projection import conversation_projection

    url = reverse("desk-conversation", args=[world.conversation.pk])
    for prefer in ("raw", "summary"):
        response = as_user(world.support).get(f"{url}?budget=3000&prefer={prefer}")
        api = conversation_projection(conversation=world.conversation, budget_bytes=3000, prefer=prefer)
        assert response.context["preview_pairs"] == api["pairs"]
        assert response.context["preview"]["used"] == api["used"]


def test_projection_preview_shows_the_text_that_would_be_sent_only_when_asked_and_escaped(as_user, world):
    from tests.compaction.desk.conftest import XSS

    doc = conversation_document(3, scope="default", external_id="conv-xss")
    doc["messages"][5]["content"] = "Answer with " + XSS
    conversation = ingest(doc)
    url = reverse("desk-conversation", args=[conversation.pk])
    client = as_user(world.support)
    html = client.get(f"{url}?budget=100000").content.decode()
    assert 'id="preview-text"' not in html
    html = client.get(f"{url}?budget=100000&text=1", HTTP_HX_REQUEST="true").content.decode()
    assert 'id="preview-text"' in html and "Pair 2: raw" in html
    assert XSS not in html and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert 'name="text" value="1" checked' in html


def test_projection_preview_refuses_an_unknown_preference(as_user, world):
    url = reverse("desk-conversation", args=[world.conversation.pk])
    html = as_user(world.support).get(f"{url}?budget=1000&prefer=newest").content.decode()
    assert "prefer must be one of: raw, summary" in html
