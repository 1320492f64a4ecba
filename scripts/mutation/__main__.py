"""``scripts/mutants``: mutmut over each rule module with its own tests, then
the SQL pass (``sql.py``). See tests/README.md ("Mutation testing").

Each module runs in its own copy of the repository under ``var/mutants/``
(mutmut reads its settings from the ``pyproject.toml`` of the directory it
runs in, and keeps its mutants and results in ``mutants/`` there), so one
module's run never disturbs another's or the worktree.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from scripts.mutation.equivalent import EQUIVALENT  # noqa: E402
from scripts.mutation.modules import MODULES  # noqa: E402
from scripts.mutation.workdir import REPOSITORY, fresh_copy  # noqa: E402

WORK = ROOT / "var" / "mutants"
MUTMUT = ROOT / ".venv" / "bin" / "mutmut"
STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 34: "skipped", 36: "timeout",
          -24: "timeout", 24: "timeout", 152: "timeout", 255: "timeout", 37: "type check", -11: "segfault",
          -9: "segfault", None: "not checked"}


def _toml_list(items) -> str:
    return "[" + ", ".join(json.dumps(str(i)) for i in items) + "]"


def _workdir(module: str, spec: dict, *, variant: str = "") -> Path:
    work = _work(module, variant)
    fresh_copy(work)
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    pytest_args = ["-p", "no:cacheprovider", "-W", "ignore::pytest.PytestUnraisableExceptionWarning"]
    if spec.get("db"):
        pytest_args.append("--reuse-db")
    pyproject += f"""
