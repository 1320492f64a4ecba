"""Benchmark: how much of a long conversation's facts reach the next run,
projection against plain truncation at the same byte budget (issue 11
"Measured, not assumed"; SPEC §6).

    .venv/bin/python bench/fidelity.py [--min-pairs 500] [--budgets 8,16,32,64] [--fresh]

1. Real conversations nobody here wrote (``conversations.samples``): CrossWOZ
   validation dialogues and SGD dialogues, each joined into conversations of
   at least ``--min-pairs`` pairs, with the facts their annotations state:
   the user's current constraints and the values the assistant stated.
2. Ingested into PostgreSQL database ``compaction_bench_fidelity_<model>``
   (one per extractive model id, so generations of different summarisers
   never mix; ``--fresh`` recreates it), then compacted in this process with
   the offline extractive provider (``manage.py compact --inline``).
3. For each budget, each conversation is projected (``format=blocks``, and
   ``prefer`` when the projection takes one) and truncated (the newest pairs
   whose user and assistant texts fit the same budget, stopping at the first
   that does not). A fact reaches the next run when its value is in a text
   given (a raw pair, a summary block's user originals or its summary; the
   ``samples.mentions`` rule: case-insensitive, whole words for Latin
   letters and digits).

Printed per budget and dataset: the share of constraints and of assistant
facts that reach the next run (projection / truncation, and their ratio),
the mean bytes used and the mean pairs covered per conversation, and the
mean number of summary blocks given. Target (issue 11): at least truncation
at every budget, 1.3× at 8 and 16 KiB.

Two tables. The first counts a fact only when its value is in a text given
from the fact's own dialogue (a raw pair or user original of it, or a
summary line labelled with one of its answers): the next run then has the
fact where it belongs. The second counts the value anywhere — looser, since
common values ("免费", "2 people", a popular restaurant) recur across the
joined dialogues and reach the next run from another dialogue, for
truncation and projection alike.
"""

from __future__ import annotations

import argparse
import inspect
import io
import os
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import ROOT, use_database  # noqa: E402

sys.path.insert(0, str(ROOT))

DATA = Path(os.environ.get("SHARED_DATA_DIR") or ROOT.parent / "shared" / "data")
if not DATA.is_dir():  # a worktree sits one level deeper than the main checkout
    DATA = Path("/work/shared/data")
SERVER = os.environ.get("BENCH_DATABASE_SERVER", "postgres://postgres@127.0.0.1:5432")


@dataclass
class Tally:
    """Facts reached and what was spent, summed over conversations."""

    constraints: int = 0
    constraints_reached: int = 0  # the value is anywhere in what is given
    constraints_own: int = 0  # ... in what is given from the fact's own dialogue
    told: int = 0
    told_reached: int = 0
    told_own: int = 0
    bytes: list[int] = field(default_factory=list)
    pairs: list[int] = field(default_factory=list)
    of_pairs: list[int] = field(default_factory=list)
    summaries: list[int] = field(default_factory=list)

    def share(self, reached: int, total: int) -> float:
        return reached / total if total else 0.0


def reached(facts, items: list[tuple[str, str]], dialogue_of: dict[str, str]) -> tuple[int, int]:
    """How many facts' values are in the given texts ``(message id, text)``:
    anywhere, and in a text from the fact's own dialogue."""
    from conversations.samples import mentions

    everything = "\n".join(text for _, text in items)
    by_dialogue: dict[str, list[str]] = defaultdict(list)
    for message_id, text in items:
        by_dialogue[dialogue_of.get(message_id, "")].append(text)
    own_text = {d: "\n".join(texts) for d, texts in by_dialogue.items()}
    lowered, own_lowered = everything.lower(), {d: t.lower() for d, t in own_text.items()}
    anywhere = own = 0
    for f in facts:
        value = f.value.lower()
        # The substring test first: most values are not there, and it is cheap.
        if value in lowered and mentions(everything, f.value):
            anywhere += 1
            if value in own_lowered.get(f.dialogue, "") and mentions(own_text[f.dialogue], f.value):
                own += 1
    return anywhere, own


