"""``compact`` and ``verify_sources`` (issue 3 §8)."""

from __future__ import annotations

import subprocess
import sys
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from compaction.models import Attempt, CompactionJob, JobState, SummaryGeneration
from tests.compaction.conftest import ingest, live_db, subprocess_env
from tests.factories import conversation_document


def run(*args):
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_compact_inline_plans_and_runs_every_range(db):
    conv = ingest(conversation_document(50))
    out = run("compact", "--inline")
    assert "planned 3 new job(s); 3 to run" in out
    assert out.count("succeeded generation #") == 3
    assert SummaryGeneration.objects.filter(conversation=conv).count() == 3
    again = run("compact", "--inline")
    assert "planned 0 new job(s); 0 to run" in again


def test_compact_for_one_conversation_by_external_id(db):
    ingest(conversation_document(30, external_id="c-a"))
    other = ingest(conversation_document(30, external_id="c-b"))
    run("compact", "--inline", "--conversation", "c-a")
    assert not CompactionJob.objects.filter(conversation=other).exists()
    with pytest.raises(CommandError, match="no single conversation"):
        run("compact", "--conversation", "nope")


def test_compact_retry_now_runs_failed_jobs_with_attempts_left(db, settings):
    settings.COMPACTION_FAULT_RATE = 1.0
    settings.COMPACTION_FAULT_KIND = "empty"
    ingest(conversation_document(30))
    assert "failed (empty, attempt 1/2)" in run("compact", "--inline")
    assert "0 to run" in run("compact", "--inline")  # the retry delay has not passed
    assert "exhausted (empty, attempt 2/2)" in run("compact", "--inline", "--retry-now")


def test_compact_wait_gives_up_with_a_clear_message_when_no_worker_runs(db, settings):
    ingest(conversation_document(30))
    with pytest.raises(CommandError, match="is a worker running"):
        run("compact", "--wait", "--timeout", "0.3")


@live_db
def test_several_compact_runs_at_once_make_one_attempt_per_range():
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("needs a shared database")
    for i in range(3):
        ingest(conversation_document(40, external_id=f"par-{i}", prefix=f"p{i}-"))
    procs = [subprocess.Popen([sys.executable, "manage.py", "compact", "--inline"], env=subprocess_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(3)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    assert CompactionJob.objects.count() == 6
    assert CompactionJob.objects.filter(state=JobState.SUCCEEDED).count() == 6
    assert Attempt.objects.count() == 6 and SummaryGeneration.objects.count() == 6


def test_verify_sources_prints_the_stale_bindings(db):
    conv = ingest(conversation_document(40))
    run("compact", "--inline")
    assert "2 binding(s) checked, 0 stale" in run("verify_sources")
    doc = conversation_document(40)
    doc["messages"][25]["content"] = "Answer 12, corrected later."
    ingest(doc)
    out = run("verify_sources")
    assert "STALE job" in out and "[10-19]" in out and "[0-9]" not in out
    assert "2 binding(s) checked, 1 stale, 0 segment digest(s) out of date" in out
    assert conv.pk


def test_compact_refuses_an_openai_configuration_without_a_model(db, settings):
    settings.COMPACTION_PROVIDER = "openai"
    settings.COMPACTION_MODEL = ""
    ingest(conversation_document(30))
    with pytest.raises(CommandError, match="COMPACTION_MODEL"):
        run("compact", "--inline")
