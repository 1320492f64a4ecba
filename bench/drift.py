"""Benchmark: the drift checks and the offline builder per rolling generation
(issue 14 "Measured": all checkers over a 9-generation chain with
6,000-character notes and 200-message material per generation, under 20 ms
per generation).

    /work/main/.venv/bin/python bench/drift.py [--rounds 5] [--generations 9] [--pairs 100] [--profile]

Pure Python, no database. Each round is a fresh, deterministic conversation
grown from the 126-turn repair conversation (``conversations/demo/repair_handoff``)
— its turns cycled, every message made unique (a Chinese ordinal at its end,
the order number changed per cycle) so no text is read for free from an
earlier round — cut into ``--generations`` materials of ``--pairs`` pairs
(2 × pairs messages) with their tool results. Two notes are checked per
generation, each with everything the chain settled so far, the way the
engine checks a generation once when it is written:

- **worst case**: a ~6,000-character note written like seed 001's drifted
  ones — every user question of the material recorded as a requirement
  line, the looked-up delivery date beside the order, quotes (verbatim and
  not), consent lines, assistant asks as to-dos, done lines without proof —
  about 180 flagged lines;
- **builder**: the note ``handoff-extractive-v1`` wrote for that generation
  from its parent and the material (timed too: builder per generation).

Prints the median and p99 per generation of each, the findings per
generation, and the machine's load (the machine is shared: say so).
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


def run(rounds: int, generations: int, pairs: int):
    """Each scenario over its own fresh conversations, so nothing is read
    warm from the other: the worst-case note checked, and the builder's
    note built then checked (as the engine does when it writes one)."""
    worst_ms, builder_check_ms, build_ms = [], [], []
    lengths, flagged, findings_worst, findings_builder = [], [], [], []
    for round_ in range(rounds):
        materials = conversation(round_, generations, pairs)
        parent = None
        for number, material in enumerate(materials, start=1):
            chain = c.ChainHistory.from_materials(materials[:number])
            worst = worst_note(material)
            started = time.perf_counter()
            found = c.check_note(worst, parent=parent, material=material, chain=chain)
            worst_ms.append((time.perf_counter() - started) * 1000)
            if round_ == 0:
                lengths.append([len(worst)])
                flagged.append(len({f.line for f in found if f.line is not None}))
                findings_worst.append(len(found))
            parent = worst
    for round_ in range(rounds):
        materials = conversation(1000 + round_, generations, pairs)
        parent = None
        for number, material in enumerate(materials, start=1):
            chain = c.ChainHistory.from_materials(materials[:number])
            started = time.perf_counter()
            built = build_note(parent, material, language=notes.ZH)
            build_ms.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            found = c.check_note(built, parent=parent, material=material, chain=chain)
            builder_check_ms.append((time.perf_counter() - started) * 1000)
            if round_ == 0:
                lengths[number - 1].append(len(built))
                findings_builder.append(len(found))
            parent = built
    return worst_ms, builder_check_ms, build_ms, lengths, flagged, findings_worst, findings_builder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--generations", type=int, default=9)
    parser.add_argument("--pairs", type=int, default=100, help="pairs per generation (2 messages each)")
    parser.add_argument("--profile", action="store_true", help="print the checks' 25 costliest functions")
    args = parser.parse_args()
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
    worst, checked, built, lengths, flagged, found_worst, found_built = run(args.rounds, args.generations, args.pairs)
    if args.profile:
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
          f"(shared with other work while measuring)")
    print(f"chain: {args.rounds} rounds × {args.generations} generations, {2 * args.pairs} material messages per "
          f"generation, up to {2 * args.pairs * args.generations} chain messages")
    print("generation  worst-case note chars  lines flagged  findings  builder note chars  builder findings")
    for number, ((w, b), f, fw, fb) in enumerate(zip(lengths, flagged, found_worst, found_built), start=1):
        print(f"{number:>10}  {w:>21}  {f:>13}  {fw:>8}  {b:>18}  {fb:>16}")
    for name, samples in (("checks, worst-case note", worst), ("checks, builder note", checked),
                          ("builder (handoff-extractive-v1)", built)):
        print(f"{name:<32} per generation: median {statistics.median(samples):6.1f} ms  "
              f"p99 {percentile(samples, 0.99):6.1f} ms  max {max(samples):6.1f} ms  (n={len(samples)})")
    print(f"target: checks under 20 ms per generation — {'met' if percentile(worst, 0.99) < 20 else 'NOT met'} "
          f"at p99 for the worst case")


if __name__ == "__main__":
    main()
