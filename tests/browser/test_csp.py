"""The desk and the API docs work in Chromium under the
Content-Security-Policy (issue 12 item 7): no violation is reported on any
page, htmx still swaps regions in place, the queue's "select all" box (a
static script now, no inline handler) still works, and Swagger UI and ReDoc
render from our own static files."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.browser.conftest import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

# Devtools runs this before any page script, outside the page's policy.
RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener('securitypolicyviolation', e => window.__csp.push(
    e.violatedDirective + ' ' + (e.blockedURI || 'inline') + ' ' + (e.sourceFile || '') + ':' + e.lineNumber));
"""


def violations(page) -> list[str]:
    return page.evaluate("window.__csp")


def test_desk_pages_report_no_violation_and_htmx_and_select_all_work(live_server, page, world):
    page.add_init_script(RECORD_VIOLATIONS)
    sign_in(page, live_server, "olga")
    for url in (reverse("desk-conversations"), reverse("desk-conversation", args=[world.conversation.pk]),
                reverse("desk-job", args=[world.failed.pk]), reverse("desk-activity")):
        page.goto(f"{live_server.url}{url}")
        page.wait_for_load_state("networkidle")
        assert violations(page) == [], url
    page.goto(f"{live_server.url}{reverse('desk-queue')}")
    boxes = page.locator("input[name=jobs]")
    assert boxes.count() >= 2
    page.check("#pick-all")
    assert all(boxes.nth(i).is_checked() for i in range(boxes.count()))
    page.uncheck("#pick-all")
    assert not any(boxes.nth(i).is_checked() for i in range(boxes.count()))
    # An htmx swap in place: filtering the queue keeps the page (no reload).
    page.evaluate("window.__noReload = true")
    page.select_option("select[name=state]", "exhausted")
    for _ in range(100):  # (wait_for_function evaluates a string: the policy forbids that too)
        if boxes.count() == 1:
            break
        page.wait_for_timeout(100)
    assert boxes.count() == 1
    assert page.evaluate("window.__noReload") is True
    assert violations(page) == []


@pytest.mark.parametrize("path, ready", [("/api/docs/", ".swagger-ui .info .title"),
                                         ("/api/redoc/", "h1:has-text('Compaction Desk API')")])
def test_api_docs_render_offline_from_our_static_files(live_server, page, path, ready):
    page.add_init_script(RECORD_VIOLATIONS)
    # ReDoc's footer names an image on its CDN; the policy blocks it, so
    # nothing from elsewhere is ever fetched.
    elsewhere = []
    page.on("requestfinished", lambda r: elsewhere.append(r.url) if not r.url.startswith(
        (live_server.url, "data:", "blob:")) else None)
    page.goto(f"{live_server.url}{path}")
    page.wait_for_selector(ready, timeout=20_000)
    assert "Compaction Desk API" in page.inner_text("body")
    assert elsewhere == []
    assert [v for v in violations(page) if v.startswith("script-src")] == []
