"""Software debugging assistant — an English conversation ending mid-answer.

A developer chases flaky tests and a memory leak in a Celery worker with an
assistant that can run tests and read files (tool calls). The developer
corrects the Python version (3.12 → 3.11) and retracts a wrong claim about
the Redis version. The last run is still streaming when the snapshot is
taken (run ``running``, answer ``streaming``): it is in no pair.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

from .builder import Call, Conversation, ask, note, streaming, tool

# Failing test, file:line, error, cause, fix, hours lost, the offending line.
FAILURES = [
    ("test_invoice_totals_round_half_even", "billing/tests/test_totals.py:88",
     "AssertionError: Decimal('10.04') != Decimal('10.05')", "the helper used ROUND_HALF_UP while the ledger uses ROUND_HALF_EVEN",
     "pass rounding=ROUND_HALF_EVEN to quantize() in billing/money.py line 41", 2, '    return amount.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)'),
    ("test_export_csv_utf8_bom", "reports/tests/test_export.py:132",
     "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xef in position 0",
     "Excel-compatible export writes a BOM and the test reads with encoding='utf-8'",
     "read with encoding='utf-8-sig' in the test, keep the BOM in the export", 1, '    with open(path, encoding="utf-8") as fh:'),
    ("test_retry_backoff_caps_at_300s", "tasks/tests/test_retry.py:54",
     "AssertionError: 320 != 300", "jitter is added after the cap instead of before",
     "apply min(backoff + jitter, 300) in tasks/retry.py line 19", 3, '    delay = min(base * 2 ** attempt, 300) + random.uniform(0, 30)'),
    ("test_webhook_signature_rejects_replay", "hooks/tests/test_signing.py:71",
     "Failed: DID NOT RAISE <class 'hooks.errors.ReplayError'>",
     "the timestamp tolerance is 3000 seconds; the constant was meant to be 300",
     "set REPLAY_WINDOW_SECONDS = 300 in hooks/signing.py", 2, 'REPLAY_WINDOW_SECONDS = 3000'),
    ("test_report_timezone_midnight", "reports/tests/test_daily.py:19",
     "AssertionError: 2026-11-02 != 2026-11-01",
     "the daily bucket uses date.today() (UTC on CI) instead of the account's Europe/Berlin zone",
     "use timezone.localdate(timezone=account.tz) in reports/daily.py", 4, '    bucket = date.today()'),
    ("test_bulk_import_is_atomic", "imports/tests/test_bulk.py:203",
     "AssertionError: 37 rows written, expected 0", "bulk_create runs outside transaction.atomic when ignore_conflicts=True",
     "wrap the whole import in transaction.atomic() and validate before writing", 5, '    Row.objects.bulk_create(rows, ignore_conflicts=True)'),
    ("test_rate_limit_resets_per_minute", "api/tests/test_throttle.py:45",
     "AssertionError: 429 != 200", "the cache key includes seconds, so the window never resets on a minute boundary",
     "build the key from int(time() // 60)", 1, '    key = f"rl:{client_id}:{int(time())}"'),
]


def _run(f):
    name, where, error, *_ = f
    users = [f"{name} is failing again, can you run it?", f"Run {name} and tell me what breaks.",
             f"CI is red on {name}."]
    i = FAILURES.index(f)
    return tool(
        users[i % 3],
        [Call("run_tests", {"select": name, "python": "3.11"},
              json.dumps({"passed": 0, "failed": 1, "nodeid": f"{where.split(':')[0]}::{name}", "error": error}))],
        f"{name} fails at {where}: {error}. Let me look at the code under test before guessing.",
    )


def _diagnose(f):
    name, where, error, cause, fix, _hours, code = f
    path, line = where.split(":")[0], int(where.split(":")[1])
    users = ["What's the cause?", "Why does it do that?", "Ok, so what's actually wrong?"]
    i = FAILURES.index(f)
    return tool(
        users[i % 3],
        [Call("find_code_under_test", {"test": f"{path}::{name}", "failing_line": line},
              json.dumps({"test": f"{path}::{name}", "suspect_line": code}))],
        f"The cause: {cause}. Suggested fix: {fix}.",
    )


def _verify(f):
    name, where, _error, _cause, fix, hours, _code = f
    users = ["Applied the fix, run it again.", "Pushed the change, check it.", "Done, does it pass now?"]
    i = FAILURES.index(f)
    return tool(
        users[(i + 1) % 3],
        [Call("run_tests", {"select": name, "python": "3.11", "count": 20},
              json.dumps({"passed": 20, "failed": 0}))],
        f"{name} passes 20 out of 20 runs now. That one cost about {hours} hour{'s' if hours > 1 else ''}; "
        "I'd add a regression note to the changelog.",
    )


OPENING = [
    note("You are a debugging assistant with access to the repository (read_file) and the test runner (run_tests). "
         "Say what you verified and what you only suspect."),
    ask("Our Celery worker's memory grows from 180 MB to 2.1 GB over about 9 hours and then gets OOM-killed. "
        "Python 3.12, Celery 5.4, Redis 7.2 as broker. Where do I start?",
        "Start by separating a real leak from fragmentation. Run one worker with --max-tasks-per-child=0 and "
        "--concurrency=1, log RSS every 5 minutes with psutil, and note which task names ran in between. "
        "If RSS jumps after specific tasks, it's those tasks; if it creeps evenly, suspect a global cache."),
    ask("Sorry, I meant Python 3.11, not 3.12. We haven't upgraded the workers yet.",
        "Thanks, noted: the workers run Python 3.11 (not 3.12). That matters because tracemalloc snapshots and "
        "some C-extension wheels differ; the rest of the plan stays the same."),
    ask("RSS jumps by about 40 MB every time generate_monthly_report runs.",
        "Then look inside generate_monthly_report first. 40 MB per run suggests something kept alive after the "
        "task returns: a module-level list or dict, an lru_cache on a method, or a pandas DataFrame held by a closure."),
    tool("Can you check reports/monthly.py for anything module-level?",
         [Call("read_file", {"path": "reports/monthly.py"},
               "_SEEN_ACCOUNTS = []\n\n@lru_cache(maxsize=None)\ndef load_rates(currency, day): ...\n")],
         "Two suspects in reports/monthly.py: _SEEN_ACCOUNTS is a module-level list appended to on every run and "
         "never cleared, and load_rates has @lru_cache(maxsize=None), so every (currency, day) pair is cached forever."),
    ask("The lru_cache is intentional, rates don't change. Is it really big?",
        "Each entry holds a dict of about 170 currencies, roughly 25 KB. Over a month of days and 30 currencies "
        "that's about 22 MB, bounded. It's not the main leak; _SEEN_ACCOUNTS is: it grows by the full account list "
        "(about 38,000 objects) on every run."),
    ask("Oh wow. Ok, I'll make it a local variable.",
        "Good. Make it a set local to the task; if it must survive between runs, store the ids in Redis with an "
        "expiry instead of keeping objects in the worker."),
    ask("Also I said Redis 7.2 earlier; that's wrong, scratch that, we're still on 6.2.",
        "Noted: broker is Redis 6.2, not 7.2 (my earlier note is corrected). Nothing I suggested depends on 7.x; "
        "only if you want Redis functions later would you need 7."),
    tool("Memory after the fix?",
         [Call("run_tests", {"select": "tests/perf/test_worker_memory.py", "python": "3.11"},
               '{"passed": 1, "failed": 0, "rss_start_mb": 182, "rss_end_mb": 231, "tasks": 500}')],
         "After 500 task runs, RSS went from 182 MB to 231 MB and then stayed flat; before the fix the same test "
         "ended at 1,460 MB. The leak is gone; the remaining 49 MB is the rate cache and import-time objects."),
    ask("Great. Now there's a pile of flaky tests I've been ignoring. Can we go through them one by one?",
        "Sure. Let's take them in order of how often they fail on CI: I count 7 test ids that failed at least "
        "twice in the last 14 days. I'll run each one, read the code, propose a fix and re-run it 20 times."),
]

CLOSING = [
    ask("That's all seven. How many hours did we lose to these in total?",
        "By your estimates: 2 + 1 + 3 + 2 + 4 + 5 + 1 = 18 hours over the last quarter, most of it on the atomic "
        "import (5 h) and the timezone bucket (4 h)."),
    ask("Should we turn on pytest-randomly to catch ordering bugs?",
        "Yes, with a fixed seed printed in CI output so a failure can be replayed with -p randomly -p "
        "'randomly_seed=<seed>'. Expect a few new failures the first week; those are real ordering bugs."),
    ask("Do we need to pin the seed?",
        "No. Let it change per run, but print it. Pinning it would hide exactly the bugs you want to find."),
    ask("What about the report task timeouts we saw on November 18?",
        "The logs from 2026-11-18 show soft_time_limit=600 exceeded 14 times between 02:00 and 03:10 UTC, all "
        "during the nightly backfill. That's load, not a bug: move the backfill to 04:00 or raise the limit to 900."),
    ask("Let's move the backfill to 04:00, not raise the limit.",
        "Agreed: keep soft_time_limit=600 and move the backfill to 04:00 UTC in the beat schedule "
        "(CELERY_BEAT_SCHEDULE['nightly-backfill'])."),
    ask("Any risk moving it?",
        "One: the 04:00 slot overlaps the database backup, which takes 25 to 40 minutes. Check that the backfill "
        "only reads replicas, or start it at 04:45."),
    ask("It reads the primary. Make it 04:45.",
        "Then 04:45 UTC it is. That leaves a 5-minute margin after the longest backup (40 minutes) seen this month."),
    ask("Write me a short summary for the team channel.",
        "Summary: 1) Worker leak fixed: _SEEN_ACCOUNTS in reports/monthly.py was a module-level list; RSS now flat "
        "at ~231 MB after 500 runs (was 1,460 MB). 2) Seven flaky tests fixed and re-run 20/20. 3) Nightly backfill "
        "moves to 04:45 UTC; time limit stays 600 s. 4) Environment: Python 3.11, Celery 5.4, Redis 6.2."),
]

TAIL = [
    streaming("One more thing: can you draft the pytest-randomly CI change as a diff?",
              "Here is a draft for .github/workflows/tests.yml:\n\n```diff\n-      - run: pytest -q\n"
              "+      - run: pip install pytest-randomly==3.15.0\n+      - run: pytest -q -p randomly"),
]


def conversation() -> Conversation:
    walk = []
    for f in FAILURES:
        walk += [_run(f), _diagnose(f), _verify(f)]
    # Interleave a few human remarks between the mechanical steps.
    remarks = [
        ask("Is ROUND_HALF_EVEN really what accountants want?",
            "For ledgers, yes: banker's rounding avoids a systematic upward bias when summing many amounts. "
            "Invoices shown to customers sometimes use ROUND_HALF_UP by law, so check the country rules before changing both."),
        ask("Why didn't this fail locally?",
            "Your laptop runs in Europe/Berlin, so date.today() matched the account's zone; CI runs in UTC, and the "
            "test creates data at 23:30 local time, which is already the next day in UTC only between 22:00 and 24:00."),
        ask("Should the import be all-or-nothing even for 100,000 rows?",
            "Yes, if partial imports confuse users; one transaction of 100,000 rows is fine on PostgreSQL. "
            "Validate everything first, then write in batches of 2,000 inside that one transaction."),
    ]
    turns = OPENING + walk[:6] + remarks[:1] + walk[6:15] + remarks[1:2] + walk[15:] + remarks[2:] + CLOSING + TAIL
    return Conversation(
        scope="dev-support",
        id="en-debug-worker-leak",
        title="Celery worker memory leak and flaky tests",
        language="en",
        start=datetime(2026, 11, 25, 8, 40, tzinfo=timezone.utc),
        turns=turns,
        metadata={"repository": "acme/billing", "ticket": "OPS-2291"},
    )