def extractive_model_id() -> str:
    from compaction.providers.extractive import EXTRACTIVE_MODEL_ID

    return EXTRACTIVE_MODEL_ID


def recreate(name: str) -> None:
    import psycopg

    with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def load_samples(min_pairs: int, limit: int | None):
    from conversations.samples import crosswoz_samples, sgd_samples

    return {
        "crosswoz": list(crosswoz_samples(DATA / "crosswoz-val.json.zip", min_pairs=min_pairs, limit=limit)),
        "sgd": list(sgd_samples(DATA / "sgd-dev-001.json.gz", min_pairs=min_pairs, limit=limit)),
    }


def ingest(samples) -> dict[str, object]:
    from conversations.documents import validate_document
    from conversations.services.ingest import conversation_ingest

    conversations = {}
    for group in samples.values():
        for s in group:
            result = conversation_ingest(document=validate_document(s.document), actor="bench-fidelity")
            conversations[s.document["id"]] = result.conversation
    return conversations


def compact() -> str:
    from django.core.management import call_command

    out = io.StringIO()
    call_command("compact", inline=True, stdout=out, stderr=out)
    lines = out.getvalue().splitlines()
    states = defaultdict(int)
    for line in lines[1:]:  # "job <id> <scope>/<conversation> [<from>-<to>] <state> ..."
        parts = line.split()
        if len(parts) > 4:
            states[parts[4]] += 1
    return f"{lines[0] if lines else ''}; " + ", ".join(f"{n} {s}" for s, n in sorted(states.items()))


def summary_stats(model_id: str) -> str:
    """How much the stored summaries compress, and how many are not cheaper than their raw pairs."""
    from compaction.models import SummaryGeneration
    from conversations.models import Segment

    segments = {(s.conversation_id, s.from_pair): s for s in Segment.objects.all()}
    ratios, not_cheaper, blocks = [], 0, 0
    for g in SummaryGeneration.objects.filter(model_id=model_id).only("conversation_id", "from_pair", "text_bytes"):
        s = segments.get((g.conversation_id, g.from_pair))
        if s is None:
            continue
        blocks += 1
        ratios.append(g.text_bytes / s.assistant_bytes)
        not_cheaper += s.user_bytes + g.text_bytes >= s.user_bytes + s.assistant_bytes
    if not ratios:
        return "no summaries"
    return (f"{blocks} summaries by {model_id}: summary/answers bytes median {statistics.median(ratios):.2f}, "
            f"max {max(ratios):.2f}; {not_cheaper} not cheaper than their raw pairs")


def summary_fidelity(samples, conversations, model_id: str) -> list[str]:
    """Per dataset, inside the summarised segments alone: the share of the
    assistant's stated facts a summary block (its user originals and its
    summary) still carries, against the share of the raw pairs' bytes the
    block costs. A summary block gives more facts per byte than the raw
    pairs it stands for only when the first exceeds the second — the
    break-even that decides whether summarising can beat truncation on
    assistant facts at all."""
    from compaction.extraction import labelled_lines
    from compaction.models import SummaryGeneration
    from conversations.models import Pair, Segment
    from conversations.samples import mentions

    lines = []
    for dataset, group in samples.items():
        facts_total = facts_kept = block_bytes = raw_bytes = 0
        for sample in group:
            conv = conversations[sample.document["id"]]
            dialogue_of = sample.message_dialogues
            by_message = defaultdict(list)
            for f in sample.assistant_facts:
                by_message[f.message_id].append(f)
            segments = {s.from_pair: s for s in Segment.objects.filter(conversation=conv)}
            pairs = {p.index: p for p in Pair.objects.filter(conversation=conv).select_related(
                "user_message", "assistant_message")}
            for g in SummaryGeneration.objects.filter(conversation=conv, model_id=model_id, kind="segment"):
                seg = segments.get(g.from_pair)
                if seg is None or g.source_digest != seg.digest:
                    continue
                members = [pairs[i] for i in range(seg.from_pair, seg.to_pair + 1)]
                own = defaultdict(list)
                for message_id, text in labelled_lines(g.text):
                    own[dialogue_of.get(message_id or "", "")].append(text)
                for p in members:
                    own[dialogue_of.get(p.user_message.external_id, "")].append(p.user_message.content)
                texts = {d: "\n".join(t) for d, t in own.items()}
                for p in members:
                    for f in by_message.get(p.assistant_message.external_id, []):
                        facts_total += 1
                        facts_kept += mentions(texts.get(f.dialogue, ""), f.value)
                block_bytes += seg.user_bytes + g.text_bytes
                raw_bytes += seg.user_bytes + seg.assistant_bytes
        if facts_total and raw_bytes:
            lines.append(
                f"{dataset}: inside summarised segments a summary block keeps {facts_kept / facts_total:.1%} of the "
                f"{facts_total} assistant facts at {block_bytes / raw_bytes:.1%} of the raw pairs' bytes "
                f"(facts per byte {facts_kept / facts_total / (block_bytes / raw_bytes):.2f}x raw)")
    return lines


