"""The messages assembly writes itself (SPEC §9, §10; seed 004 §1 修复策略 and §4, seed 002 §7.7–§7.9).

- the **ledger note**: when side-effecting calls were trimmed away (or
  folded into the work summary), one note names each of them so the model
  knows what already ran;
- the **summary note** (``summarize: true``): one note standing for what
  trimming removed — a line per removed turn and tool call, head-and-tail
  cut — that carries the same ledger;
- the **work summary** message of the tool loop (§10);
- the fixed **placeholder result** of ``synthesize_error_results``.

Notes are ``system`` messages in OpenAI requests. Anthropic has no system
role inside ``messages``, and changing the top-level system prompt would
break prompt caching, so there a note is a ``user`` message whose first
line says it is machine generated and not the user's words. Every text
here is fixed or derived from the messages; nothing comes from a model
except the body of an ``openai`` work summary.
"""

from __future__ import annotations

import json
import re
from typing import Iterable, Sequence

from .ledger import result_status
from .neutral import ANTHROPIC, PARTS, STRING, Content, Message, Text, ToolResult, make_message

PLACEHOLDER_TEXT = ("Error: no result was recorded for this tool call. It may not have run; "
                    "do not assume it succeeded.")
# OpenAI tool messages have no error flag; the content says it, MCP-style.
PLACEHOLDER_OPENAI_CONTENT = json.dumps({"isError": True, "error": PLACEHOLDER_TEXT})

LEDGER_NOTE = "ledger_note"
SUMMARY_NOTE = "summary_note"
WORK_SUMMARY = "work_summary"
PLACEHOLDER = "placeholder_result"
NOTE_ORIGINS = (LEDGER_NOTE, SUMMARY_NOTE, WORK_SUMMARY)

LEDGER_NOTE_HEADER = ("[Side-effect ledger — machine generated from this conversation's tool calls and results; "
                      "not the user's words] Earlier messages were left out to fit the context budget.")
SUMMARY_NOTE_HEADER = ("[Summary of earlier turns — machine generated from the messages left out to fit the "
                       "context budget; not the user's words]")
WORK_SUMMARY_HEADER = "[Work summary — machine generated; it continues this run's tool loop]"


def cut_middle(text: str, limit: int) -> str:
    """At most about ``limit`` characters: the head and the tail, with the
    number of characters left out between them (seed 002 §6.7, §7.7)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    keep = max(limit - 24, 8)
    head, tail = keep * 2 // 3, keep - keep * 2 // 3
    return f"{text[:head]} …[{len(text) - head - tail} chars cut]… {text[len(text) - tail:]}"


def note_message(format: str, text: str, origin: str) -> Message:
    role = "user" if format == ANTHROPIC else "system"
    return make_message(role, (Text(text, {}),), STRING, {}, None, origin)


def ledger_note_lines(ledger_lines: list[str]) -> list[str]:
    """The ledger note's lines: its header, the ledger's heading, a line per entry."""
    from .ledger import LEDGER_HEADING

    return [LEDGER_NOTE_HEADER, LEDGER_HEADING, *ledger_lines]


def ledger_note_text(ledger_lines: list[str]) -> str:
    return "\n".join(ledger_note_lines(ledger_lines))


def summary_lines(messages: Sequence[Message], positions: Iterable[int], results: dict) -> list[str]:
    """The summary note's lines for the messages at ``positions`` (one unit
    trimming removed): a line per turn with text, and per tool call its
    arguments, its result's status and text, head-and-tail cut. ``results``:
    ``validator.pair_results`` of ``messages``."""
    lines = []
    for pos in positions:
        m = messages[pos]
        text = m.text()
        if m.role == "tool":
            continue
        if m.calls:
            if text.strip():
                lines.append(f"- assistant: {cut_middle(text, 160)}")
            for call in m.calls:
                found = results.get((pos, call.id))
                status = result_status(found[0] if found else None, found[1] if found else None)
                shown = cut_middle(found[0].text(), 160) if found else "no result"
                lines.append(f"- tool {call.name}({cut_middle(call.arguments_text(), 120)}) → {status}: {shown}")
        elif text.strip() and not (m.results and not m.is_user_turn):
            lines.append(f"- {m.role}: {cut_middle(text, 200)}")
        elif not m.results:
            lines.append(f"- {m.role}: (no text)")
    return lines


def summary_note_text(lines: list[str], omitted: int, counts: tuple[int, int], ledger_lines: list[str]) -> str:
    from .ledger import LEDGER_HEADING

    rings, turns = counts
    parts = [SUMMARY_NOTE_HEADER,
             f"Left out: {rings} tool ring{'s' if rings != 1 else ''} and {turns} message{'s' if turns != 1 else ''}."]
    if lines:
        parts.append("Earlier turns, oldest first:")
        parts.extend(lines)
        if omitted:
            parts.append(f"- … and {omitted} later item{'s' if omitted != 1 else ''}, not listed (no room left).")
    elif omitted:
        parts.append(f"Earlier turns: {omitted} item{'s' if omitted != 1 else ''}, not listed (no room left).")
    if ledger_lines:
        parts.append(LEDGER_HEADING)
        parts.extend(ledger_lines)
    return "\n".join(parts)


_COVERS = re.compile(r"\(through call (?P<call>[^\s;)]+); (?P<rounds>\d+) rounds? folded; compaction (?P<count>\d+)\)")


def work_summary_text(body: str, *, through_call: str, rounds: int, compaction: int) -> str:
    """The work summary with its machine-readable first line, which lets the
    next assembly of the same run know which rounds it already covers."""
    head = (f"{WORK_SUMMARY_HEADER} (through call {through_call}; {rounds} round{'s' if rounds != 1 else ''} "
            f"folded; compaction {compaction})")
    return f"{head}\n{body.strip()}"


def parse_work_summary_header(text: str | None) -> tuple[str | None, int, int]:
    """(last covered call id, rounds folded, compaction count) of a work
    summary this package wrote; (None, 0, 0) for any other text."""
    if not text:
        return None, 0, 0
    first = text.split("\n", 1)[0]
    if not first.startswith(WORK_SUMMARY_HEADER):
        return None, 0, 0
    match = _COVERS.search(first)
    if not match:
        return None, 0, 0
    return match["call"], int(match["rounds"]), int(match["count"])


def is_work_summary_message(message: Message) -> bool:
    if message.origin == WORK_SUMMARY:
        return True
    if message.calls or message.results or message.role not in ("system", "user") or not message.blocks:
        return False
    first = message.blocks[0]
    return type(first) is Text and first.text.startswith(WORK_SUMMARY_HEADER)


def placeholder_openai(call_id: str) -> Message:
    result = ToolResult(call_id=call_id, content=Content(STRING, (Text(PLACEHOLDER_OPENAI_CONTENT, {}),)))
    return make_message("tool", (result,), STRING, {}, None, PLACEHOLDER)


def placeholder_anthropic_block(call_id: str) -> ToolResult:
    return ToolResult(call_id=call_id, content=Content(STRING, (Text(PLACEHOLDER_TEXT, {}),)), is_error=True)


def placeholder_anthropic_message(call_ids: list[str]) -> Message:
    return make_message("user", tuple(placeholder_anthropic_block(c) for c in call_ids), PARTS, {}, None, PLACEHOLDER)
