"""Shared set-up for benchmark scripts: a dedicated PostgreSQL database."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def use_database(name: str) -> None:
    """Point Django at PostgreSQL database ``name`` (created if missing), migrated."""
    base = os.environ.get("BENCH_DATABASE_SERVER", "postgres://postgres@127.0.0.1:5432")
    os.environ["DATABASE_URL"] = f"{base}/{name}"
    os.environ.setdefault("DJANGO_SECRET_KEY", "bench-only")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "compaction.config.settings")
    os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "testserver")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    sys.path.insert(0, str(ROOT))
    import psycopg

    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def interpreter() -> str:
    """The Python running the benchmark, as a figure's context: version,
    executable, and whether libpython is a shared library (a default pyenv
    build) or linked in (Debian's, which is also built with profile-guided
    and link-time optimisation): the same code runs 10-25% slower on the
    first (README, "Which Python")."""
    with open("/proc/self/maps") as maps:
        shared = "libpython" in maps.read()
    linked = "libpython shared" if shared else "libpython linked in"
    return f"Python {sys.version.split()[0]} ({os.path.realpath(sys.executable)}, {linked})"


def speed_reference_ms() -> float:
    """The best of five runs of a fixed pure-Python workload (integers, a
    dict, short strings), in ms: printed beside a benchmark's figures so a
    run on a host that is slower than usual shows as such. The load average
    inside the VM does not show it: on 2026-12-01 the same code ran 30-45%
    slower at 22:30 than at 20:50 at the same load average
    (31.7 ms here that evening)."""
    import time

    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        seen: dict[str, int] = {}
        for i in range(200_000):
            key = str(i % 5_000)
            seen[key] = seen.get(key, 0) + i
        best = min(best, time.perf_counter() - start)
    return best * 1000
