"""Benchmark: drift of rolling hand-off notes over real conversations nobody
here wrote (issue 14 §6; SPEC §7, §8).

    .venv/bin/python bench/drift_real.py [--min-pairs 400] [--limit 2] [--batch-messages 200]

1. CrossWOZ validation dialogues (Chinese; a constraint whose value changes
   between the dialogue's ``goal`` and ``final_goal`` is a correction the
   note must carry) and SGD dev dialogues (English; a slot value the user
   changes between turns is a correction, and values that only the
   ``service_results`` hold are tool details), read from ``../shared/data``
   by ``conversations.samples`` and joined into conversations of at least
   ``--min-pairs`` pairs (``--limit`` per dataset), with the facts their
   annotations state.
2. Ingested into the PostgreSQL database ``compaction_bench_drift_real``
   (dropped and created again on every run) through the real ingest, each
   dataset's scope set to the rolling policy (``recent_turns`` 6,
   ``min_new_token_count`` 0, ``max_compaction_batch_messages``
   ``--batch-messages``), and compacted through the one engine with the
   offline ``handoff-extractive`` builder: plan, run each job, plan the next
   round, until nothing is pending. Every generation's drift report is the
   one the finish wrote in the generation's transaction.
3. Per generation it prints, over the pairs up to the generation's cut:

   - ``held``: how many of the user's current constraints (their latest
     value, stated by then; the ``samples.mentions`` rule) the note states;
   - ``stale``: how many superseded values (replaced by then) the note still
     states as current — on a line that does not also give the new value;
   - ``leak``: SGD only — how many service-result values appear in the
     note's user-requests section although no user message up to the cut
     said them;
   - the checkers' findings by code (as stored).

Prints the machine's load average before and after.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import use_database  # noqa: E402

DB_NAME = "compaction_bench_drift_real"
DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
SHORT = {"quote_not_verbatim": "quote", "retracted_consent": "consent", "abandoned_unmarked": "abandon",
         "done_without_proof": "done", "tool_detail_in_requests": "tooldetail",
         "question_as_requirement": "question", "assistant_ask_as_todo": "ask", "lost_constraint": "lost",
         "growth_without_new_matters": "growth"}


def _fresh_database() -> None:
    import psycopg

    base = os.environ.get("BENCH_DATABASE_SERVER", "postgres://postgres@127.0.0.1:5432")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}"')


def run_chain(conversation) -> list:
    from compaction.bindings.handoff import HANDOFF, HANDOFF_KIND, handoff_plan
    from compaction.engine.run import job_run
    from compaction.models import CompactionJob, JobState, SummaryGeneration

    handoff_plan(conversation=conversation)
    for _ in range(1000):
        pending = list(CompactionJob.objects.filter(conversation=conversation, kind=HANDOFF_KIND,
                                                    state=JobState.PENDING).order_by("pk"))
        if not pending:
            break
        for job in pending:
            outcome = job_run(job_id=job.pk)
            if outcome.generation_id is not None:
                HANDOFF.after_generation(job=CompactionJob.objects.get(pk=job.pk))
    return list(SummaryGeneration.objects.filter(conversation=conversation, kind=HANDOFF_KIND).order_by("number"))


def message_pairs(conversation) -> dict[str, int]:
    """Each message's pair index (a tool message: its run's pair)."""
    from conversations.models import Message, Pair

    pair_of_run = dict(Pair.objects.filter(conversation=conversation).values_list("run_id", "index"))
    return {external_id: pair_of_run[run_id]
            for external_id, run_id in Message.objects.filter(conversation=conversation).values_list(
                "external_id", "run_id") if run_id in pair_of_run}


def measure(sample, conversation, generations) -> list[dict]:
    from compaction.handoff import note as notes
    from compaction.models import DriftFinding
    from conversations.models import Message, MessageRole
    from conversations.samples import mentions

    at = message_pairs(conversation)
    users = [(at.get(mid, 10**9), text) for mid, text in Message.objects.filter(
        conversation=conversation, role=MessageRole.USER).values_list("external_id", "content")]
    findings: dict[int, Counter] = {}
    for generation_id, code in DriftFinding.objects.filter(generation__in=generations).values_list(
            "generation_id", "code"):
        findings.setdefault(generation_id, Counter())[code] += 1
    # Where each superseded value was replaced: the constraint of the same slot that replaced it.
    replaced_at = {}
    for f in sample.superseded:
        by = [c for c in sample.constraints if (c.dialogue, c.domain, c.slot) == (f.dialogue, f.domain, f.slot)]
        replaced_at[f] = min((at.get(c.message_id, 10**9) for c in by), default=10**9)
    rows = []
    for g in generations:
        cut = g.to_pair
        text = g.text
        note = notes.parse(text)
        current = [c for c in sample.constraints if at.get(c.message_id, 10**9) <= cut]
        held = sum(1 for c in current if mentions(text, c.value))
        gone = [f for f in sample.superseded if replaced_at[f] <= cut and at.get(f.message_id, 10**9) <= cut]
        stale = sum(1 for f in gone if any(mentions(line.text, f.value)
                                           and not (f.replaced_by and mentions(line.text, f.replaced_by))
                                           for line in note.lines))
        said = [t for p, t in users if p <= cut]
        requests = [line.text for line in note.lines if line.section == notes.REQUESTS]
        service = {f.value for f in sample.service_values if at.get(f.message_id, 10**9) <= cut}
        leak = sum(1 for value in service if any(mentions(line, value) for line in requests)
                   and not any(mentions(t, value) for t in said))
        rows.append({"number": g.number, "pairs": f"{g.from_pair}-{g.to_pair}", "chars": len(text),
                     "held": held, "current": len(current), "stale": stale, "superseded": len(gone),
                     "leak": leak if sample.service_values else None, "service": len(service),
                     "findings": findings.get(g.pk, Counter())})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-pairs", type=int, default=400)
    parser.add_argument("--limit", type=int, default=2, help="conversations per dataset")
    parser.add_argument("--batch-messages", type=int, default=200, help="max_compaction_batch_messages")
    args = parser.parse_args()
    os.environ.setdefault("COMPACTION_AUTO_PLAN", "0")  # this script plans and runs each chain itself
    os.environ.setdefault("COMPACTION_PROVIDER", "extractive")
    _fresh_database()
    use_database(DB_NAME)

    from compaction.actions import do_scope_policy_set
    from conversations import samples
    from conversations.documents import validate_document
    from conversations.services.ingest import conversation_ingest

    before = os.getloadavg()
    datasets = [
        ("CrossWOZ (zh)", "bench-drift-crosswoz", lambda scope: samples.crosswoz_samples(
            DATA / "crosswoz-val.json.zip", min_pairs=args.min_pairs, limit=args.limit, scope=scope)),
        ("SGD (en)", "bench-drift-sgd", lambda scope: samples.sgd_samples(
            DATA / "sgd-dev-001.json.gz", min_pairs=args.min_pairs, limit=args.limit, scope=scope)),
    ]
    totals: dict[str, Counter] = {}
    started = time.perf_counter()
    for name, scope, read in datasets:
        do_scope_policy_set(scope=scope, actor="bench", reason="bench/drift_real.py", policy="rolling",
                            recent_turns=6, min_new_token_count=0,
                            max_compaction_batch_messages=args.batch_messages)
        total = totals.setdefault(name, Counter())
        for sample in read(scope):
            conversation = conversation_ingest(document=validate_document(sample.document), actor="bench").conversation
            generations = run_chain(conversation)
            rows = measure(sample, conversation, generations)
            print(f"\n{name} · {conversation.external_id}: {conversation.pair_count} pairs, "
                  f"{len({f.dialogue for f in sample.constraints})} dialogues, {len(generations)} generations "
                  f"(material ≤ {args.batch_messages} messages each, newest 6 pairs raw)")
            print(f"  {'gen':>3} {'pairs':>9} {'chars':>6} {'held/current':>13} {'stale/superseded':>17} "
                  f"{'leak/service':>13}  findings by code")
            for r in rows:
                flagged = ", ".join(f"{SHORT[c]} {n}" for c, n in sorted(r["findings"].items())) or "none"
                leak = f"{r['leak']}/{r['service']}" if r["leak"] is not None else "—"
                print(f"  {r['number']:>3} {r['pairs']:>9} {r['chars']:>6} {r['held']:>6}/{r['current']:<6} "
                      f"{r['stale']:>8}/{r['superseded']:<8} {leak:>13}  {flagged}")
            if rows:
                last = rows[-1]
                total.update(conversations=1, generations=len(rows), held=last["held"], current=last["current"],
                             stale=last["stale"], superseded=last["superseded"], leak=last["leak"] or 0,
                             service=last["service"])
                for r in rows:
                    total.update({f"finding:{c}": n for c, n in r["findings"].items()})
    after = os.getloadavg()
    from compaction.models import DriftReport, SummaryGeneration

    print(f"\ndrift reports written with their generations: {DriftReport.objects.count()} of "
          f"{SummaryGeneration.objects.count()} generations")
    print("last generation of each conversation, summed:")
    for name, t in totals.items():
        found = ", ".join(f"{k.split(':', 1)[1]} {n}" for k, n in sorted(t.items()) if k.startswith("finding:"))
        print(f"  {name}: {t['conversations']} conversations, {t['generations']} generations; "
              f"current constraints held {t['held']}/{t['current']}"
              f" ({100 * t['held'] / max(1, t['current']):.0f}%), superseded still stated {t['stale']}/"
              f"{t['superseded']}, service values leaked into requests {t['leak']}/{t['service']}; "
              f"findings over all generations: {found or 'none'}")
    print(f"\nmachine: {os.cpu_count()} cores; load average before {before[0]:.2f} {before[1]:.2f} {before[2]:.2f}, "
          f"after {after[0]:.2f} {after[1]:.2f} {after[2]:.2f}; {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
