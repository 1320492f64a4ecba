"""States at a glance in a real browser (issue 16 §5): a summary whose source
changed and one a newer job replaced read as such on the conversations list,
the conversation page (timeline, generation table, chart) and the segment
page; the activity page shows only the fields an action changed."""

from __future__ import annotations

import pytest
from django.urls import reverse

from compaction import actions
from compaction.models import CompactionJob
from tests.browser.conftest import sign_in
from tests.compaction.desk.conftest import ingest, make_succeeded
from tests.factories import conversation_document

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def edit_first_answer():
    doc = conversation_document(50, scope="default", external_id="conv-a", title="Refund for order 88232")
    doc["messages"][1]["content"] = "Answer 0 was corrected: the fee was 1.00 EUR."
    ingest(doc)


def test_source_changed_and_superseded_summaries_read_as_such(live_server, page, shot, world):
    edit_first_answer()
    sign_in(page, live_server, "olga")
    assert "1 source changed" in page.inner_text("#results .bar-legend")
    conversation_url = f"{live_server.url}{reverse('desk-conversation', args=[world.conversation.pk])}"
    page.goto(conversation_url)
    band = page.locator(".timeline .band").first
    assert "source changed" in band.inner_text() and "bg-source_changed" in band.get_attribute("class")
    assert page.locator("svg.chart rect.bar-source_changed").count() == 1
    assert page.locator("svg.chart text.axis-label").all_text_contents() == ["generation", "summary length (bytes)"]
    assert "UTC" in page.inner_text(".pagehead .facts")
    shot(page, "conversation-source-changed")

    new = actions.do_job_replan(job=CompactionJob.objects.get(pk=world.succeeded.pk), actor=world.operator,
                                reason="bind to the corrected answer")
    make_succeeded(new, number=2, text="Summary of the corrected answers [a-0].")
    page.goto(f"{live_server.url}/")
    legend = page.inner_text("#results .bar-legend")
    assert "1 superseded" in legend and "1 succeeded" in legend
    shot(page, "conversations-states")
    page.goto(conversation_url)
    assert page.locator("svg.chart rect.bar-superseded").count() == 1
    assert page.locator("svg.chart rect.bar-valid").count() == 1
    shot(page, "conversation-superseded")
    page.goto(f"{live_server.url}{reverse('desk-job', args=[world.succeeded.pk])}")
    assert "superseded" in page.inner_text(".live-head")
    shot(page, "segment-superseded")
    page.goto(f"{live_server.url}{reverse('desk-activity')}")
    changes = page.inner_text("#results table.changes")
    assert "source_digest" in changes and "job" in changes
    shot(page, "activity-changed-fields")
