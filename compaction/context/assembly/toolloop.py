"""In-run tool-loop compaction (SPEC §10; seed 002 §7.2–§7.11 and §11).

Within one run the agent may go round the tool loop many times after the
user's last message; every intermediate result rides along in each later
request. This module folds the older rounds into a rolling *work summary*.

- **Working region**: the messages after the last message in which the
  user speaks (seed 002 §7.3). Nothing before it is touched.
- **Rounds**: the tool rings of the working region. A work summary this
  package wrote starts with a machine-readable line naming the last call it
  covers (``notes.work_summary_text``); the rounds up to that call are
  already folded and are not sent raw again, whether the caller sends the
  run's full history or the history as it was rebuilt.
- **Trigger** (§7.5): at least ``trigger_tool_rounds`` (5) raw rounds, or at
  least ``trigger_tokens`` (96,000) tokens in the working region as it
  would be sent. Compaction then folds every raw round except the newest
  ``recent_tool_rounds`` (5) (§7.6); with the defaults the first fold is
  at the sixth round (at five the trigger fires with nothing older to fold,
  reported as ``nothing_to_fold``).
- **Fold** (§7.4, §7.7, §7.8): the folded rounds — tool names, arguments,
  results cut head-and-tail — and the previous work summary go to a
  summariser, which writes the seven sections (current goal, actions done,
  findings, key paths / objects / parameters, errors and their handling,
  current state, next step) and says that later raw tool results win.
  ``DeterministicLoopSummariser`` is the offline builder; ``LOOP_PROMPT_V1``
  is the frozen ``loop@1`` prompt an OpenAI-compatible provider sends.
- **Rebuild** (§7.9): everything before the last user message, the last
  user message, one work-summary message, then the raw recent rounds. Rings
  move whole, so pairing is intact; system messages of the folded stretch
  stay (instructions are never folded).
- **Failure** (§7.11): any summariser error, a blank summary, one over
  ``summary_max_tokens``, or one that is not smaller than the rounds and
  previous summary it would replace keeps the raw history; the loop goes
  on.
- **Events** (§11): ``compacting``, then ``compacted`` or
  ``compaction_failed``, as data with counts and tokens. The work summary
  belongs to the run: it is returned, never stored as a generation (§7.10).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence

from .buckets import RING, split_units
from .config import LoopConfig
from .counting import TextCounter, count_message
from .ledger import LedgerEntry, result_status
from .neutral import Message
from .validator import pair_results
from .notes import (
    WORK_SUMMARY,
    WORK_SUMMARY_HEADER,
    cut_middle,
    is_work_summary_message,
    note_message,
    parse_work_summary_header,
    work_summary_text,
)

LOOP_PROMPT_VERSION = "loop@1"

SECTIONS = (
    "Current goal",
    "Actions done",
    "Findings",
    "Key paths, objects and parameters",
    "Errors and handling",
    "Current state",
    "Next step",
)
SIDE_EFFECT_PREFIX = "- side effect: "
PRECEDENCE = ("This summary continues a tool-calling loop and carries its state so far. "
              "If anything here conflicts with a later raw tool result, the later raw tool result wins.")

# Frozen once used: a changed prompt is a new version (SPEC §5 "Prompt versions").
LOOP_PROMPT_V1 = """You compact the working memory of an agent that is in the middle of a tool-calling loop.
You are given the user's current request, the previous work summary (if any) and the older tool rounds
of this run: the tools called, their arguments and their results (long texts are cut in the middle).
Write the new work summary that lets the agent continue the task without those rounds. It is not a
history of the conversation; it is the state the agent needs to go on.

Write exactly these seven sections, in this order, each as a heading line "## <name>" followed by
short "- " lines:
## Current goal
## Actions done
## Findings
## Key paths, objects and parameters
## Errors and handling
## Current state
## Next step