def truncation(conversation, budget: int) -> tuple[list[tuple[str, str]], int, int, int]:
    """The newest pairs that fit, stopping at the first that does not."""
    from conversations.models import Pair

    used, given = 0, []
    for pair in Pair.objects.filter(conversation=conversation).order_by("-index").select_related(
            "user_message", "assistant_message"):
        size = pair.user_bytes + pair.assistant_bytes
        if used + size > budget:
            break
        used += size
        given.append((pair.user_message.external_id, pair.user_message.content))
        given.append((pair.assistant_message.external_id, pair.assistant_message.content))
    return given, used, len(given) // 2, 0


def projection(conversation, budget: int, prefer: str | None) -> tuple[list[tuple[str, str]], int, int, int]:
    """What the projection gives, as ``(message id, text)``: a summary's
    lines are attributed to the answers their labels name."""
    from compaction.extraction import labelled_lines

    try:
        from compaction.context.projection import conversation_projection
    except ImportError:
        from compaction.projection import conversation_projection

    kwargs = {"conversation": conversation, "budget_bytes": budget}
    if prefer and "prefer" in inspect.signature(conversation_projection).parameters:
        kwargs["prefer"] = prefer
    body = conversation_projection(**kwargs)
    items = []
    summaries = 0
    for block in body["blocks"]:
        if block["kind"] == "raw":
            items.append((block["user"]["id"], block["user"]["text"]))
            items.append((block["assistant"]["id"], block["assistant"]["text"]))
        else:
            summaries += 1
            items += [(m["id"], m["text"]) for m in block["user_messages"]]
            items += [(message_id or "", text) for message_id, text in labelled_lines(block["summary"])]
    covered = sum(1 for p in body["pairs"] if p["as"] != "omitted")
    return items, body["used"]["bytes"], covered, summaries


def measure(samples, conversations, budgets_kib, prefer):
    tallies: dict[tuple[int, str, str], Tally] = defaultdict(Tally)
    for dataset, group in samples.items():
        for sample in group:
            conv = conversations[sample.document["id"]]
            for kib in budgets_kib:
                budget = kib * 1024
                ours = projection(conv, budget, prefer)
                plain = truncation(conv, budget)
                for method, (items, used, covered, summaries) in (("projection", ours), ("truncation", plain)):
                    constraints = reached(sample.constraints, items, sample.message_dialogues)
                    told = reached(sample.assistant_facts, items, sample.message_dialogues)
                    for key in ((kib, dataset, method), (kib, "all", method)):
                        t = tallies[key]
                        t.constraints += len(sample.constraints)
                        t.constraints_reached += constraints[0]
                        t.constraints_own += constraints[1]
                        t.told += len(sample.assistant_facts)
                        t.told_reached += told[0]
                        t.told_own += told[1]
                        t.bytes.append(used)
                        t.pairs.append(covered)
                        t.of_pairs.append(sample.pair_count)
                        t.summaries.append(summaries)
    return tallies


