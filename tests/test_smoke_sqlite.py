"""The embedded defaults work: with nothing set, the app runs on a SQLite file
under var/ (WAL mode) with the filesystem broker. Runs in subprocesses so the
test database of the rest of the suite is untouched."""

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.factories import conversation_document

ROOT = Path(__file__).resolve().parents[1]


def manage(env, *args, stdin=None):
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
        input=stdin, timeout=180,
    )


def test_app_runs_on_the_sqlite_default(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE", "DJANGO_SECRET_KEY"}}
    env.update(DJANGO_DEBUG="1", COMPACTION_VAR_DIR=str(tmp_path / "var"))
    migrated = manage(env, "migrate", "--noinput")
    assert migrated.returncode == 0, migrated.stderr
    assert (tmp_path / "var" / "compaction.sqlite3").exists()

    jsonl = tmp_path / "c.jsonl"
    jsonl.write_text(json.dumps(conversation_document(31)) + "\n")
    imported = manage(env, "import_conversations", str(jsonl))
    assert imported.returncode == 0, imported.stderr
    assert "31 pairs, 1 planned segments" in imported.stdout

    probe = manage(env, "shell", "-v", "0", "-c", (
        "from django.db import connection; from django.conf import settings;"
        "from conversations.models import Segment;"
        "c = connection.cursor(); c.execute('PRAGMA journal_mode'); print(c.fetchone()[0]);"
        "print(settings.CELERY_BROKER_URL); print(Segment.objects.count())"
    ))
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.split() == ["wal", "filesystem://", "1"]


def test_without_a_secret_key_and_debug_the_app_refuses_to_start(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in {"DJANGO_SECRET_KEY", "DJANGO_DEBUG", "DJANGO_SETTINGS_MODULE"}}
    env["COMPACTION_VAR_DIR"] = str(tmp_path / "var")
    result = manage(env, "check")
    assert result.returncode != 0 and "DJANGO_SECRET_KEY is not set" in result.stderr


def test_the_review_queue_index_is_kept_on_sqlite_too(tmp_path):
    """Migration 0018's triggers exist on the SQLite default as on
    PostgreSQL: a summary written awaits review; a review takes it out."""
    env = {k: v for k, v in os.environ.items()
           if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE", "DJANGO_SECRET_KEY"}}
    env.update(DJANGO_DEBUG="1", COMPACTION_VAR_DIR=str(tmp_path / "var"))
    assert manage(env, "migrate", "--noinput").returncode == 0
    jsonl = tmp_path / "c.jsonl"
    jsonl.write_text(json.dumps(conversation_document(31)) + "\n")
    assert manage(env, "import_conversations", str(jsonl)).returncode == 0
    compacted = manage(env, "compact", "--inline")
    assert compacted.returncode == 0, compacted.stderr
    probe = manage(env, "shell", "-v", "0", "-c", (
        "from django.contrib.auth.models import User;"
        "from compaction.models import Review, ReviewAwaiting, SummaryGeneration;"
        "g = SummaryGeneration.objects.get(); print(ReviewAwaiting.objects.filter(generation=g).count());"
        "u = User.objects.create(username='r');"
        "Review.objects.create(job=g.job, generation=g, reviewer=u, verdict='approved', note='ok');"
        "print(ReviewAwaiting.objects.count())"
    ))
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.split() == ["1", "0"]
