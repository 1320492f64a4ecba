"""Benchmark: the drift checks and the offline builder per rolling generation
(issue 14 "Measured": all checkers over a 9-generation chain with
6,000-character notes and 200-message material per generation, under 20 ms
per generation).

    /work/main/.venv/bin/python bench/drift.py [--rounds 12] [--generations 9] [--pairs 100] [--profile]

Pure Python, no database. Each round is a fresh, deterministic conversation
grown from the 126-turn repair conversation (``conversations/demo/repair_handoff``)
— its turns cycled, every message made unique (a Chinese ordinal at its end,
the order number changed per cycle) so no text is read for free from an
earlier round — cut into ``--generations`` materials of ``--pairs`` pairs
(2 × pairs messages) with their tool results. Each scenario runs over its
own fresh conversations; every note is checked with everything the chain
settled so far, once, the way the engine checks a generation when it is
written:

- **worst case**: a ~6,000-character note written like seed 001's drifted
  ones — every user question of the material recorded as a requirement
  line, the looked-up delivery date beside the order, quotes (verbatim and
  not), consent lines, assistant asks as to-dos, done lines without proof —
  about 180 flagged lines;
- **builder**: the note ``handoff-extractive-v1`` wrote for that generation
  from its parent and the material (timed too: builder per generation);
- **typical**: a ~6,000-character note as a careful model writes one late
  in a long chain — a line per matter quoting the user verbatim, a few
  question lines, a looked-up date: a handful of findings.

Prints, per scenario, wall-clock and CPU time per generation (median, p99
over n = rounds × generations samples: with the default 12 rounds n = 108,
so p99 is the second-slowest sample, not the slowest one alone),
the note length, findings and flagged lines per generation, and the
machine's load before and after (the machine is shared: CPU time is the
figure that load disturbs least). The vocabulary is compiled once before
timing, as in a long-running worker. Before anything is read, the
process's startup heap (the modules imported) is frozen out of the
collector's sight, as the engine's worker processes do when they start
(``compaction.collector.freeze_startup_heap``); the checks' own caches,
made later, are not. After that nothing here touches the garbage
collector: ``check_note`` itself pauses the cyclic collector while it runs
(as the product does in production), and the collection it defers runs as
it returns, inside the timed call — a full collection that falls there is
counted, as it would be in the engine.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _setup import interpreter, speed_reference_ms  # noqa: E402
from compaction.collector import freeze_startup_heap  # noqa: E402
from compaction.drift import checkers as c  # noqa: E402
from compaction.handoff import note as notes  # noqa: E402
from compaction.handoff.builder import build_note  # noqa: E402
from compaction.handoff.material import Material, MaterialPair, ToolResult  # noqa: E402
from conversations.demo import repair_handoff  # noqa: E402

NOTE_CHARS = 6000
_DIGITS = "零一二三四五六七八九"


def _ordinal(n: int) -> str:
    """A Chinese ordinal without Arabic digits (no number, no id for the checks)."""
    return "第" + "".join(_DIGITS[int(d)] for d in str(n)) + "句"


def conversation(round_: int, generations: int, pairs: int) -> list[Material]:
    """``generations`` consecutive materials of ``pairs`` pairs, unique to ``round_``."""
    turns = repair_handoff.TURNS
    out, index = [], 0
    for _ in range(generations):
        mat_pairs, results = [], []
        for _ in range(pairs):
            turn = turns[index % len(turns)]
            cycle = index // len(turns) + 97 * round_
            order = str(int(repair_handoff.ORDER) + cycle)
            tail = f"（{_ordinal(index + 100000 * round_)}）"
            user = turn.user.replace(repair_handoff.ORDER, order) + tail
            answer = turn.answer.replace(repair_handoff.ORDER, order) + tail
            mat_pairs.append(MaterialPair(index, f"u{round_}-{index}", user, f"a{round_}-{index}", answer))
            for k, call in enumerate(turn.calls):
                arguments = json.dumps(call.arguments, ensure_ascii=False).replace(repair_handoff.ORDER, order)
                text = call.result.replace(repair_handoff.ORDER, order)
                results.append(ToolResult(index, f"t{round_}-{index}-{k}", f"call{round_}-{index}-{k}", call.name,
                                          arguments, text, json.loads(text).get("ok")))
            index += 1
        out.append(Material(pairs=tuple(mat_pairs), tool_results=tuple(results)))
    return out


def worst_note(material: Material) -> str:
    """A ~6,000-character note drifted the way seed 001's were."""
    first = material.pairs[0]
    order = next((t for t in first.user_text.split("订单号是")[1:]), "88232")[:5]
    requests = [f"左耳AirPods Pro 3无声，右耳正常，需维修（订单{order}，2026-08-31签收，保修至2027-08-31，有货）",
                "寄回本店修，并明确同意办理送修申请（原话：现在可以提交送修申请了，我明确同意办理）",
                "用户考虑购买AirPods Max作为替代",
                "为妈妈买iPad：预算4000以内，银色或深空灰优先"]
    todos = ["落实设备序列号，用户尚未提供", "等待用户提供包装照片"]
    done = ["已预约天才吧检测（订单88232）", "已提交送修申请"]
    for i, pair in enumerate(material.pairs):
        text = pair.user_text.rstrip("。")
        if text.endswith("？") or "吗" in text:
            requests.append("用户询问" + text.rstrip("？"))
        elif i % 3 == 0:
            requests.append(f"事项{_ordinal(i)}（原话：{text[:30]}）")
        else:
            requests.append(f"事项{_ordinal(i)}（原话：{text[:12]}不是原话）")
    sections = {notes.REQUESTS: requests, notes.TODOS: todos, notes.NEXT_STEP: ["提交送修申请（原话：我明确同意办理）"],
                notes.PROGRESS: ["submit_ticket确认卡被拒绝"], notes.DEAD_ENDS: ["预约天才吧失败"], notes.DONE: done}
    text = notes.render(sections, language=notes.ZH)
    while len(text) > NOTE_CHARS and len(sections[notes.REQUESTS]) > 4:
        sections[notes.REQUESTS].pop()
        text = notes.render(sections, language=notes.ZH)
    while len(text) < NOTE_CHARS - 200:
        sections[notes.REQUESTS].append(f"用户询问寄修大概几天能寄回来{_ordinal(len(text))}")
        text = notes.render(sections, language=notes.ZH)
    return text


