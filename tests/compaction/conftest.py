"""Fixtures for the engine tests: conversations ingested through the real
ingest service, and a provider that records what it was given."""

from __future__ import annotations

import pytest

from compaction.contract import ProviderResult
from compaction.providers.base import Provider
from compaction.providers.extractive import ExtractiveProvider
from conversations.documents import validate_document
from conversations.services.ingest import conversation_ingest
from tests.compaction.providers.openai_server import ScriptedServer
from tests.factories import conversation_document


@pytest.fixture(autouse=True)
def _engine_statements_built_afresh():
    """The engine builds its claim and finish statements once per process;
    here each test builds them again, so it tests the code as it is and not
    a statement an earlier test built (mutation testing runs the tests in a
    process that already built them)."""
    from compaction.engine import claim, finish

    claim._statements.clear()
    finish._success_statements.clear()
    yield


FAIL_EMPTY = {"text": "", "finish_reason": "stop", "model": "extractive-v2"}


def plan(conv):
    from compaction.bindings.segments import conversation_plan

    return conversation_plan(conversation=conv)


def plan_with(conv, **binding):
    from compaction.bindings.segments import conversation_plan

    return conversation_plan(conversation=conv, **binding)


def ingest(doc):
    return conversation_ingest(document=validate_document(doc), actor="tests").conversation


@pytest.fixture
def make_conversation(db):
    def make(n_pairs=30, **kw):
        return ingest(conversation_document(n_pairs, **kw))
    return make


class RecordingProvider(Provider):
    """Wraps the extractive provider and keeps every request it received,
    with whether a database transaction was open during the call."""

    name = "recording"

    def __init__(self, inner=None, *, result=None):
        self.inner = inner or ExtractiveProvider()
        self.model_id = self.inner.model_id
        self.requests = []
        self.in_transaction = []
        self.result = result

    def summarise(self, request):
        from django.db import connection

        self.requests.append(request)
        self.in_transaction.append(connection.in_atomic_block)
        if self.result is not None:
            return ProviderResult(**self.result)
        return self.inner.summarise(request)


@pytest.fixture
def recording_provider():
    return RecordingProvider()


# Tests whose rows other processes or threads must see commit for real. The
# serialized rollback restores the data migrations' rows (prompt versions,
# role groups) that the flush after such a test would otherwise remove.
live_db = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def live_database_url() -> str:
    """The URL of the test database, for worker subprocesses."""
    from django.db import connection

    s = connection.settings_dict
    user = s.get("USER") or "postgres"
    password = f":{s['PASSWORD']}" if s.get("PASSWORD") else ""
    return f"postgres://{user}{password}@{s.get('HOST') or '127.0.0.1'}:{s.get('PORT') or 5432}/{s['NAME']}"


def subprocess_env(**extra) -> dict:
    import os

    env = dict(os.environ)
    env.update({"DJANGO_SETTINGS_MODULE": "tests.settings", "DATABASE_URL": live_database_url(),
                "COMPACTION_AUTO_PLAN": "0"})
    env.update({k: str(v) for k, v in extra.items()})
    return env


@pytest.fixture(autouse=True)
def _no_background_planning(settings):
    """Ingests in these tests do not send planning tasks to the broker;
    the tests that check that hook turn it back on."""
    settings.COMPACTION_AUTO_PLAN = False


def run_on_sqlite(script: str, tmp_path) -> str:
    """Run ``script`` (Python, Django set up by it) in a subprocess on the
    embedded SQLite default under ``tmp_path``; its standard output."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = dict(os.environ, DATABASE_URL="", COMPACTION_VAR_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="tests.settings",
               COMPACTION_AUTO_PLAN="0", COMPACTION_GLOBAL_CONCURRENCY="1")
    proc = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).resolve().parents[2], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


# A scripted OpenAI-compatible server on a real socket (the one edge we do not
# own), and the settings that point providers at it: for the provider tests
# and the assembly endpoint's tool-loop tests.
@pytest.fixture
def server():
    s = ScriptedServer()
    yield s
    s.close()


@pytest.fixture
def openai_settings(settings, server):
    settings.COMPACTION_PROVIDER = "openai"
    settings.COMPACTION_MODEL = "test-model"
    settings.OPENAI_BASE_URL = server.base_url
    settings.OPENAI_API_KEY = "sk-test"
    settings.OPENAI_TIMEOUT_SECONDS = 0.5
    return settings
