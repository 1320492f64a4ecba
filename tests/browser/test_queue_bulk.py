"""After a bulk re-run on /queue/ the rows stay on the page with their live
state until they settle; the button counts the selection (issue 16 §4)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from compaction.models import CompactionJob, JobState
from tests.browser.conftest import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

SETTLED = ".state-succeeded, .state-failed, .state-exhausted"


@pytest.fixture
def engine():
    return pytest.importorskip("compaction.tasks", reason="the engine (compaction.tasks) is not on this branch yet")


def test_bulk_rerun_keeps_its_rows_with_their_live_state_until_they_settle(live_server, page, shot, world, engine):
    failed, exhausted = world.failed.pk, world.exhausted.pk
    sign_in(page, live_server, "olga")
    page.goto(f"{live_server.url}{reverse('desk-queue')}")
    button = page.locator("button[data-bulk-submit]")
    # The button counts the selection, and is disabled while there is none.
    assert button.inner_text() == "Re-run selected (0)" and button.is_disabled()
    page.check(f"#pick-{failed}")
    assert button.inner_text() == "Re-run selected (1)" and button.is_enabled()
    assert page.inner_text("[data-bulk-status]") == "1 of 2 selected"
    assert page.evaluate("document.getElementById('pick-all').indeterminate") is True
    page.check("#pick-all")
    assert button.inner_text() == "Re-run selected (2)"
    page.uncheck("#pick-all")
    assert button.inner_text() == "Re-run selected (0)"
    page.check(f"#pick-{failed}")
    page.check(f"#pick-{exhausted}")
    assert button.inner_text() == "Re-run selected (2)"
    page.fill("#id_reason", "provider outage is over")
    page.check("#id_confirm")
    shot(page, "queue-bulk-selected")
    button.click()

    # The rows are still on the page, pending, and poll by themselves.
    page.wait_for_selector("text=Re-ran 2 range(s)")
    assert f"kept={failed},{exhausted}" in page.url
    for pk in (failed, exhausted):
        page.wait_for_selector(f"#kept #row-{pk} .state-pending")
    assert page.get_attribute("#kept", "hx-trigger") == "every 2s"
    assert "2 of 2 ranges still pending or running" in page.inner_text("#kept")
    assert {j.state for j in CompactionJob.objects.filter(pk__in=[failed, exhausted])} == {JobState.PENDING}
    shot(page, "queue-bulk-kept-pending")
    page.evaluate("window.__noReload = true")  # a full page load would wipe it out

    # The worker, in this process: the page follows each job as it settles.
    engine.run_job(failed)
    page.wait_for_selector(f"#kept #row-{failed} :is({SETTLED})", timeout=15_000)
    engine.run_job(exhausted)
    page.wait_for_selector(f"#kept #row-{exhausted} :is({SETTLED})", timeout=15_000)
    page.wait_for_selector("#kept >> text=all 2 ranges settled.")
    assert page.get_attribute("#kept", "hx-trigger") is None  # polling stopped
    assert page.evaluate("window.__noReload") is True
    states = dict(CompactionJob.objects.filter(pk__in=[failed, exhausted]).values_list("pk", "state"))
    for pk, state in states.items():
        assert page.locator(f"#kept #row-{pk} .state-{state}").count() == 1
    # Settled rows can be selected again, and the count follows.
    assert button.inner_text() == "Re-run selected (0)"
    page.check(f"#pick-{failed}")
    assert button.inner_text() == "Re-run selected (1)"
    shot(page, "queue-bulk-kept-settled")