def typical_note(materials: list[Material]) -> str:
    """A ~6,000-character note as a careful model writes one late in a long
    chain: a line per matter the user asked for or conditioned, newest
    first, each quoting the user's clause verbatim (the checks search every
    quote, keep every condition, prove every done item), a few question
    lines and one looked-up date — a handful of findings, not hundreds."""
    requests = []
    for material in reversed(materials):
        for pair in reversed(material.pairs):
            if "？" in pair.user_text:
                continue
            words = pair.user_text.rstrip("。")
            requests.append(f"{words.split('，')[0][:14]}（原话：{words}）")
    last = materials[-1].pairs
    questions = [("用户询问" + p.user_text.split("（")[0].rstrip("？")) for p in last if "？" in p.user_text][:4]
    done = [f"{t.tool} 成功，单号 {json.loads(t.text)['order_id']}"
            for m in materials for t in m.tool_results if '"order_id"' in t.text][:3]
    sections = {notes.REQUESTS: requests[:3] + questions + ["订单88232于2026-08-31签收"] + requests[3:],
                notes.TODOS: requests[:2], notes.NEXT_STEP: requests[:1],
                notes.PROGRESS: ["submit_ticket 未成功（用户在确认卡上点了拒绝，申请未提交）"],
                notes.DEAD_ENDS: ["book_genius_bar 未成功（该时段已被约满，预约失败）"], notes.DONE: done}
    text = notes.render(sections, language=notes.ZH)
    while len(text) > NOTE_CHARS and len(sections[notes.REQUESTS]) > 8:
        sections[notes.REQUESTS].pop()
        text = notes.render(sections, language=notes.ZH)
    return text


def percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def _timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000


