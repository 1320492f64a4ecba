"""What assembly keeps, drops, folds and summarises, message by message — the
desk inspector's view of one stored run (SPEC §9, §11 "an inspector that shows
what context assembly keeps and drops for a stored run"; issue 15 item 7).

Pure, like the rest of the package: the desk passes the run's messages (as
rendered from the store in either format) and the budget the user typed,
and renders what comes back. Each unit of the input (a tool ring or a plain
message) is listed with its bucket, why it is protected, its tokens and its
fate: ``kept``, ``dropped`` (trimmed, by ring or turn), ``folded`` (into the
§10 work summary) — and the assembly's own report, or its refusal.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from .adapters import parse
from .assembler import assemble
from .buckets import RING, assign_buckets, split_units
from .config import AssemblyConfig
from .counting import TextCounter, count_message, default_counter
from .errors import AssemblyError
from .toolloop import LoopSummariser
from .validator import validate


def inspect_assembly(*, format: str, messages: Sequence[Any], config: AssemblyConfig | Mapping[str, Any],
                     system: Any = None, tools: Any = None, counter: TextCounter | None = None,
                     summariser: LoopSummariser | None = None) -> dict:
    cfg = AssemblyConfig.coerce(config)
    count = counter if counter is not None else default_counter()
    transcript = parse(format, messages, system=system, tools=tools)
    parsed = transcript.messages
    violations = validate(parsed, format)
    units = assign_buckets(split_units(parsed, format, [count_message(m, count) for m in parsed]), parsed, cfg)
    result = refusal = None
    try:
        # Every unit is listed with its tokens, so the report's are exact too.
        result = assemble(format=format, messages=messages, config=cfg, system=system, tools=tools, counter=count,
                          summariser=summariser, count_all=True)
    except AssemblyError as error:
        refusal = error
    dropped: set[int] = set()
    folded: set[int] = set()
    if result is not None:
        dropped = {i for ring in result.report.dropped_rings for i in ring} | set(result.report.dropped_turns)
        folded = set(result.report.folded)
    rows = []
    for unit in units:
        indices = [parsed[p].index for p in unit.positions()]
        if result is None:
            fate = "refused"
        elif any(i in folded for i in indices):
            fate = "folded"
        elif any(i in dropped for i in indices):
            fate = "dropped"
        else:
            fate = "kept"
        rows.append({
            "kind": "ring" if unit.kind == RING else ("system" if unit.kind == "system" else "turn"),
            "indices": indices,
            "roles": [parsed[p].role for p in unit.positions()],
            "call_ids": list(unit.call_ids),
            "tokens": unit.tokens,
            "bucket": unit.bucket,
            "reason": unit.reason,
            "fate": fate,
        })
    return {
        "format": format,
        "budget": cfg.budget,
        "units": rows,
        "violations": [v.as_dict() for v in violations],
        "result": result.as_dict() if result is not None else None,
        "refusal": refusal.as_dict() if refusal is not None else None,
    }
