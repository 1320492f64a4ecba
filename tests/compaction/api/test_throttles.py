"""The write throttle holds across processes (issue 12 item 5;
``compaction/api/throttles.py``): its counts live in the shared cache — the
database's cache table by default, Redis when ``CACHE_URL`` names one —
so two gunicorn servers together accept no more writes than the limit."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid

import httpx
import pytest

from tests.compaction.conftest import live_db, subprocess_env
from tests.compaction.engine.test_scan import redis_up
from tests.factories import make_user, token_for
from tests.faults import free_port

ROOT = __import__("pathlib").Path(__file__).resolve().parents[3]
LIMIT = 10


def gunicorn(port: int, env: dict) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "compaction.config.wsgi:application", "--bind", f"127.0.0.1:{port}",
         "--workers", "1", "--log-level", "warning"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE)


def wait_until_up(port: int, proc: subprocess.Popen):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
        try:
            httpx.get(f"http://127.0.0.1:{port}/api/v1/", timeout=2)
            return
        except httpx.TransportError:
            time.sleep(0.2)
    raise AssertionError("gunicorn never answered")


@live_db
@pytest.mark.slow
@pytest.mark.parametrize("cache_url", ["", "redis://127.0.0.1:6379/1"], ids=["database-cache", "redis"])
def test_two_server_processes_together_accept_no_more_writes_than_the_limit(cache_url):
    if cache_url and not redis_up():
        pytest.skip("needs Redis")
    from django.core.cache import cache

    cache.clear()
    token = token_for(make_user(f"writer-{uuid.uuid4().hex[:6]}", role="operator"))
    env = subprocess_env(COMPACTION_API_WRITE_RATE=f"{LIMIT}/minute", CACHE_URL=cache_url,
                         CACHE_KEY_PREFIX=f"throttle-test-{uuid.uuid4().hex[:8]}")
    ports = [free_port(), free_port()]
    servers = [gunicorn(port, env) for port in ports]
    try:
        for port, proc in zip(ports, servers):
            wait_until_up(port, proc)
        answers = {port: [] for port in ports}
        for i in range(3 * LIMIT):
            port = ports[i % 2]
            response = httpx.post(f"http://127.0.0.1:{port}/api/v1/jobs/999999999/rerun/",
                                  json={"reason": "throttle test"}, headers={"Authorization": f"Token {token}"},
                                  timeout=30)
            answers[port].append(response.status_code)
    finally:
        for proc in servers:
            proc.terminate()
        for proc in servers:
            proc.wait(timeout=30)
    every = [status for statuses in zip(*answers.values()) for status in statuses]
    # Each server alone is under its own count of the limit (15 requests each):
    # only a shared count refuses the 11th write of the two together.
    assert every[:LIMIT] == [404] * LIMIT, every
    assert every[LIMIT:] == [429] * (2 * LIMIT), every
    assert all(404 in statuses for statuses in answers.values())
