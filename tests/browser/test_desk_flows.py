"""The desk in a real browser (issue 5, "Tests that must exist")."""

from __future__ import annotations

import pytest
from django.urls import reverse

from compaction.models import AuditEvent, CompactionJob, JobState, Review
from tests.browser.conftest import sign_in

@pytest.fixture
def engine(settings):
    """The engine's task module; re-runs enqueue through it after commit.
    The queue is not eager here: the test plays the worker when it wants the
    job to move, so the page has to notice by itself."""
    # A plain import: an engine that fails to import fails these tests, never skips them.
    from compaction import tasks

    return tasks


pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def test_operator_reruns_a_failed_segment_and_sees_the_state_change_without_reloading(
        live_server, page, shot, world, engine):
    sign_in(page, live_server, "olga")
    shot(page, "conversations")
    page.click("text=conv-a")
    page.wait_for_selector("text=Timeline")
    shot(page, "conversation")
    page.click(f'a[href="/jobs/{world.failed.pk}/"] >> nth=0')
    page.wait_for_selector("text=Re-run this range")
    # A marker that a full page load would wipe out.
    page.evaluate("window.__noReload = true")
    shot(page, "segment-failed")
    page.click("text=What the model returned >> nth=0")
    assert "Let me look that up <script>" in page.inner_text("pre.output >> nth=0")

    page.fill("#id_rerun-reason", "provider outage is over")
    page.check("#id_rerun-confirm")
    page.click("button:has-text('Re-run')")
    page.wait_for_selector(".live-head .state-pending")
    assert page.evaluate("window.__noReload") is True
    assert "queued again" in page.inner_text("#live")
    assert CompactionJob.objects.get(pk=world.failed.pk).state == JobState.PENDING
    assert AuditEvent.objects.get(action="job.rerun").reason == "provider outage is over"
    shot(page, "segment-rerun-pending")


def test_segment_page_polls_until_the_job_settles(live_server, page, shot, world, engine):
    """While a job is unsettled its state refreshes by itself; the worker
    finishing it flips the page, and polling stops once it settles."""
    CompactionJob.objects.filter(pk=world.failed.pk).update(state=JobState.PENDING, max_attempts=3)
    sign_in(page, live_server, "olga")
    page.goto(f"{live_server.url}{reverse('desk-job', args=[world.failed.pk])}")
    page.evaluate("window.__noReload = true")
    page.wait_for_selector(".live-head .state-pending")
    assert page.get_attribute("#live", "hx-trigger") == "every 2s"
    engine.run_job(world.failed.pk)  # the worker, in this process
    page.wait_for_selector(".live-head .state-succeeded, .live-head .state-failed, .live-head .state-exhausted",
                           timeout=15_000)
    assert page.evaluate("window.__noReload") is True
    assert page.get_attribute("#live", "hx-trigger") is None
    shot(page, "segment-settled")


def test_support_records_a_verdict_and_sees_it_in_the_activity_page(live_server, page, shot, world):
    sign_in(page, live_server, "sue")
    page.goto(f"{live_server.url}{reverse('desk-job', args=[world.succeeded.pk])}")
    assert page.locator("text=Re-run this range").count() == 0
    shot(page, "segment-succeeded")
    page.check("input[name=verdict][value=needs_work]")
    page.fill("#id_note", "The refund date is missing.")
    page.click("button:has-text('Record verdict')")
    page.wait_for_selector("#review >> text=Verdict recorded.")
    page.click("nav.mainnav >> text=Activity")
    page.wait_for_selector("#results td >> text=review.record")
    assert "The refund date is missing." in page.inner_text("#results")
    assert "sue" in page.inner_text("#results")
    shot(page, "activity")


def test_operator_bulk_reruns_from_the_queue(live_server, page, shot, world, engine):
    sign_in(page, live_server, "olga")
    page.click("nav.mainnav >> text=Failed ranges")
    page.wait_for_selector("text=Re-run the selected ranges")
    shot(page, "queue")
    page.check(f"#pick-{world.failed.pk}")
    page.check(f"#pick-{world.exhausted.pk}")
    page.fill("#id_reason", "bulk retry after fix")
    page.check("#id_confirm")
    page.click("button:has-text('Re-run selected')")
    page.wait_for_selector("text=Re-ran 2 range(s)")
    assert set(CompactionJob.objects.filter(pk__in=[world.failed.pk, world.exhausted.pk])
               .values_list("state", flat=True)) == {JobState.PENDING}


def test_projection_preview_loads_by_itself_and_follows_the_budget(live_server, page, shot, world):
    sign_in(page, live_server, "sue")
    page.goto(f"{live_server.url}{reverse('desk-conversation', args=[world.conversation.pk])}")
    page.wait_for_selector("#preview >> text=complete: nothing left out")
    shot(page, "conversation-preview")
    page.fill("#id_budget", "400")
    page.click("#preview button")
    page.wait_for_selector("#preview >> text=incomplete: some pairs omitted")
    assert page.locator("#preview li.as-omitted").count() > 0


def test_pages_read_without_javascript(live_server, browser, world):
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1280, "height": 800})
    page = context.new_page()
    sign_in(page, live_server, "sue")
    page.click("text=conv-a")
    page.click(f'a[href="/jobs/{world.succeeded.pk}/"] >> nth=0')
    assert "Summary of the ten answers" in page.inner_text(".sources")
    page.check("input[name=verdict][value=approved]")
    page.fill("#id_note", "Matches the sources.")  # a verdict's note is its reason: required
    page.click("button:has-text('Record verdict')")
    page.wait_for_selector("text=Verdict recorded.")
    context.close()
    review = Review.objects.get(job=world.succeeded)
    assert (review.verdict, review.note, review.reviewer.username) == ("approved", "Matches the sources.", "sue")


def test_a_visitor_who_is_not_signed_in_is_sent_to_the_login_page(live_server, page, shot, db):
    page.goto(f"{live_server.url}/")
    page.wait_for_selector("#id_username")
    assert page.url == f"{live_server.url}/accounts/login/?next=/"
    assert page.locator("#id_password").count() == 1 and page.locator("button[type=submit]").count() == 1
    assert shot(page, "login").stat().st_size > 0


def test_the_assembly_inspector_follows_the_budget_in_place(live_server, page, shot, world):
    from tests.compaction.desk.conftest import ingest
    from tests.compaction.desk.test_assembly_page import tool_run_document

    conversation = ingest(tool_run_document())
    sign_in(page, live_server, "sue")
    page.goto(f"{live_server.url}{reverse('desk-conversation', args=[conversation.pk])}")
    page.click("text=Open the assembly inspector")
    page.wait_for_selector("#inspection >> text=no budget")
    assert page.locator("#inspection .fate-dropped").count() == 0
    page.fill("#id_budget", "2500")
    page.fill("#id_recent_tool_rings", "1")
    page.click("button:has-text('Assemble')")
    page.wait_for_selector("#inspection >> text=at 2500 tokens")
    assert page.locator("#inspection td .fate-dropped").count() > 0
    assert "Side-effect ledger" in page.inner_text("#inspection")
    assert "/assembly/" in page.url and "budget=" not in page.url  # swapped in place, not a new page
    shot(page, "assembly-inspector")
