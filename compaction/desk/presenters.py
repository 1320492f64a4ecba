"""What the desk draws, as numbers and rows: the geometry of the state bar
and the generation chart, the projection preview's account and the diff of
a changed message (SPEC §1, §6; issue 5). Pure; the templates draw and
escape.
"""

from __future__ import annotations

import difflib
import json

from ..models import JobState
from ..models.jobs import SOURCE_CHANGED, SUPERSEDED

# Display order of states, most in need of attention last so a bar reads
# left (done) to right (trouble). Besides the job states: ``superseded`` (a
# job its range replaced: the record, nothing to do) and ``source_changed``
# (a summary whose source changed after it was written: no longer used).
STATE_ORDER = (
    JobState.SUCCEEDED,
    SUPERSEDED,
    JobState.RUNNING,
    JobState.PENDING,
    SOURCE_CHANGED,
    JobState.STALE,
    JobState.FAILED,
    JobState.EXHAUSTED,
)


def state_bar(counts: dict[str, int]) -> list[dict]:
    """Segments of a compact bar: state, count and width in percent."""
    total = sum(counts.values())
    if not total:
        return []
    return [
        {"state": s, "count": counts[s], "width": round(100 * counts[s] / total, 2)}
        for s in STATE_ORDER
        if counts.get(s)
    ]


# Chart geometry: room on the left for the y-axis ticks and its label, below
# for the generation numbers and the x-axis label.
CHART_LEFT, CHART_RIGHT, CHART_TOP, CHART_BOTTOM = 52, 8, 10, 34
CHART_MAX_X_TICKS = 16


def tick_label(value: int) -> str:
    """A y-axis tick's number, at most four characters wide so it never runs
    into the axis label beside it (which names the unit): 980, 9800, 98k,
    1.2M."""
    if value < 10_000:
        return str(value)
    if value < 1_000_000:
        return f"{value // 1000}k"
    return f"{value // 100_000 / 10}M" if value < 10_000_000 else f"{value // 1_000_000}M"