Rules:
- Fold the previous work summary in: keep what still holds, drop what the newer rounds overturned.
- Under "Actions done", list every tool call that changed something (booked, sent, updated,
  cancelled, paid…) with its ids and whether it succeeded, so it is never repeated by mistake.
- Keep exact ids, paths, names, numbers and dates; never invent one.
- Under "Errors and handling", say what failed and what was done about it.
- Start with this sentence, verbatim: "This summary continues a tool-calling loop and carries its state
  so far. If anything here conflicts with a later raw tool result, the later raw tool result wins."
- Write in the language of the user's request. Plain text only; no tool calls."""

LOOP_USER_TEMPLATE_V1 = """Current request of the user:
{goal}

Previous work summary:
{previous}

Older tool rounds to fold in:
{transcript}"""


@dataclass(frozen=True)
class RoundCall:
    call_id: str
    name: str
    arguments: str
    result: str | None
    status: str  # ok | error | missing


@dataclass(frozen=True)
class LoopRound:
    number: int  # 1-based position of the round in the run's working region
    assistant_text: str
    calls: tuple[RoundCall, ...]


@dataclass(frozen=True)
class LoopSummaryRequest:
    goal: str
    previous_summary: str | None  # the previous summary's body (its header line removed)
    rounds: tuple[LoopRound, ...]
    notes: tuple[str, ...]  # plain assistant messages of the folded stretch
    ledger: tuple[LedgerEntry, ...]  # side-effecting calls of the run so far
    max_tokens: int

    def transcript(self, *, argument_chars: int = 400, result_chars: int = 800) -> str:
        """The folded rounds as text (seed 002 §7.7)."""
        lines = []
        for r in self.rounds:
            if r.assistant_text.strip():
                lines.append(f"Assistant: {cut_middle(r.assistant_text, result_chars)}")
            for c in r.calls:
                lines.append(f"Assistant called {c.name}({cut_middle(c.arguments, argument_chars)})")
                shown = cut_middle(c.result, result_chars) if c.result is not None else "(no result)"
                lines.append(f"Tool result [{c.name}] ({c.status}): {shown}")
        for note in self.notes:
            lines.append(f"Assistant: {cut_middle(note, result_chars)}")
        return "\n".join(lines)


class LoopSummariser(Protocol):
    name: str

    def summarise(self, request: LoopSummaryRequest) -> str: ...


def loop_prompt_messages(request: LoopSummaryRequest) -> list[dict]:
    """The ``loop@1`` request, as Chat Completions messages."""
    return [
        {"role": "system", "content": LOOP_PROMPT_V1},
        {"role": "user", "content": LOOP_USER_TEMPLATE_V1.format(
            goal=request.goal or "(none)", previous=request.previous_summary or "(none)",
            transcript=request.transcript())},
    ]


def _split_sections(text: str | None) -> dict[str, list[str]] | None:
    """The sections of a work summary this builder wrote, or None."""
    if not text:
        return None
    found: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("## ") and line[3:].strip() in SECTIONS:
            current = line[3:].strip()
            found[current] = []
        elif current is not None and line.startswith("- "):
            found[current].append(line)
    return found if found else None


def _scalar_arguments(arguments: object) -> list[tuple[str, str]]:
    if not isinstance(arguments, dict):
        return []
    out = []
    for key, value in arguments.items():
        if isinstance(value, (str, int, float)) and not isinstance(value, bool) and str(value):
            out.append((str(key), str(value)))
    return out


