"""A real Celery worker on its own queue of a Redis broker, for the tests
and the engine benchmark that need one (and the queue gone afterwards)."""

from __future__ import annotations

import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def celery_worker(*, queue: str, env: dict, redis_url: str, processes: int = 1, stop_timeout: float = 20,
                  stderr=subprocess.DEVNULL, maintenance: str | None = None):
    """A prefork worker consuming only ``queue`` (and ``maintenance``, the
    maintenance queue, when given: the worker then also asks for the scan
    itself); stopped, and the queues' unconsumed messages dropped, on the
    way out."""
    queues = [queue] + ([maintenance] if maintenance else [])
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "compaction", "worker", "--pool=prefork", "-c", str(processes),
         "-Q", ",".join(queues), "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "warning",
         "-n", f"{queue}@%h"], env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        yield proc
    finally:
        import redis

        try:
            redis.Redis.from_url(redis_url, socket_connect_timeout=2).delete(*queues)
        except redis.RedisError:
            pass  # a fault test's own Redis may be down by now
        proc.terminate()
        try:
            proc.wait(timeout=stop_timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
