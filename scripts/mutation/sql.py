"""The SQL pass of ``scripts/mutants`` (issue 18): mutmut changes Python,
not the clauses inside SQL strings, nor (usefully) the ORM filters that are
the reaper's and the finish's conditions. This pass changes each clause of
the claim, finish and reaper conditions one at a time — dropped, made
always true, its comparison loosened — in a copy of the repository, and
runs the tests that state the rule against it. A mutant survives when those
tests still pass.

Each mutant names the text it replaces; a replaced text that is not found
exactly once is an error (the code moved: update the mutant), never a pass.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass

from scripts.mutation.workdir import REPOSITORY, ROOT, fresh_copy

WORK = ROOT / "var" / "mutants" / "sql"
COPY = (*REPOSITORY, "pyproject.toml")

CLAIM_TESTS = ["tests/compaction/engine/test_claim_statement.py", "tests/compaction/engine/test_claim.py"]
FINISH_TESTS = ["tests/compaction/engine/test_finish.py", "tests/compaction/engine/test_finish_conditions.py"]
REAPER_TESTS = ["tests/compaction/engine/test_leases.py"]


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]
    count: int = 1  # how many times ``old`` is found (each is replaced)
    equivalent: str = ""  # why no test can tell it from the code (README), if so


def m(name, path, old, new, tests, *, count=1, equivalent="") -> Mutant:
    return Mutant(name, path, old, new, tuple(tests), count, equivalent)


CLAIM = "compaction/engine/claim.py"
ATTEMPTS = "compaction/engine/attempts.py"
SEGMENTS = "compaction/bindings/segments.py"
BASE = "compaction/bindings/base.py"
FINISH = "compaction/engine/finish.py"
LEASES = "compaction/engine/leases.py"

MUTANTS = [
    # --- the claim statement's WHERE, clause by clause ------------------------------------------------
    m("claim: job id made always true", CLAIM, 'f"{job}.id = %s"', 'f"({job}.id = %s OR TRUE)"', CLAIM_TESTS),
    m("claim: 'succeeded' claimable", CLAIM, "\"{job}.state IN ('pending', 'failed')\"",
      "\"{job}.state IN ('pending', 'failed', 'succeeded')\"", CLAIM_TESTS),
    m("claim: 'running' claimable", CLAIM, "\"{job}.state IN ('pending', 'failed')\"",
      "\"{job}.state IN ('pending', 'failed', 'running')\"", CLAIM_TESTS),
    m("claim: 'exhausted' claimable", CLAIM, "\"{job}.state IN ('pending', 'failed')\"",
      "\"{job}.state IN ('pending', 'failed', 'exhausted')\"", CLAIM_TESTS),
    m("claim: 'stale' claimable", CLAIM, "\"{job}.state IN ('pending', 'failed')\"",
      "\"{job}.state IN ('pending', 'failed', 'stale')\"", CLAIM_TESTS),
    m("claim: 'failed' not claimable", CLAIM, "\"{job}.state IN ('pending', 'failed')\"",
      "\"{job}.state IN ('pending')\"", CLAIM_TESTS),
    m("claim: state clause dropped", CLAIM, "\"{job}.state IN ('pending', 'failed')\"", '"TRUE"', CLAIM_TESTS),
    m("claim: expected attempt made always true", CLAIM, "{job}.attempts_used = CAST(%s AS integer))",
      "{job}.attempts_used = CAST(%s AS integer) OR TRUE)", CLAIM_TESTS),
    m("claim: expected attempt '=' -> '>='", CLAIM, "{job}.attempts_used = CAST(%s AS integer))",
      "{job}.attempts_used >= CAST(%s AS integer))", CLAIM_TESTS),
    m("claim: attempts left '<' -> '<='", ATTEMPTS, '"{job}.attempts_used < {job}.max_attempts"',
      '"{job}.attempts_used <= {job}.max_attempts"', CLAIM_TESTS),
    m("claim: attempts left dropped", ATTEMPTS, '"{job}.attempts_used < {job}.max_attempts"', '"TRUE"',
      CLAIM_TESTS),
    m("claim: model made always true", CLAIM, '"{job}.model_id = %s"', '"({job}.model_id = %s OR TRUE)"',
      CLAIM_TESTS),
    m("claim: prompt version made always true", CLAIM, '"{job}.prompt_version_id = %s"',
      '"({job}.prompt_version_id = %s OR TRUE)"', CLAIM_TESTS),
    m("claim: range start on a multiple of 10 dropped", SEGMENTS, 'f"{job}.from_pair %% {SEGMENT_SIZE} = 0 AND "',
      'f""', CLAIM_TESTS),
    m("claim: range length replaced by to_pair >= from_pair", SEGMENTS,
      'f"{job}.to_pair = {job}.from_pair + {SEGMENT_SIZE - 1}"', 'f"{job}.to_pair >= {job}.from_pair"',
      CLAIM_TESTS),
    m("claim: range length 10 -> 11", SEGMENTS, 'f"{job}.to_pair = {job}.from_pair + {SEGMENT_SIZE - 1}"',
      'f"{job}.to_pair = {job}.from_pair + {SEGMENT_SIZE}"', CLAIM_TESTS),
    m("claim: ids need not be distinct", BASE, "(SELECT count(DISTINCT x) FROM", "(SELECT count(x) FROM",
      CLAIM_TESTS),
    m("claim: ids may be empty", BASE, "jsonb_array_elements_text({job}.message_ids) AS x WHERE x <> '')",
      "jsonb_array_elements_text({job}.message_ids) AS x)", CLAIM_TESTS),
    m("claim: id count '=' -> '>='", BASE, 'f"= {count} AND jsonb_array_length', 'f">= {count} AND jsonb_array_length',
      CLAIM_TESTS, equivalent="a list's distinct elements never outnumber its length, which the next clause "
      "fixes at the count"),
    m("claim: id count '=' -> '<='", BASE, 'f"= {count} AND jsonb_array_length', 'f"<= {count} AND jsonb_array_length',
      CLAIM_TESTS),
    m("claim: id list length check dropped", BASE, 'AND jsonb_array_length({job}.message_ids) = {count}"', '"',
      CLAIM_TESTS),
    m("claim: id list length '=' -> '>='", BASE, 'AND jsonb_array_length({job}.message_ids) = {count}"',
      'AND jsonb_array_length({job}.message_ids) >= {count}"', CLAIM_TESTS),
    m("claim: current digest's conversation dropped", SEGMENTS,
      'WHERE s.conversation_id = {job}.conversation_id "', 'WHERE TRUE "', CLAIM_TESTS),
    m("claim: current digest's from_pair dropped", SEGMENTS, 'f"AND s.from_pair = {job}.from_pair AND',
      'f"AND', CLAIM_TESTS),
    m("claim: current digest's to_pair dropped", SEGMENTS, 's.to_pair = {job}.to_pair "', 'TRUE "', CLAIM_TESTS),
    m("claim: current digest's digest dropped", SEGMENTS, 'f"AND s.digest = {job}.source_digest)"', 'f")"',
      CLAIM_TESTS),
    m("claim: current condition negated", SEGMENTS, 'return (f"EXISTS (SELECT 1 FROM {segment} s',
      'return (f"NOT EXISTS (SELECT 1 FROM {segment} s', CLAIM_TESTS),
    m("claim: the attempt is not counted", CLAIM, "attempts_used = j.attempts_used + 1,",
      "attempts_used = j.attempts_used,", CLAIM_TESTS),
    # --- the finish: a good answer's one statement --------------------------------------------------
    m("finish: state clause dropped", FINISH, "WHERE j.id = %s AND j.state = 'running' AND",
      "WHERE j.id = %s AND", FINISH_TESTS),
    m("finish: lease owner made always true", FINISH, "AND j.lease_owner = %s AND",
      "AND (j.lease_owner = %s OR TRUE) AND", FINISH_TESTS),
    m("finish: attempt number made always true", FINISH, "AND j.attempts_used = %s AND ({current})",
      "AND (j.attempts_used = %s OR TRUE) AND ({current})", FINISH_TESTS),
    m("finish: current source made always true", FINISH, "AND j.attempts_used = %s AND ({current})",
      "AND j.attempts_used = %s AND ({current} OR TRUE)", FINISH_TESTS),
    m("finish: the attempt is recorded even when the job did not move", FINISH,
      "WHERE id = %s AND EXISTS (SELECT 1 FROM moved)", "WHERE id = %s", FINISH_TESTS),
    # --- the finish: the general path's conditional move (failures; every database) ------------------
    m("finish (orm): state clause dropped", FINISH,
      "mine = CompactionJob.objects.filter(pk=job.pk, state=JobState.RUNNING, lease_owner=worker,",
      "mine = CompactionJob.objects.filter(pk=job.pk, lease_owner=worker,", FINISH_TESTS),
    m("finish (orm): lease owner dropped", FINISH,
      "mine = CompactionJob.objects.filter(pk=job.pk, state=JobState.RUNNING, lease_owner=worker,",
      "mine = CompactionJob.objects.filter(pk=job.pk, state=JobState.RUNNING,", FINISH_TESTS),
    m("finish (orm): attempt number dropped", FINISH, "                                            "
      "attempts_used=attempt.number)\n        current", "                                            )\n        current",
      FINISH_TESTS),
    m("finish (orm): current source dropped", FINISH, "current = mine.filter(binding.current())", "current = mine",
      FINISH_TESTS),
    # --- the reaper ------------------------------------------------------------------------------
    m("reaper: lease_expires_at <= now dropped (live leases reaped)", LEASES, "Q(lease_expires_at__lte=now)",
      "Q(lease_expires_at__isnull=False)", REAPER_TESTS),
    m("reaper: lease_expires_at <= now -> <", LEASES, "Q(lease_expires_at__lte=now)", "Q(lease_expires_at__lt=now)",
      REAPER_TESTS),
    m("reaper (conditional write): lease owner dropped", LEASES, "state=JobState.RUNNING,\n"
      "                                                   lease_owner=owner,", "state=JobState.RUNNING,",
      REAPER_TESTS),
    m("reaper (conditional write): attempt number dropped", LEASES, "lease_owner=owner, attempts_used=used)",
      "lease_owner=owner)", REAPER_TESTS),
    m("reaper (conditional write): expiry dropped", LEASES, "filter(lease_expired(now), pk=job_id,",
      "filter(pk=job_id,", REAPER_TESTS),
    m("reaper (conditional write): expiry <= now -> <", LEASES, "filter(lease_expired(now), pk=job_id,",
      "filter(Q(lease_expires_at__lt=now), pk=job_id,", REAPER_TESTS),
    m("reaper (conditional write): state dropped", LEASES,
      "expired = CompactionJob.objects.filter(lease_expired(now), pk=job_id, state=JobState.RUNNING,",
      "expired = CompactionJob.objects.filter(lease_expired(now), pk=job_id,", REAPER_TESTS),
    m("reaper: a changed source is not made stale", LEASES,
      "moved = expired.filter(binding.current()).update(", "moved = expired.update(", REAPER_TESTS),
    m("reaper: the attempt's number dropped", LEASES,
      "Attempt.objects.filter(job_id=job_id, number=used, outcome=AttemptOutcome.RUNNING)",
      "Attempt.objects.filter(job_id=job_id, outcome=AttemptOutcome.RUNNING)", REAPER_TESTS),
]


def _pytest(tests, env) -> int:
    args = [str(ROOT / ".venv" / "bin" / "python"), "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
            "--reuse-db", *tests]
    with (WORK / "pytest.log").open("a") as log:
        return subprocess.run(args, cwd=WORK, env=env, stdout=log, stderr=subprocess.STDOUT).returncode


def run(*, show_diffs: bool = False) -> dict:
    started = time.monotonic()
    fresh_copy(WORK, COPY)
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    results: dict[str, str] = {}
    tests = sorted({t for mutant in MUTANTS for t in mutant.tests})
    clean = _pytest(tests, env)
    if clean != 0:
        print(f"\n== sql: the tests fail without any mutant (exit {clean}); see {WORK / 'pytest.log'}")
        return {"module": "sql", "generated": len(MUTANTS), "killed": 0, "survived": len(MUTANTS),
                "seconds": round(time.monotonic() - started, 1), "survivors": {}, "counts": {}}
    for mutant in MUTANTS:
        path = WORK / mutant.path
        original = path.read_text(encoding="utf-8")
        found = original.count(mutant.old)
        if found != mutant.count:
            results[mutant.name] = f"error: its text is found {found} times in {mutant.path}"
            continue
        path.write_text(original.replace(mutant.old, mutant.new), encoding="utf-8")
        try:
            code = _pytest(mutant.tests, env)
        finally:
            path.write_text(original, encoding="utf-8")
        results[mutant.name] = {0: "equivalent" if mutant.equivalent else "survived",
                                1: "killed"}.get(code, f"error (pytest exit {code})")
        print(f"   sql {results[mutant.name]:>9}  {mutant.name}", flush=True)
    seconds = time.monotonic() - started
    survivors = {k: v for k, v in results.items() if v not in ("killed", "equivalent")}
    equivalent = {k: v for k, v in results.items() if v == "equivalent"}
    killed = len(results) - len(survivors) - len(equivalent)
    print(f"\n== sql (claim, finish, reaper conditions): {len(results)} mutants, {killed} killed, "
          f"{len(equivalent)} equivalent, {len(survivors)} not killed in {seconds:.0f}s", flush=True)
    for name in equivalent:
        print(f"   equivalent  {name}: {next(x for x in MUTANTS if x.name == name).equivalent}")
    for name, status in survivors.items():
        print(f"   {status:>10}  {name}")
        if show_diffs:
            mutant = next(x for x in MUTANTS if x.name == name)
            print(f"             {mutant.path}: {mutant.old!r} -> {mutant.new!r}")
    return {"module": "sql (claim/finish/reaper)", "generated": len(results), "killed": killed,
            "survived": len(survivors), "equivalent": len(equivalent), "seconds": round(seconds, 1),
            "survivors": survivors, "counts": {}}
