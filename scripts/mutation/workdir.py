"""The copy of the repository a mutation run works in (``var/mutants/``):
mutants are written into it, never into the worktree, and each run starts
from a fresh one."""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# What the tests need of the repository (``pyproject.toml`` is each pass's own).
REPOSITORY = ("compaction", "conversations", "templates", "static", "manage.py", "tests")


def fresh_copy(work: Path, names=REPOSITORY) -> None:
    """``work`` emptied, then ``names`` copied into it from the repository."""
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis")
    for name in names:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, work / name, ignore=ignore)
        else:
            shutil.copy2(src, work / name)