class DeterministicLoopSummariser:
    """The offline work-summary builder: rules over the folded rounds, no
    model; the same input gives the same summary."""

    name = "loop-deterministic"

    def __init__(self, count: TextCounter | None = None, *, argument_chars: int = 120, result_chars: int = 160):
        if count is None:
            from .counting import default_counter

            count = default_counter()
        self.count = count
        self.argument_chars = argument_chars
        self.result_chars = result_chars

    def summarise(self, request: LoopSummaryRequest) -> str:
        import json

        previous = _split_sections(request.previous_summary)
        sections: dict[str, list[str]] = {name: [] for name in SECTIONS}
        if previous:
            for name in ("Actions done", "Findings", "Key paths, objects and parameters", "Errors and handling"):
                sections[name].extend(previous.get(name, []))
            # Side effects folded earlier stay listed, whatever is folded now.
            sections["Current state"].extend(
                line for line in previous.get("Current state", []) if line.startswith(SIDE_EFFECT_PREFIX))
        elif request.previous_summary:
            sections["Findings"].append(f"- Earlier summary: {cut_middle(request.previous_summary, 600)}")
        sections["Current goal"].append(f"- {cut_middle(request.goal, 400) if request.goal.strip() else '(not stated)'}")

        later_ok: dict[str, int] = {}
        for r in request.rounds:
            for c in r.calls:
                if c.status == "ok":
                    later_ok[c.name] = r.number
        for r in request.rounds:
            for c in r.calls:
                args = cut_middle(c.arguments, self.argument_chars)
                sections["Actions done"].append(f"- [round {r.number}] {c.name}({args}) → {c.status}")
                if c.status == "ok" and c.result:
                    sections["Findings"].append(f"- {c.name}: {cut_middle(c.result, self.result_chars)}")
                elif c.status != "ok":
                    retried = later_ok.get(c.name)
                    handling = (f"retried in round {retried}: ok" if retried and retried > r.number
                                else "not retried successfully in the folded rounds")
                    shown = cut_middle(c.result, self.result_chars) if c.result else "no result"
                    sections["Errors and handling"].append(f"- [round {r.number}] {c.name}: {shown}; {handling}")
                try:
                    parsed = json.loads(c.arguments)
                except ValueError:
                    parsed = None
                for key, value in _scalar_arguments(parsed):
                    sections["Key paths, objects and parameters"].append(f"- {key}: {cut_middle(value, 80)}")
        for note in request.notes:
            sections["Findings"].append(f"- assistant said: {cut_middle(note, self.result_chars)}")
        for name in sections:
            sections[name] = list(dict.fromkeys(sections[name]))  # no repeats, first occurrence kept

        folded = len(request.rounds)
        effects = [line for line in sections["Current state"] if line.startswith(SIDE_EFFECT_PREFIX)]
        effects.extend(f"{SIDE_EFFECT_PREFIX}{entry.line()[2:]}" for entry in request.ledger)
        sections["Current state"] = [
            f"- {folded} older tool round{'s' if folded != 1 else ''} folded here; the newest rounds follow raw.",
            *(["- Side effects so far — do not repeat them without a new request from the user:"] if effects else []),
            *dict.fromkeys(effects),
        ]
        sections["Next step"].append("- Continue from the newest raw tool results below.")

        # Keep to the cap: cut the oldest lines of the longest cuttable
        # section first; the goal, state and next step stay.
        cuttable = ("Findings", "Key paths, objects and parameters", "Actions done", "Errors and handling")
        text = self._render(sections)
        while self.count(text) > request.max_tokens:
            candidates = [name for name in cuttable if sections[name]]
            if not candidates:
                break
            longest = max(candidates, key=lambda name: len(sections[name]))
            sections[longest].pop(0)
            text = self._render(sections)
        return text

    @staticmethod
    def _render(sections: dict[str, list[str]]) -> str:
        parts = [PRECEDENCE]
        for name in SECTIONS:
            parts.append(f"## {name}")
            parts.extend(sections[name] or ["- none"])
        return "\n".join(parts)


# ---------------------------------------------------------------- the fold

DISABLED = "disabled"
NO_USER_MESSAGE = "no_user_message"
NOT_TRIGGERED = "not_triggered"
NOTHING_TO_FOLD = "nothing_to_fold"
COMPACTED = "compacted"
FAILED = "failed"


