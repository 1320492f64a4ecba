"""Servers a fault test owns and may stop and restart at will (issue 12): a
throwaway PostgreSQL cluster and a Redis, each on its own port in a
temporary directory — never the shared ones on 5432 and 6379.

The cluster runs as the ``postgres`` operating-system user when the tests
run as root (PostgreSQL refuses to run as root); its ``template`` database
is migrated once, and each test gets a fresh copy of it (``database``)."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def postgres_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(found[-1]).parent if found else None


def _as_postgres(args: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


class PrivatePostgres:
    """A PostgreSQL cluster of our own: ``start``, ``stop``, ``url``."""

    def __init__(self):
        self.bin = postgres_bin()
        if self.bin is None:
            raise RuntimeError("no PostgreSQL server binaries under /usr/lib/postgresql")
        self.dir = Path(tempfile.mkdtemp(prefix="compaction-faults-pg-"))
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres")
        self.data = self.dir / "data"
        self.port = free_port()
        subprocess.run(_as_postgres([str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres",
                                     "--no-sync", "-E", "UTF8"]), check=True, capture_output=True)
        self.start()

    def _ctl(self, *args, check=True):
        return subprocess.run(_as_postgres([str(self.bin / "pg_ctl"), "-D", str(self.data), *args]), check=check,
                              capture_output=True, timeout=60)

    def start(self):
        options = (f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c synchronous_commit=off -c full_page_writes=off")
        self._ctl("-o", options, "-l", str(self.dir / "log"), "-w", "start")

    def stop(self, mode: str = "fast"):
        """Stop the server (``fast``: every session is ended, as in a restart)."""
        self._ctl("-m", mode, "-w", "stop")

    def url(self, database: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def sql(self, statement: str, database: str = "postgres"):
        import psycopg

        with psycopg.connect(self.url(database), autocommit=True) as conn:
            cur = conn.execute(statement)
            return cur.fetchall() if cur.description else None

    def close(self):
        self._ctl("-m", "immediate", "-w", "stop", check=False)
        shutil.rmtree(self.dir, ignore_errors=True)


class PrivateRedis:
    """A Redis of our own, without persistence: a restart loses every
    queued message, the broker's worst case."""

    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="compaction-faults-redis-"))
        self.port = free_port()
        self.proc = None
        self.start()

    def start(self):
        self.proc = subprocess.Popen(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no", "--dir", str(self.dir)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import redis

        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if redis.Redis(port=self.port, socket_connect_timeout=0.2).ping():
                    return
            except redis.RedisError:
                time.sleep(0.05)
        raise RuntimeError("the private Redis did not start")

    def stop(self):
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
            self.proc = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def close(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def django_env(database_url: str, **extra) -> dict:
    """The environment of a Django process (a script, a worker) on ``database_url``."""
    env = dict(os.environ)
    env.update({"DJANGO_SETTINGS_MODULE": "tests.settings", "DATABASE_URL": database_url,
                "COMPACTION_AUTO_PLAN": "0", "PYTHONPATH": str(ROOT)})
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_django(script: str, env: dict, *, timeout: float = 120) -> str:
    """Run ``script`` (Django is set up first) in a subprocess; its stdout."""
    code = "import django; django.setup()\n" + script
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout


def start_django(script: str, env: dict) -> subprocess.Popen:
    code = "import django; django.setup()\n" + script
    return subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
