"""A production deployment that holds (issue 12 items 3 and 7): the
documented production environment passes ``check --deploy`` without a
warning; every page carries a Content-Security-Policy that no template
needs to weaken; the API docs come from our own static files; every API
error, 500 included, is JSON in the API's error shape."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

from tests.factories import make_user, token_for

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION_ENV = ROOT / "compaction" / "config" / "production.env.example"


def production_env(**overrides) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "COMPACTION_", "DATABASE_URL"))}
    for line in PRODUCTION_ENV.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, value = line.partition("=")
            env[name] = value
    env.update(overrides)
    return env


def manage(env, *args):
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)


def test_check_deploy_with_the_documented_production_settings_prints_no_warning():
    result = manage(production_env(), "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout


def test_without_the_production_settings_check_deploy_names_what_is_missing():
    env = production_env()
    for name in ("DJANGO_SECURE_HSTS_SECONDS", "DJANGO_SECURE_SSL_REDIRECT"):
        env.pop(name)
    result = manage(env, "check", "--deploy")
    assert "security.W004" in result.stderr and "security.W008" in result.stderr


def test_production_settings_read_the_proxy_header_hsts_and_redirect_from_the_environment():
    probe = ("from django.conf import settings as s; print(s.SECURE_PROXY_SSL_HEADER, s.SECURE_HSTS_SECONDS, "
             "s.SECURE_SSL_REDIRECT, s.SESSION_COOKIE_SECURE, s.DATABASES['default']['CONN_HEALTH_CHECKS'], "
             "s.CACHES['default']['BACKEND'])")
    result = manage(production_env(), "shell", "-v", "0", "-c", probe)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["('HTTP_X_FORWARDED_PROTO',", "'https')", "31536000", "True", "True", "True",
                                     "django.core.cache.backends.redis.RedisCache"]


def test_a_malformed_proxy_header_setting_is_refused_at_start():
    result = manage(production_env(DJANGO_SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto: https"), "check")
    assert result.returncode != 0 and "DJANGO_SECURE_PROXY_SSL_HEADER must look like" in result.stderr


def test_kept_database_connections_are_health_checked_before_reuse():
    assert settings.DATABASES["default"]["CONN_HEALTH_CHECKS"] is True
    assert settings.DATABASES["default"]["CONN_MAX_AGE"] == 60


# --- Content-Security-Policy ----------------------------------------------------------

class _Scripts(HTMLParser):
    """Every inline script and inline event handler of an HTML text."""

    def __init__(self):
        super().__init__()
        self.inline = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "script" and not attrs.get("src") and attrs.get("type", "text/javascript") in (
                "text/javascript", "module", ""):
            self.inline.append(f"<script> without src at line {self.getpos()[0]}")
        for name, value in attrs.items():
            if name.startswith("on") or name.startswith("hx-on") or (value or "").strip().lower().startswith(
                    "javascript:"):
                self.inline.append(f"{name}= at line {self.getpos()[0]}")


def test_no_template_holds_an_inline_script_or_event_handler():
    found = {}
    for template in (ROOT / "templates").rglob("*.html"):
        parser = _Scripts()
        parser.feed(template.read_text())
        if parser.inline:
            found[str(template.relative_to(ROOT))] = parser.inline
    assert found == {}


@pytest.mark.django_db
def test_every_page_sends_a_policy_that_allows_only_our_own_scripts(client):
    staff = make_user("csp-staff", staff=True)
    client.force_login(staff)
    for url in ("/", "/queue/", "/activity/", "/admin/"):
        response = client.get(url)
        assert response.status_code == 200, url
        policy = dict(part.strip().split(" ", 1) for part in response["Content-Security-Policy"].split(";"))
        assert policy["script-src"] == "'self'" and policy["default-src"] == "'self'"
        assert policy["object-src"] == "'none'" and policy["frame-ancestors"] == "'none'"
        assert "unsafe" not in policy["style-src"] and "unsafe-eval" not in response["Content-Security-Policy"]
    login = Client().get("/accounts/login/")
    assert "script-src 'self'" in login["Content-Security-Policy"]


def test_htmx_is_told_to_evaluate_no_script_and_inject_no_style():
    base = (ROOT / "templates" / "base.html").read_text()
    config = re.search(r'<meta name="htmx-config" content=\'([^\']+)\'>', base).group(1)
    assert '"allowEval": false' in config and '"includeIndicatorStyles": false' in config
    assert ".htmx-indicator" in (ROOT / "static" / "desk" / "desk.css").read_text()


# --- API docs from our own static files ----------------------------------------------

@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/api/docs/", "/api/redoc/"])
def test_api_docs_load_only_our_own_static_files(client, url):
    response = client.get(url)
    assert response.status_code == 200
    html = response.content.decode()
    assert not re.search(r"(src|href)=\"(https?:)?//", html), "a resource from another origin"
    sources = re.findall(r'<script src="([^"]+)"', html)
    assert sources and all(s.startswith("/static/drf_spectacular_sidecar/") or s.startswith(url) for s in sources)
    parser = _Scripts()
    parser.feed(html)
    assert parser.inline == []
    for source in sources:
        assert client.get(source.replace("&amp;", "&")).status_code == 200, source
    assert "script-src 'self'" in response["Content-Security-Policy"]


# --- every API error is JSON -----------------------------------------------------------

def _client_after_a_bug_in(monkeypatch, module, name: str) -> Client:
    """``module.name`` made to raise, as a bug would; a client that gets the
    500 answer instead of the exception."""

    def broken(**kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(module, name, broken)
    return Client(raise_request_exception=False)


@pytest.mark.django_db
def test_an_unexpected_error_under_the_api_is_a_json_500_in_the_error_shape(monkeypatch):
    from conversations import selectors

    client = _client_after_a_bug_in(monkeypatch, selectors, "conversations_visible")
    user = make_user("api-500", role="integrator")
    response = client.get("/api/v1/conversations/", HTTP_AUTHORIZATION=f"Token {token_for(user)}")
    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"code": "server_error", "message": "the server failed to answer; try again"}


@pytest.mark.django_db
def test_an_unexpected_error_on_a_desk_page_stays_an_html_page(monkeypatch):
    from compaction.desk import selectors

    client = _client_after_a_bug_in(monkeypatch, selectors, "conversation_list")
    client.force_login(make_user("desk-500", staff=True))
    response = client.get("/")
    assert response.status_code == 500 and response["Content-Type"].startswith("text/html")


@pytest.mark.django_db
def test_a_request_django_refuses_itself_under_the_api_is_json_too(settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 2
    client = Client(raise_request_exception=False)
    response = client.get("/api/v1/conversations/?a=1&b=2&c=3")
    assert response.status_code == 400
    assert response.json()["code"] == "bad_request"
