"""Test settings: the real settings, on PostgreSQL unless told otherwise.

``DATABASE_URL`` may point elsewhere (each developer's worktree uses its own
database name); the SQLite default is exercised by ``tests/test_smoke_sqlite.py``
in a subprocess.
"""

import os

os.environ.setdefault("DJANGO_SECRET_KEY", "tests-only-secret-key")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/compaction")
os.environ.setdefault("COMPACTION_VAR_DIR", os.path.join(os.path.dirname(os.path.dirname(__file__)), "var", "test"))

from compaction.config.settings import *  # noqa: E402,F401,F403

ALLOWED_HOSTS = ["testserver", "localhost", "127.0.0.1"]
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# The test client's address may scrape /metrics (tests/compaction/test_metrics_access.py
# checks the guard itself), and every scrape reads the database afresh.
COMPACTION_METRICS_ALLOW = ["127.0.0.1"]
COMPACTION_METRICS_CACHE_SECONDS = 0