@dataclass
class LoopOutcome:
    messages: list[Message]
    work_summary: str | None
    status: str
    events: list[dict] = field(default_factory=list)
    folded_indices: list[int] = field(default_factory=list)  # input indices folded now
    covered_indices: list[int] = field(default_factory=list)  # input indices an earlier summary covers



def compact_tool_loop(messages: list[Message], *, format: str, config: LoopConfig | None,
                      previous_summary: str | None, summariser: LoopSummariser, count: TextCounter,
                      max_tokens: int, ledger: Sequence[LedgerEntry] = (),
                      tokens: Callable[[Message], int] | None = None) -> LoopOutcome:
    """``tokens``: counts one message (the assembler's memo, so a message of
    the working region is not counted twice); default ``count_message``."""
    if tokens is None:
        def tokens(m: Message) -> int:
            return count_message(m, count)
    if config is None:
        return LoopOutcome(list(messages), previous_summary, DISABLED)
    last_user = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].is_user_turn), None)
    if last_user is None:
        return LoopOutcome(list(messages), previous_summary, NO_USER_MESSAGE)

    start = last_user + 1
    region = messages[start:]
    # A work summary already in the region (the caller sent the rebuilt
    # history back) is the previous summary; it is rebuilt, not kept twice.
    in_region = [k for k, m in enumerate(region) if is_work_summary_message(m)]
    previous_message = region[in_region[-1]] if in_region else None
    previous_text = previous_message.text() if previous_message is not None else previous_summary
    skip = set(in_region)
    region_kept = [m for k, m in enumerate(region) if k not in skip]

    units = split_units(region_kept, format, None)
    rings = [u for u in units if u.kind == RING]
    through, prev_rounds, prev_count = parse_work_summary_header(previous_text)
    covered_until = 0  # region_kept positions [0, covered_until) are covered by the previous summary
    if through is not None:
        for ring in rings:
            if through in ring.call_ids:
                covered_until = ring.stop
                break
    raw_rings = [u for u in rings if u.start >= covered_until]

    def rebuilt(summary: Message | None, folded_until: int) -> list[Message]:
        gone = region_kept[:folded_until]
        keep_instructions = [m for m in gone if m.is_system]
        head = list(messages[:start]) + keep_instructions
        if summary is not None:
            head.append(summary)
        return head + region_kept[folded_until:]

    def summary_message(text: str | None) -> Message | None:
        if not text:
            return None
        if previous_message is not None and text == previous_text:
            return previous_message
        return note_message(format, text, WORK_SUMMARY)

    def indices(part: Sequence[Message]) -> list[int]:
        return [m.index for m in part if m.index is not None and not m.is_system]

    covered_indices = indices(region_kept[:covered_until])
    carried = rebuilt(summary_message(previous_text), covered_until)
    working_tokens = sum(tokens(m) for m in carried[start:])

    reason = None
    if len(raw_rings) >= config.trigger_tool_rounds:
        reason = "tool_rounds"
    elif working_tokens >= config.trigger_tokens:
        reason = "tokens"
    if reason is None:
        return LoopOutcome(carried, previous_text, NOT_TRIGGERED, covered_indices=covered_indices)
    keep = config.recent_tool_rounds
    fold = raw_rings[:len(raw_rings) - keep] if keep else list(raw_rings)
    if not fold:
        return LoopOutcome(carried, previous_text, NOTHING_TO_FOLD, covered_indices=covered_indices)

    folded_until = fold[-1].stop
    stretch = region_kept[covered_until:folded_until]
    results = pair_results(region_kept, format)
    # Round numbers run through the whole loop: the rounds an earlier
    # summary folded come first, whether or not they are still in the input.
    first_round = max(prev_rounds, len(rings) - len(raw_rings)) + 1
    rounds = []
    for number, ring in enumerate(fold, start=first_round):
        assistant = region_kept[ring.start]
        calls = []
        for call in assistant.calls:
            found = results.get((ring.start, call.id))
            calls.append(RoundCall(call.id, call.name, call.arguments_text(),
                                   found[0].text() if found else None,
                                   result_status(found[0] if found else None, found[1] if found else None)))
        rounds.append(LoopRound(number, assistant.text(), tuple(calls)))
    notes = tuple(m.text() for m in stretch if m.role == "assistant" and not m.calls and m.text().strip())
    gone = {(m.index, c.id) for m in region_kept[:folded_until] for c in m.calls}
    run_ledger = tuple(e for e in ledger if (e.index, e.call_id) in gone)
    body_of_previous = previous_text
    if previous_text and previous_text.startswith(WORK_SUMMARY_HEADER):
        body_of_previous = previous_text.split("\n", 1)[1] if "\n" in previous_text else ""
    request = LoopSummaryRequest(goal=messages[last_user].text(), previous_summary=body_of_previous or None,
                                 rounds=tuple(rounds), notes=notes, ledger=run_ledger, max_tokens=max_tokens)
    name = getattr(summariser, "name", type(summariser).__name__)
    events = [{"event": "compacting", "reason": reason, "tool_rounds": len(raw_rings),
               "working_tokens": working_tokens, "working_messages": len(carried) - start,
               "summariser": name}]
    failure = None
    body = None
    try:
        body = summariser.summarise(request)
    except Exception as exc:  # any failure keeps the raw history (seed 002 §7.11)
        failure = {"error": "summariser_error", "error_type": type(exc).__name__}
        # A summariser may name what went wrong with a stable code (the
        # provider's contract failure: ``timeout``, ``finish_reason``…).
        code = getattr(exc, "code", None)
        if isinstance(code, str) and code:
            failure["failure_code"] = code
    if failure is None:
        if not isinstance(body, str) or not body.strip():
            failure = {"error": "empty_summary"}
        elif count(body) > max_tokens:
            failure = {"error": "summary_too_long", "output_tokens": count(body)}
    if failure is None:
        # A summary that is not smaller than what it replaces is a defect of
        # the summariser, not a compaction (SPEC §6 says the same of
        # segment summaries): the raw rounds are strictly better.
        replaced = sum(tokens(m) for m in stretch if not m.is_system)
        previous_cost = count_message(summary_message(previous_text), count) if previous_text else 0
        candidate = count_message(note_message(format, work_summary_text(
            body, through_call="x", rounds=prev_rounds + len(fold), compaction=prev_count + 1), WORK_SUMMARY), count)
        if candidate >= replaced + previous_cost:
            failure = {"error": "summary_not_smaller", "output_tokens": count(body),
                       "replaced_tokens": replaced + previous_cost}
    if failure is not None:
        events.append({"event": "compaction_failed", "reason": reason, "folded_rounds": 0,
                       "kept_rounds": len(raw_rings), "working_tokens": working_tokens, "summariser": name,
                       **failure})
        return LoopOutcome(carried, previous_text, FAILED, events, covered_indices=covered_indices)

    last_call = region_kept[fold[-1].start].calls[-1].id
    text = work_summary_text(body, through_call=last_call, rounds=prev_rounds + len(fold), compaction=prev_count + 1)
    message = note_message(format, text, WORK_SUMMARY)
    out = rebuilt(message, folded_until)
    tokens_after = sum(count_message(m, count) for m in out[start:])
    events.append({
        "event": "compacted", "reason": reason, "folded_rounds": len(fold), "kept_rounds": len(raw_rings) - len(fold),
        "folded_messages": len([m for m in stretch if not m.is_system]), "remaining_messages": len(out),
        "tokens_before": working_tokens, "tokens_after": tokens_after,
        "input_tokens": count(request.transcript()), "output_tokens": count(body),
        "compaction_count": prev_count + 1, "summariser": name,
    })
    return LoopOutcome(out, text, COMPACTED, events, folded_indices=indices(stretch), covered_indices=covered_indices)
