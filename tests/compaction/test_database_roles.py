"""The least-privilege application role of the README (issue 12 item 7;
``compaction/config/app_role.sql``): it runs the product — ingest, planning,
an attempt that writes a generation — but cannot TRUNCATE any table, nor
UPDATE or DELETE a summary generation. Granted inside the test's
transaction, so the role and its grants vanish with it."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from django.db import connection, transaction
from psycopg import errors

from compaction.bindings.segments import conversation_plan
from compaction.engine.run import job_run
from compaction.models import SummaryGeneration
from tests.compaction.conftest import RecordingProvider, ingest
from tests.factories import conversation_document

pytestmark = pytest.mark.django_db

SQL = Path(__file__).resolve().parents[2] / "compaction" / "config" / "app_role.sql"


@pytest.fixture
def as_app_role():
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL roles")
    role = f"compaction_app_test_{uuid.uuid4().hex[:8]}"
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE ROLE "{role}" NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE')
        script = "\n".join(line for line in SQL.read_text().splitlines() if not line.startswith("--"))
        for statement in filter(str.strip, script.split(";")):
            cursor.execute(statement.replace(':"app"', f'"{role}"'))
        cursor.execute(f'SET ROLE "{role}"')
    try:
        yield role
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET ROLE")


def refused(sql: str) -> bool:
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql)
    except Exception as exc:  # noqa: BLE001 - the cause is checked below
        return isinstance(exc.__cause__, errors.InsufficientPrivilege)
    return False


def test_the_app_role_runs_the_product_but_cannot_truncate_or_rewrite_generations(as_app_role):
    conversation = ingest(conversation_document(30))
    (job,) = conversation_plan(conversation=conversation)
    job_run(job_id=job.pk, provider=RecordingProvider())
    generation = SummaryGeneration.objects.get(job=job)
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_user")
        assert cursor.fetchone()[0] == as_app_role
    assert refused("TRUNCATE compaction_summarygeneration CASCADE")
    assert refused(f"UPDATE compaction_summarygeneration SET text = 'rewritten' WHERE id = {generation.pk}")
    assert refused(f"DELETE FROM compaction_summarygeneration WHERE id = {generation.pk}")
    assert refused("DELETE FROM compaction_promptversion")
    assert refused("TRUNCATE compaction_compactionjob CASCADE")
    assert refused("TRUNCATE conversations_message CASCADE")
    assert refused("CREATE TABLE compaction_sneaky (id int)")
    assert SummaryGeneration.objects.get(pk=generation.pk).text == generation.text
