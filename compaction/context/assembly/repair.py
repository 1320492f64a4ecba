"""``on_pairing_error: synthesize_error_results`` (SPEC §9 "Fail closed", seed 004 §1 修复策略 2 and
"配对修复的滥用").

The only repair assembly makes, and only when the caller asked for it: a
call that no result answers (``missing_result``, ``pending_call_at_end`` —
typically a parallel call that timed out on the platform's side) gets a
result with a FIXED error text, flagged as an error, saying no result was
recorded. It carries no internal detail and claims nothing about what the
tool did. Every other violation (duplicate ids, results without or before
their call, misplaced results) is still refused: guessing which call a
stray result belongs to is exactly what must not happen.

Where the placeholder goes
  - OpenAI: a ``tool`` message at the end of the run of ``tool`` messages
    after the call's assistant message.
  - Anthropic: a ``tool_result`` block (``is_error: true``) in the next user
    message, after its existing ``tool_result`` blocks and before anything
    else; when the next message is not a user message (or there is none),
    a new user message holding only the placeholders.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Sequence

from .neutral import ANTHROPIC, PARTS, Message, ToolResult, make_message
from .notes import placeholder_anthropic_block, placeholder_anthropic_message, placeholder_openai
from .validator import REPAIRABLE, Violation

SYNTHESIZED = "synthesized_error_result"


def repairable(violations: Sequence[Violation]) -> bool:
    return bool(violations) and all(v.problem in REPAIRABLE for v in violations)


def synthesize_error_results(messages: Sequence[Message], violations: Sequence[Violation],
                             format: str) -> tuple[list[Message], list[dict], frozenset[int]]:
    """(repaired messages, the repairs for the report, the ``id()`` of each
    placeholder result, so the ledger can tell them from real results)."""
    out = list(messages)
    missing: dict[int, list[str]] = defaultdict(list)
    problems: dict[tuple[int, str], str] = {}
    for v in violations:
        if v.problem in REPAIRABLE and v.id:
            missing[v.index].append(v.id)
            problems[(v.index, v.id)] = v.problem
    repairs: list[dict] = []
    made: list[ToolResult] = []
    for at in sorted(missing, reverse=True):  # from the end, so positions stay true
        ids = [c.id for c in out[at].calls if c.id in set(missing[at])]
        for cid in ids:
            repairs.append({"index": out[at].index, "id": cid, "problem": problems[(at, cid)],
                            "repair": SYNTHESIZED})
        if format == ANTHROPIC:
            nxt = out[at + 1] if at + 1 < len(out) else None
            if nxt is not None and nxt.role == "user":
                blocks = list(nxt.blocks)
                lead = 0
                while lead < len(blocks) and type(blocks[lead]) is ToolResult:
                    lead += 1
                added = [placeholder_anthropic_block(cid) for cid in ids]
                made.extend(added)
                blocks[lead:lead] = added
                out[at + 1] = make_message("user", tuple(blocks), PARTS, nxt.extra, nxt.index, nxt.origin)
            else:
                inserted = placeholder_anthropic_message(ids)
                made.extend(inserted.results)
                out.insert(at + 1, inserted)
        else:
            end = at + 1
            while end < len(out) and out[end].role == "tool":
                end += 1
            inserted = [placeholder_openai(cid) for cid in ids]
            made.extend(m.results[0] for m in inserted)
            out[end:end] = inserted
    repairs.sort(key=lambda r: (r["index"] if r["index"] is not None else -1, r["id"]))
    return out, repairs, frozenset(id(r) for r in made)
