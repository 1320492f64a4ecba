"""Real headless Chromium (Debian's ``chromium``) driven by Playwright
against pytest-django's live server. ``scripts/browser`` installs Chromium
when it is missing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.compaction.desk.conftest import as_user, world  # noqa: F401  (shared fixtures)

# Playwright's sync API runs an event loop in this thread; the test code's
# own ORM calls are still plain synchronous calls.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
ARTEFACTS = Path(__file__).resolve().parents[2] / "test-artefacts" / "screenshots"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]


@pytest.fixture(autouse=True)
def migration_rows(request):
    """The rows data migrations write (role groups, prompt versions).

    Browser tests need a real transaction (the live server is another
    thread), so they run on a flushed database; when non-transactional
    tests ran first in the session, the serialized copy of these rows is
    not restored, so write them again (both functions are idempotent)."""
    if "live_server" not in request.fixturenames:
        return
    import importlib

    from django.apps import apps

    request.getfixturevalue("transactional_db")
    importlib.import_module("compaction.migrations.0004_prompt_versions").create_versions(apps, None)
    importlib.import_module("compaction.migrations.0005_role_groups").create_groups(apps, None)


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run scripts/browser (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()


@pytest.fixture
def shot():
    ARTEFACTS.mkdir(parents=True, exist_ok=True)

    def save(page, name: str):
        path = ARTEFACTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return save


def sign_in(page, live_server, username: str, password: str = "pw-for-tests"):
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    """Run the browser tests after every other test. They need real commits
    (the live server is another thread), so each ends with a flush; other
    transactional tests that restore a serialized copy of the database then
    meet a state they did not expect. Last, they disturb nobody."""
    browser = [item for item in items if item.get_closest_marker("browser")]
    if browser:
        others = [item for item in items if not item.get_closest_marker("browser")]
        items[:] = others + browser