def report(tallies, budgets_kib, datasets, *, own: bool):
    def ratio(a: float, b: float) -> str:
        return f"{a / b:5.2f}x" if b else "   - "

    print("facts whose value is in a text given from their own dialogue" if own else
          "facts whose value is anywhere in what is given")

    header = (f"{'budget':>7} {'dataset':<9} {'constraints proj / trunc':>30} {'assistant facts proj / trunc':>32}"
              f" {'bytes proj / trunc':>20} {'pairs proj / trunc (of)':>26} {'summaries':>9}")
    print(header)
    print("-" * len(header))
    for kib in budgets_kib:
        for dataset in datasets:
            p, t = tallies[(kib, dataset, "projection")], tallies[(kib, dataset, "truncation")]
            if own:
                pc, tc = p.share(p.constraints_own, p.constraints), t.share(t.constraints_own, t.constraints)
                pa, ta = p.share(p.told_own, p.told), t.share(t.told_own, t.told)
            else:
                pc, tc = p.share(p.constraints_reached, p.constraints), t.share(t.constraints_reached, t.constraints)
                pa, ta = p.share(p.told_reached, p.told), t.share(t.told_reached, t.told)
            print(f"{kib:>4} KiB {dataset:<9} {pc:8.1%} / {tc:6.1%} {ratio(pc, tc):>8} ({p.constraints:>5})"
                  f" {pa:9.1%} / {ta:6.1%} {ratio(pa, ta):>8} ({p.told:>5})"
                  f" {statistics.mean(p.bytes):>9.0f} / {statistics.mean(t.bytes):>6.0f}"
                  f" {statistics.mean(p.pairs):>8.1f} / {statistics.mean(t.pairs):>5.1f}"
                  f" ({statistics.mean(p.of_pairs):>5.0f})"
                  f" {statistics.mean(p.summaries):>9.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-pairs", type=int, default=500, help="pairs per conversation at least (default 500)")
    parser.add_argument("--limit", type=int, default=None, help="conversations per dataset at most")
    parser.add_argument("--budgets", default="8,16,32,64", help="KiB, comma-separated")
    parser.add_argument("--prefer", default=None, choices=["raw", "summary"],
                        help="projection preference, when the projection takes one")
    parser.add_argument("--fresh", action="store_true", help="drop and recreate the benchmark database first")
    parser.add_argument("--database-suffix", default="",
                        help="appended to the database name, to keep concurrent runs (and --fresh) apart")
    args = parser.parse_args()
    budgets = [int(b) for b in args.budgets.split(",")]

    os.environ["COMPACTION_PROVIDER"] = "extractive"
    os.environ["COMPACTION_AUTO_PLAN"] = "0"  # compact --inline plans; no background planning
    os.environ.setdefault("DJANGO_DEBUG", "0")
    model_id = extractive_model_id()
    name = f"compaction_bench_fidelity_{model_id.replace('-', '_')}{args.database_suffix}"
    if args.fresh:
        recreate(name)
    started = time.perf_counter()
    use_database(name)

    samples = load_samples(args.min_pairs, args.limit)
    conversations = ingest(samples)
    ingested = time.perf_counter()
    compacted = compact()
    done = time.perf_counter()
    print(f"database {name}; model {model_id}; load average {os.getloadavg()[0]:.1f}; {os.cpu_count()} CPUs")
    for dataset, group in samples.items():
        print(f"{dataset}: {len(group)} conversations, {sum(s.pair_count for s in group)} pairs, "
              f"{sum(len(s.constraints) for s in group)} constraints, "
              f"{sum(len(s.assistant_facts) for s in group)} assistant facts")
    print(f"ingest {ingested - started:.1f}s; compact {done - ingested:.1f}s: {compacted}")
    print(summary_stats(model_id))
    for line in summary_fidelity(samples, conversations, model_id):
        print(line)
    tallies = measure(samples, conversations, budgets, args.prefer)
    print(f"measured in {time.perf_counter() - done:.1f}s; prefer={args.prefer or 'the default'}")
    for own in (True, False):
        print()
        report(tallies, budgets, list(samples) + ["all"], own=own)


if __name__ == "__main__":
    main()