def run(rounds: int, generations: int, pairs: int) -> dict:
    """Each scenario over its own fresh conversations, so nothing is read
    warm from another: the builder's note built then checked (as the
    offline engine does when it writes one), a typical 6,000-character note
    checked, the drifted worst case checked."""
    out = {name: {"wall": [], "cpu": [], "chars": [], "findings": [], "flagged": []}
           for name in ("builder", "checks, builder note", "checks, typical note", "checks, worst-case note")}

    def record(name, found, wall, cpu, text, first):
        out[name]["wall"].append(wall)
        out[name]["cpu"].append(cpu)
        if first and found is not None:
            out[name]["chars"].append(len(text))
            out[name]["findings"].append(len(found))
            out[name]["flagged"].append(len({f.line for f in found if f.line is not None}))

    for scenario, offset in (("builder", 1000), ("typical", 2000), ("worst", 3000)):
        for round_ in range(rounds):
            materials = conversation(offset + round_, generations, pairs)
            parent = None
            for number, material in enumerate(materials, start=1):
                chain = c.ChainHistory.from_materials(materials[:number])
                if scenario == "builder":
                    text, wall, cpu = _timed(lambda: build_note(parent, material, language=notes.ZH))
                    record("builder", None, wall, cpu, text, round_ == 0)
                    name = "checks, builder note"
                else:
                    text = typical_note(materials[:number]) if scenario == "typical" else worst_note(material)
                    name = f"checks, {scenario if scenario == 'typical' else 'worst-case'} note"
                found, wall, cpu = _timed(lambda: c.check_note(text, parent=parent, material=material, chain=chain))
                record(name, found, wall, cpu, text, round_ == 0)
                parent = text
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=12, help="fresh conversations per scenario (n = rounds × generations)")
    parser.add_argument("--generations", type=int, default=9)
    parser.add_argument("--pairs", type=int, default=100, help="pairs per generation (2 messages each)")
    parser.add_argument("--profile", action="store_true", help="print the 25 costliest functions")
    args = parser.parse_args()
    frozen = freeze_startup_heap()  # as a worker process does when it starts
    # Warm up once, as a long-running worker is: the vocabulary's patterns
    # compile on first use (a few hundred milliseconds, once per process).
    warm = conversation(999, 1, 5)
    c.check_note(build_note(None, warm[0], language=notes.ZH), parent=None, material=warm[0],
                 chain=c.ChainHistory.from_materials(warm))
    before = os.getloadavg()
    if args.profile:
        profiler = cProfile.Profile(time.process_time)
        profiler.enable()
    results = run(args.rounds, args.generations, args.pairs)
    if args.profile:
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    after = os.getloadavg()
    print(f"machine: {os.cpu_count()} cores; load average before {before[0]:.2f} {before[1]:.2f} {before[2]:.2f}, "
          f"after {after[0]:.2f} {after[1]:.2f} {after[2]:.2f} (shared with other work while measuring); "
          f"startup heap frozen as a worker's is: {frozen:,} objects; speed reference "
          f"{speed_reference_ms():.1f} ms (bench/_setup.py: larger on a slower host); {interpreter()}")
    print(f"chain: {args.rounds} rounds per scenario × {args.generations} generations, {2 * args.pairs} material "
          f"messages per generation, up to {2 * args.pairs * args.generations} chain messages")
    print("note chars / findings / lines flagged per generation (first round):")
    for name in ("checks, builder note", "checks, typical note", "checks, worst-case note"):
        row = results[name]
        print(f"  {name:<24} " + "  ".join(f"{ch}/{fi}/{fl}" for ch, fi, fl in
                                            zip(row["chars"], row["findings"], row["flagged"])))
    for name, row in results.items():
        print(f"{name:<24} per generation: wall median {statistics.median(row['wall']):6.1f} ms  "
              f"p99 {percentile(row['wall'], 0.99):6.1f} ms | CPU median {statistics.median(row['cpu']):6.1f} ms  "
              f"p99 {percentile(row['cpu'], 0.99):6.1f} ms  (n={len(row['wall'])})")
    for name in ("checks, builder note", "checks, typical note", "checks, worst-case note"):
        cpu = percentile(results[name]["cpu"], 0.99)
        print(f"target, checks under 20 ms per generation — {name}: {'met' if cpu < 20 else 'NOT met'} "
              f"(CPU p99 {cpu:.1f} ms)")


if __name__ == "__main__":
    main()
