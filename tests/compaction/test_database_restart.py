"""A database restart costs no web request a 500 (issue 12 item 3):
connections a web process keeps (``CONN_MAX_AGE``) are health-checked
before a request reuses them (``CONN_HEALTH_CHECKS``). A gunicorn server on
a throwaway PostgreSQL cluster (``tests.faults``) the test restarts."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.compaction.api.test_throttles import gunicorn, wait_until_up
from tests.faults import PrivatePostgres, django_env, free_port, postgres_bin, run_django

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(postgres_bin() is None, reason="needs PostgreSQL's server binaries")]


def test_the_first_request_after_a_database_restart_is_answered_not_500(tmp_path):
    cluster = PrivatePostgres()
    try:
        name = f"restart_{uuid.uuid4().hex[:8]}"
        cluster.sql(f"CREATE DATABASE {name}")
        env = django_env(cluster.url(name))
        token = run_django(
            "from django.core.management import call_command\ncall_command('migrate', verbosity=0)\n"
            "from tests.factories import make_user, token_for\nprint(token_for(make_user('reader', role='integrator')))",
            env, timeout=300).strip().splitlines()[-1]
        port = free_port()
        server = gunicorn(port, env)
        try:
            wait_until_up(port, server)
            url = f"http://127.0.0.1:{port}/api/v1/conversations/"
            headers = {"Authorization": f"Token {token}"}
            assert httpx.get(url, headers=headers, timeout=30).status_code == 200  # the connection is kept
            cluster.stop()
            cluster.start()
            answers = [httpx.get(url, headers=headers, timeout=30).status_code for _ in range(3)]
        finally:
            server.terminate()
            server.wait(timeout=30)
        assert answers == [200, 200, 200]
    finally:
        cluster.close()