def bar_chart(points, *, y_label: str, x_label: str = "generation", width: int = 560,
              height: int = 150, marked: frozenset | set = frozenset()) -> dict | None:
    """Geometry of a bar chart with labelled axes: ``points`` are
    ``(number, value, state)`` per generation, in order. Numbers only: the
    template draws it as SVG. The y axis is ticked at 0, half and the
    largest value (``tick_label``; ``y_label`` names the unit); the x axis
    at the generation numbers (at most ``CHART_MAX_X_TICKS`` of them, evenly
    spread, first and last always). Bars whose number is in ``marked`` carry ``grew`` and a mark
    above them (the chain's growth without new matters)."""
    points = list(points)
    if not points:
        return None
    top = max(value for _, value, _ in points) or 1
    base = height - CHART_BOTTOM
    plot_h = base - CHART_TOP
    n = len(points)
    slot = (width - CHART_LEFT - CHART_RIGHT) / n
    bar_w = max(1.0, min(24.0, slot * 0.8))
    bars = []
    for i, (number, value, state) in enumerate(points):
        h = round(plot_h * value / top, 1)
        bars.append({
            "x": round(CHART_LEFT + i * slot + (slot - bar_w) / 2, 1), "y": round(base - h, 1),
            "w": round(bar_w, 1), "h": h, "number": number, "value": value, "state": state,
            "valid": state == "valid", "mid": round(CHART_LEFT + i * slot + slot / 2, 1),
            "grew": number in marked, "mark_y": round(max(CHART_TOP, base - h - 3), 1),
        })
    step = max(1, -(-n // CHART_MAX_X_TICKS))
    shown = sorted({*range(0, n, step), n - 1})
    if n > 1 and len(shown) > 1 and shown[-1] - shown[-2] < step:
        shown.pop(-2)  # keep the last number from crowding its neighbour
    x_ticks = [{"x": bars[i]["mid"], "label": str(bars[i]["number"])} for i in shown]
    y_ticks = [{"y": round(base - plot_h * f, 1), "label": tick_label(round(top * f))} for f in (0, 0.5, 1)]
    return {
        "width": width, "height": height, "bars": bars, "max": top, "base": base, "left": CHART_LEFT,
        "top": CHART_TOP, "right": width - CHART_RIGHT, "x_ticks": x_ticks, "y_ticks": y_ticks,
        "x_label": x_label, "y_label": y_label, "x_label_x": round((CHART_LEFT + width - CHART_RIGHT) / 2, 1),
        "x_label_y": height - 4, "y_label_y": round(CHART_TOP + plot_h / 2, 1), "tick_y": base + 14,
    }


def generation_chart(generations, *, width: int = 560, height: int = 150) -> dict | None:
    """Summary length (bytes) per generation, each bar in its generation's
    state (``valid``, ``superseded``, ``source_changed``)."""
    return bar_chart(
        ((g.number, g.text_bytes, getattr(g, "display_state", "valid")) for g in generations),
        y_label="summary length (bytes)", width=width, height=height)


def diff_rows(before: str, after: str) -> list[tuple[str, str]]:
    """A line diff as (class, text) rows; the template escapes the text."""
    rows = []
    for line in difflib.unified_diff(before.splitlines(), after.splitlines(), "bound", "current", lineterm="", n=2):
        if line.startswith(("---", "+++")):
            continue
        cls = {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "ctx")
        rows.append((cls, line))
    return rows


def projection_digest(projection: dict) -> dict:
    """What the preview draws from a projection (SPEC §6 shape): every pair
    in index order with how it is given, counts per form, and runs of
    consecutive pairs that share a form and a reason."""
    pairs = sorted(projection.get("pairs", []), key=lambda p: p["index"])
    counts = {"summary": 0, "raw": 0, "omitted": 0}
    runs: list[dict] = []
    for p in pairs:
        counts[p["as"]] = counts.get(p["as"], 0) + 1
        if p.get("reason"):
            last = runs[-1] if runs else None
            if last and last["as"] == p["as"] and last["reason"] == p["reason"] and last["last"] == p["index"] - 1:
                last["last"] = p["index"]
            else:
                runs.append({"first": p["index"], "last": p["index"], "as": p["as"], "reason": p["reason"]})
    return {"pairs": pairs, "counts": counts, "reasons": runs}


def note_length_chart(rows, *, width: int = 560, height: int = 150) -> dict | None:
    """Note length (characters, as seed 001 counts 字数) per generation of a
    hand-off chain, stale generations marked, and so is each generation that
    grew without new matters (SPEC §8: length is checked apart from
    content)."""
    rows = list(rows)
    return bar_chart(((r.generation.number, r.chars, "valid" if r.valid else "stale") for r in rows),
                     y_label="note length (characters)", width=width, height=height,
                     marked={r.generation.number for r in rows if getattr(r, "grew_without_new_matters", False)})


def _shown(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, str):
        return value if value != "" else '""'
    if isinstance(value, list) and all(isinstance(v, (str, int)) for v in value):
        return ", ".join(str(v) for v in value) or "[]"
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def changed_fields(before, after) -> list[dict]:
    """The fields an activity entry changed, as ``field``, ``before`` and
    ``after`` text: only those whose value differs (a field on one side only
    reads "—" on the other), by field name (the database keeps no key
    order). Entries that are not objects are one field, ``value``."""
    if not isinstance(before, dict) or not isinstance(after, dict):
        if before is None and after is None:
            return []
        before = before if isinstance(before, dict) else ({} if before is None else {"value": before})
        after = after if isinstance(after, dict) else ({} if after is None else {"value": after})
    fields = sorted({*before, *after})
    return [{"field": k, "before": _shown(before.get(k)), "after": _shown(after.get(k))}
            for k in fields if k not in before or k not in after or before[k] != after[k]]


# --- the assembly inspector (SPEC §9) ----------------------------------------------

def _cut(text: str, limit: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else f"{text[:limit * 2 // 3]} … {text[-(limit // 3):]}"


def _message_row(index: int, message: dict, row) -> dict:
    content = message.get("content")
    text = content if isinstance(content, str) else ""
    return {
        "index": index,
        "external_id": getattr(row, "external_id", ""),
        "role": message.get("role"),
        "text": _cut(text, 400),
        "calls": [f"{c['function']['name']}({_cut(c['function']['arguments'], 160)}) · {c['id']}"
                  for c in message.get("tool_calls") or []],
        "answers": message.get("tool_call_id"),
    }


def assembly_inspection(inspection: dict, messages: list[dict], rows: list) -> dict:
    """The inspector's view of ``assembly.inspect_assembly``: each unit (a tool
    ring or a plain message) with its messages, bucket, tokens and fate; how
    many units met each fate; the notes assembly wrote (ledger note,
    summary note, work summary), found in its output."""
    from ..context.assembly.notes import LEDGER_NOTE_HEADER, SUMMARY_NOTE_HEADER, WORK_SUMMARY_HEADER

    units = []
    fates: dict[str, int] = {}
    for unit in inspection["units"]:
        units.append({**unit, "messages": [_message_row(i, messages[i], rows[i] if i < len(rows) else None)
                                           for i in unit["indices"]]})
        fates[unit["fate"]] = fates.get(unit["fate"], 0) + 1
    notes = []
    result = inspection["result"]
    if result is not None:
        headers = ((LEDGER_NOTE_HEADER, "ledger note"), (SUMMARY_NOTE_HEADER, "summary note"),
                   (WORK_SUMMARY_HEADER, "work summary"))
        for position, message in enumerate(result["messages"]):
            content = message.get("content")
            if not isinstance(content, str):
                continue
            for header, kind in headers:
                if content.startswith(header):
                    notes.append({"kind": kind, "position": position, "text": content})
    return {
        "units": units,
        "fates": fates,
        "total_tokens": sum(u["tokens"] for u in inspection["units"]),
        "notes": notes,
        "report": result["report"] if result is not None else None,
        "refusal": inspection["refusal"],
        "violations": inspection["violations"],
        "budget": inspection["budget"],
    }
