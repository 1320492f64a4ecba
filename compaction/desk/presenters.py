"""What the desk draws, as numbers and rows: the geometry of the state bar
and the generation chart, the projection preview's account and the diff of
a changed message (SPEC §1, §6; issue 5). Pure; the templates draw and
escape.
"""

from __future__ import annotations

import difflib

from ..models import JobState

# Display order of states, most in need of attention last so a bar reads
# left (done) to right (trouble).
STATE_ORDER = (
    JobState.SUCCEEDED,
    JobState.RUNNING,
    JobState.PENDING,
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


def generation_chart(generations, *, width: int = 560, height: int = 120) -> dict | None:
    """Geometry for a small bar chart of summary length per generation.
    Numbers only: the template draws it as SVG."""
    if not generations:
        return None
    top = max(g.text_bytes for g in generations) or 1
    pad, n = 24, len(generations)
    slot = (width - pad) / n
    bar_w = max(1.0, min(24.0, slot * 0.8))
    bars = []
    for i, g in enumerate(generations):
        h = round((height - pad) * g.text_bytes / top, 1)
        bars.append({
            "x": round(pad + i * slot + (slot - bar_w) / 2, 1), "y": round(height - pad / 2 - h, 1),
            "w": round(bar_w, 1), "h": h, "number": g.number, "bytes": g.text_bytes,
            "valid": getattr(g, "source_valid", True),
        })
    return {"width": width, "height": height, "bars": bars, "max": top, "base": height - pad / 2}


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


def note_length_chart(rows, *, width: int = 560, height: int = 120) -> dict | None:
    """Geometry for the chain's chart of note length (characters, as seed
    001 counts 字数) per generation, stale generations marked."""
    if not rows:
        return None
    top = max(r.chars for r in rows) or 1
    pad, n = 24, len(rows)
    slot = (width - pad) / n
    bar_w = max(1.0, min(24.0, slot * 0.8))
    bars = []
    for i, r in enumerate(rows):
        h = round((height - pad) * r.chars / top, 1)
        bars.append({
            "x": round(pad + i * slot + (slot - bar_w) / 2, 1), "y": round(height - pad / 2 - h, 1),
            "w": round(bar_w, 1), "h": h, "number": r.generation.number, "chars": r.chars, "valid": r.valid,
        })
    return {"width": width, "height": height, "bars": bars, "max": top, "base": height - pad / 2}


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