[tool.mutmut]
source_paths = {_toml_list([module])}
also_copy = {_toml_list(REPOSITORY)}
pytest_add_cli_args_test_selection = {_toml_list(spec["tests"])}
pytest_add_cli_args = {_toml_list(pytest_args)}
use_setproctitle = false
"""
    (work / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    return work


def _results(work: Path, module: str) -> dict[str, str]:
    meta = work / "mutants" / (module + ".meta")
    if not meta.exists():
        return {}
    data = json.loads(meta.read_text(encoding="utf-8"))
    return {name: STATUS.get(code, "suspicious") for name, code in data["exit_code_by_key"].items()}


def _selected(results: dict[str, str], spec: dict) -> dict[str, str]:
    patterns = spec.get("functions")
    if not patterns:
        return results
    import fnmatch
    return {k: v for k, v in results.items() if any(fnmatch.fnmatchcase(k, p) for p in patterns)}


def _work(module: str, variant: str = "") -> Path:
    return WORK / (re.sub(r"[^A-Za-z0-9]+", "_", module.removesuffix(".py")) + (f"_{variant}" if variant else ""))


def _on_sqlite(module: str, spec: dict, names: list[str], env: dict) -> tuple[dict[str, str], float]:
    """The mutants that survived on PostgreSQL, run again on the embedded
    SQLite default (``"sqlite": True``): a module with a branch per database
    (the claim's statement) has its other branch tested there. Returns their
    results there and the seconds it took."""
    if not names:
        return {}, 0.0
    work = _workdir(module, spec, variant="sqlite")
    started = time.monotonic()
    sqlite_env = dict(env, DATABASE_URL="", COMPACTION_VAR_DIR=str(work / "var"))
    with (work / "mutmut.log").open("w") as out:
        subprocess.run([str(MUTMUT), "run", "--max-children", "1", *names], cwd=work, env=sqlite_env, stdout=out,
                       stderr=subprocess.STDOUT)
    results = _results(work, module)
    return {name: results.get(name, "not checked") for name in names}, time.monotonic() - started


def run_module(module: str, *, children: int, show_diffs: bool, report_only: bool = False) -> dict:
    spec = MODULES[module]
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    if report_only:
        # The results of the last run, read again (e.g. after an entry of
        # equivalent.py was added): nothing is run.
        work = _work(module)
        log = work / "mutmut.log"
        if not log.exists():
            print(f"\n== {module}: never run")
            return {"module": module, "generated": 0, "killed": 0, "survived": 0, "seconds": 0}
        seconds = log.stat().st_mtime - (work / "pyproject.toml").stat().st_mtime
        proc = subprocess.CompletedProcess(args=[], returncode=0)
    else:
        work = _workdir(module, spec)
        started = time.monotonic()
        log = work / "mutmut.log"
        args = [str(MUTMUT), "run", "--max-children", str(1 if spec.get("db") else children),
                *spec.get("functions", [])]
        with log.open("w") as out:
            proc = subprocess.run(args, cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT)
        seconds = time.monotonic() - started
    results = _selected(_results(work, module), spec)
    on_sqlite = {}
    if spec.get("sqlite") and not report_only:
        on_sqlite, sqlite_seconds = _on_sqlite(module, spec, sorted(k for k, v in results.items() if v == "survived"),
                                               env)
        seconds += sqlite_seconds
    elif spec.get("sqlite"):
        on_sqlite = _results(_work(module, "sqlite"), module)
    killed_on_sqlite = 0
    for name, status in on_sqlite.items():
        if results.get(name) == "survived" and status in ("killed", "timeout"):
            results[name] = status
            killed_on_sqlite += 1
    reasons = {}
    for name, status in results.items():
        if status == "timeout":
            results[name] = "killed"  # the tests did not pass: they hung (counted apart below)
            timeouts = reasons.setdefault("__timeouts__", [])
            timeouts.append(name)
        elif status == "survived" and name in EQUIVALENT:
            added, reason = EQUIVALENT[name]
            diff = subprocess.run([str(MUTMUT), "show", name], cwd=work, env=env, capture_output=True, text=True)
            if any(line.startswith("+") and added in line for line in diff.stdout.splitlines()):
                results[name] = "equivalent"
                reasons[name] = reason
    timeouts = reasons.pop("__timeouts__", [])
    counts: dict[str, int] = {}
    for status in results.values():
        counts[status] = counts.get(status, 0) + 1
    survivors = sorted(k for k, v in results.items() if v not in ("killed", "equivalent"))
    summary = {"module": module, "generated": len(results), "killed": counts.get("killed", 0),
               "survived": len(survivors), "equivalent": counts.get("equivalent", 0), "timeouts": len(timeouts),
               "counts": counts, "seconds": round(seconds, 1),
               "survivors": {k: results[k] for k in survivors}, "exit": proc.returncode}
    print(f"\n== {module}: {len(results)} mutants, {summary['killed']} killed ({len(timeouts)} by a timeout), "
          f"{summary['equivalent']} equivalent, {len(survivors)} not killed "
          f"{f'({killed_on_sqlite} of the kills on SQLite) ' if spec.get('sqlite') else ''}"
          f"({', '.join(f'{n} {s}' for s, n in sorted(counts.items()))}) in {seconds:.0f}s", flush=True)
    for name, reason in sorted(reasons.items()):
        print(f"   equivalent  {name}: {reason}")
    if proc.returncode != 0 and not results:
        print(f"   mutmut failed (exit {proc.returncode}); its log: {log}")
        print("   " + "\n   ".join(log.read_text(errors="replace").splitlines()[-25:]))
    for name in survivors:
        print(f"   {results[name]:>10}  {name}")
        if show_diffs:
            diff = subprocess.run([str(MUTMUT), "show", name], cwd=work, env=env, capture_output=True, text=True)
            print("\n".join("             " + line for line in diff.stdout.splitlines()[1:]))
    return summary


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/mutants", description=__doc__)
    parser.add_argument("targets", nargs="*", help="modules (paths as listed by --list) and/or 'sql'; all if none")
    parser.add_argument("--list", action="store_true", help="print the modules and their tests")
    parser.add_argument("--children", type=int, default=2, help="mutants tested at once for modules without a "
                        "database (default 2)")
    parser.add_argument("--diff", action="store_true", help="print each survivor's diff")
    parser.add_argument("--report", action="store_true", help="print the results of the last run again, "
                        "running nothing (not the SQL pass)")
    args = parser.parse_args(argv)
    if args.list:
        for module, spec in MODULES.items():
            print(f"{module}: {' '.join(spec['tests'])}{' (database)' if spec.get('db') else ''}")
        print("sql: the SQL pass (scripts/mutation/sql.py)")
        return 0
    unknown = [t for t in args.targets if t != "sql" and t not in MODULES]
    if unknown:
        parser.error(f"not a rule module: {', '.join(unknown)} (see --list)")
    targets = args.targets or [*MODULES, "sql"]
    started = time.monotonic()
    summaries = []
    for target in targets:
        if target == "sql":
            if args.report:
                continue
            from scripts.mutation import sql
            summaries.append(sql.run(show_diffs=args.diff))
        else:
            summaries.append(run_module(target, children=args.children, show_diffs=args.diff,
                                        report_only=args.report))
    total = sum(s["seconds"] for s in summaries) if args.report else time.monotonic() - started
    load = os.getloadavg()
    print("\n== summary (load average %.2f %.2f %.2f)" % load)
    print(f"{'module':<44} {'generated':>9} {'killed':>7} {'equivalent':>10} {'survived':>8} {'seconds':>8}")
    for s in summaries:
        print(f"{s['module']:<44} {s['generated']:>9} {s['killed']:>7} {s.get('equivalent', 0):>10} "
              f"{s['survived']:>8} {s['seconds']:>8}")
    print(f"{'total':<44} {sum(s['generated'] for s in summaries):>9} {sum(s['killed'] for s in summaries):>7} "
          f"{sum(s.get('equivalent', 0) for s in summaries):>10} {sum(s['survived'] for s in summaries):>8} "
          f"{total:>8.0f}")
    if not args.report:
        WORK.mkdir(parents=True, exist_ok=True)
        (WORK / "summary.json").write_text(json.dumps(summaries, indent=1), encoding="utf-8")
    return 1 if any(s["survived"] for s in summaries) else 0


if __name__ == "__main__":
    sys.exit(main())
