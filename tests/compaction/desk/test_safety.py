"""Conversation text and model output are data, never markup (issue 5 §7).

Hostile payloads are fed through every field a desk page shows; no page
may return them unescaped."""

from __future__ import annotations

import pytest
from django.urls import reverse

from compaction.models import CompactionJob
from compaction.actions import do_review_record
from compaction.bindings.segments import conversation_plan
from tests.compaction.desk.conftest import XSS, ingest, make_failed, make_succeeded
from tests.factories import conversation_document, make_user

pytestmark = pytest.mark.django_db

PAYLOADS = ['<script>alert("x")</script>', '<img src=x onerror="alert(1)">', "<img src=x onerror=alert(2)>"]


@pytest.fixture
def hostile(db, django_capture_on_commit_callbacks):
    doc = conversation_document(50, scope="default", external_id="conv-<script>x</script>", title="Title " + XSS)
    for m in doc["messages"][:40]:
        m["content"] = m["content"] + " " + XSS + " <img src=x onerror=alert(2)>"
    conversation = ingest(doc)
    succeeded, failed, stale = conversation_plan(conversation=conversation)
    make_succeeded(succeeded, text="Summary " + XSS)
    make_failed(failed, code="tool_calls", raw_output="raw " + XSS)
    failed.attempts.update(failure_detail="detail " + XSS)
    # An edit after binding makes a diff of hostile text on the segment page.
    doc["messages"][1]["content"] = "edited " + XSS
    ingest(doc)
    operator = make_user("op", role="operator")
    do_review_record(job=succeeded, reviewer=operator, verdict="needs_work", note="note " + XSS)
    from compaction.actions import do_job_rerun

    with django_capture_on_commit_callbacks():
        do_job_rerun(job=CompactionJob.objects.get(pk=failed.pk), actor=operator, reason="reason " + XSS)
    CompactionJob.objects.filter(pk=failed.pk).update(state="failed")
    return conversation, succeeded, failed, operator


def assert_escaped(html: str):
    for payload in PAYLOADS:
        assert payload not in html
    assert "onerror=" not in html.replace("onerror=&quot;", "").replace("onerror=alert(2)&gt;", "")
    assert "&lt;script&gt;" in html


def test_every_page_escapes_conversation_text_and_model_output(client, hostile):
    conversation, succeeded, failed, operator = hostile
    client.force_login(operator)
    urls = [
        reverse("desk-conversations"),
        reverse("desk-conversation", args=[conversation.pk]),
        reverse("desk-job", args=[succeeded.pk]),
        reverse("desk-job", args=[failed.pk]),
        reverse("desk-queue"),
        reverse("desk-activity"),
        reverse("desk-conversations") + "?q=" + "%3Cscript%3E",
    ]
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, url
        assert_escaped(response.content.decode())


def test_segment_page_shows_the_hostile_texts_as_text(client, hostile):
    conversation, succeeded, failed, operator = hostile
    client.force_login(operator)
    html = client.get(reverse("desk-job", args=[succeeded.pk])).content.decode()
    assert "Summary &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert "note &lt;script&gt;" in html
    import re

    (diff,) = re.findall(r'<p class="worddiff"[^>]*>(.*?)</p>', html, re.S)
    assert '<ins class="w-add">edited' in diff and "&lt;script&gt;" in diff and "<script>" not in diff
    failed_html = client.get(reverse("desk-job", args=[failed.pk])).content.decode()
    assert "raw &lt;script&gt;" in failed_html and "detail &lt;script&gt;" in failed_html


def test_htmx_partials_escape_too(client, hostile):
    conversation, succeeded, failed, operator = hostile
    client.force_login(operator)
    for url in [reverse("desk-conversations"), reverse("desk-job", args=[failed.pk]) + "?region=live",
                reverse("desk-activity"), reverse("desk-queue")]:
        assert_escaped(client.get(url, HTTP_HX_REQUEST="true").content.decode())
