"""Context assembly: one run's messages in, the next model request out, within
a token budget and never with broken tool pairing (SPEC §9 and §10, seed 004
whole, seed 002 §7).

The pipeline (seed 004 "问题背景"):

1. parse the request in its format (``adapters``);
2. validate pairing on the input (``validator``); on a violation refuse
   with ``context_assembly_pairing_error`` and every violation, unless
   ``on_pairing_error: synthesize_error_results`` and every violation is a
   call without a result (``repair``);
3. derive the side-effect ledger from the calls and results (``ledger``);
4. fold the tool loop's older rounds into the work summary (§10,
   ``toolloop``);
5. cut the messages into units and buckets (``buckets``); refuse with
   ``context_over_budget`` when the protected prefix alone does not fit
   (it is never cut);
6. trim the middle (``trim``): oldest rings whole, then oldest plain turns,
   then the note; refuse with ``context_over_budget`` if it still does not
   fit;
7. render in the request's format, validate the rendered output once more,
   and report.

The validator runs in full on the input, after the repair and the loop
fold, and on the output; during trimming it is kept incrementally (each
removed unit is checked to be closed, ``closed.unit_is_closed``). An output
it would reject is never returned (``InvariantBroken``).

Speed (issue 15: p99 under 50 ms at 5,000 messages, linear cost): every
text is counted once per process (``counting.CachedCounter``) and every
message at most once per assembly (``counting.MessageTokens``), and only
when its exact size matters: the protected buckets, the tool loop's working
region, and the middle from the newest unit back until the budget is full
(``trim``) — a run far over its budget costs what the budget holds, not
what the run holds, even when no text was counted before (a REST request
brings its run fresh); the ledger note is counted from its lines, never
encoded whole. The calls are paired with their results once, by the
validation of the list the next steps work on (``validate(pairs=...)``),
for the ledger and the notes. What is sent is always counted exactly, so
``tokens_after`` is exact; ``tokens_before`` and the middle bucket's tokens
are exact too unless trimming dropped units it never had to count: then
they are lower bounds and the report says so (``tokens_before_exact``,
``tokens_exact: false``). ``count_all`` counts everything (the desk
inspector does). Refusals count the whole input, so their sizes are exact.
Each pass over the messages is linear; and the
cyclic garbage collector is paused while one assembly runs
(``compaction.collector``): an assembly allocates tens of thousands of short-lived,
acyclic objects (freed by reference counting the moment it returns), and
letting the collector promote and then sweep them is what made the slow
tail. A work-summary writer the caller gives (which may wait on a model)
runs with the collector resumed. (Measured on the benchmark's cold runs:
no collection inside the pause; one young-generation collection as it
ends, 0.2–0.4 ms on a slow host, which walks the result being returned —
the cost of any fresh result, wherever the caller's next allocation falls.)

Where the time goes (callgrind, the benchmark's 5,000-message run at a
100,000-token budget, instructions per assembly): 511.0M cold, of which
tiktoken encodes 1,831 texts for 302M (the floor: each is what is sent, or
the ledger note's lines) — parsing about 50M, the ledger 37M, trimming's own
work about 45M, cutting units 21M, the two validations about 17M; 179.0M warm.

``prefix_hash`` is the SHA-256 of the canonical JSON of the format, the tool
schemas, Anthropic's top-level system prompt and the output's leading
protected messages (system prompts and, when it directly follows them, the
pinned first user message). It stays the same from one turn to the next
while those do — which is what a provider's prompt cache needs; notes are
placed after that prefix so that trimming never changes it.
"""

from __future__ import annotations

import hashlib
import operator
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import compaction.collector as collector

from .adapters import parse, render_messages, render_system
from .buckets import MIDDLE, PREFIX, RING, SUFFIX, Unit, assign_buckets, measure, split_units, unit_floor
from .config import AssemblyConfig, SYNTHESIZE_ERROR_RESULTS
from .counting import (
    REQUEST_OVERHEAD,
    MessageTokens,
    TextCounter,
    canonical_json,
    count_system,
    count_tools,
    counter_name,
    default_counter,
    message_floor,
)
from .errors import InvariantBroken, OverBudgetError, PairingError, RequestFormatError
from .ledger import LedgerEntry, build_ledger
from .neutral import ANTHROPIC, FORMATS, Message
from .repair import repairable, synthesize_error_results
from .toolloop import DeterministicLoopSummariser, LoopSummariser, compact_tool_loop
from .trim import trim
from .validator import validate


@dataclass
class AssemblyReport:
    format: str
    tokens_before: int  # a lower bound when not tokens_before_exact
    tokens_after: int  # always exact: what is sent
    budget: int
    dropped_rings: list[list[int]]
    dropped_turns: list[int]
    summary_used: bool
    ledger: list[LedgerEntry]
    repairs: list[dict]
    prefix_hash: str
    steps: list[dict]
    events: list[dict] = field(default_factory=list)
    folded: list[int] = field(default_factory=list)  # input indices folded into the work summary (§10)
    buckets: dict = field(default_factory=dict)
    messages_before: int = 0
    messages_after: int = 0
    token_counter: str = ""
    seconds: float = 0.0
    tokens_before_exact: bool = True

    def as_dict(self) -> dict:
        return {
            "format": self.format,
            "tokens_before": self.tokens_before,
            "tokens_before_exact": self.tokens_before_exact,
            "tokens_after": self.tokens_after,
            "budget": self.budget,
            "dropped_rings": [list(r) for r in self.dropped_rings],
            "dropped_turns": list(self.dropped_turns),
            "summary_used": self.summary_used,
            "ledger": [e.as_dict() for e in self.ledger],
            "repairs": list(self.repairs),
            "prefix_hash": self.prefix_hash,
            "steps": list(self.steps),
            "events": list(self.events),
            "folded": list(self.folded),
            "buckets": dict(self.buckets),
            "messages_before": self.messages_before,
            "messages_after": self.messages_after,
            "token_counter": self.token_counter,
            "seconds": self.seconds,
        }


@dataclass
class AssemblyResult:
    format: str
    messages: list[dict]
    system: Any  # Anthropic's top-level system prompt, as it came; None for OpenAI
    report: AssemblyReport
    work_summary: str | None

    def as_dict(self) -> dict:
        """The SPEC §9 response body."""
        body = {"messages": self.messages, "report": self.report.as_dict(), "work_summary": self.work_summary}
        if self.format == ANTHROPIC:
            body["system"] = self.system
        return body


def _input_indices(messages: Sequence[Message], unit: Unit) -> list[int]:
    found = [messages[p].index for p in range(unit.start, unit.stop)]
    return found if None not in found else [i for i in found if i is not None]


def _bucket_summary(units: Sequence[Unit]) -> dict:
    """Messages, rings and tokens per bucket; a bucket holding units never
    counted gets a lower bound of its tokens and ``tokens_exact: false``."""
    # [messages, rings, tokens, every unit counted] per bucket, then the
    # rows; the middle (nearly every unit of a long run) summed in locals.
    sums = {bucket: [0, 0, 0, True] for bucket in (PREFIX, SUFFIX)}
    messages = rings = tokens = 0
    exact = True
    for u in units:
        if u.bucket != MIDDLE:
            row = sums[u.bucket]
            row[0] += u.stop - u.start
            row[1] += u.kind == RING
            row[2] += unit_floor(u)
            row[3] = row[3] and u.tokens is not None
            continue
        messages += u.stop - u.start
        if u.kind == RING:
            rings += 1
        if u.tokens is None:
            tokens += u.floor  # (``unit_floor`` of a unit not counted)
            exact = False
        else:
            tokens += u.tokens
    sums[MIDDLE] = [messages, rings, tokens, exact]
    summary = {}
    for bucket, (messages, rings, tokens, exact) in sums.items():
        summary[bucket] = {"messages": messages, "rings": rings, "tokens": tokens}
        if not exact:
            summary[bucket]["tokens_exact"] = False
    return summary


class _GcResumed:
    """A caller's work-summary writer, run with the collector resumed: it may
    wait seconds on a model, and the pause is only for assembly's own work."""

    def __init__(self, inner: LoopSummariser):
        self.inner = inner
        self.name = getattr(inner, "name", type(inner).__name__)

    def summarise(self, request):
        with collector.resumed():
            return self.inner.summarise(request)


def prefix_hash(format: str, tools: Any, system: Any, leading: list[dict]) -> str:
    material = canonical_json({"format": format, "tools": tools, "system": system, "messages": leading})
    return "sha256:" + hashlib.sha256(material.encode("utf-8")).hexdigest()


def assemble(*, format: str, messages: Sequence[Any], config: AssemblyConfig | Mapping[str, Any],
             system: Any = None, tools: Any = None, counter: TextCounter | None = None,
             summariser: LoopSummariser | None = None, tighten: int = 0, count_all: bool = False,
             observer: Callable[[str, list[Message]], None] | None = None) -> AssemblyResult:
    """Assemble the next model request (SPEC §9, §10).

    ``format``: ``"openai"`` or ``"anthropic"``; ``messages`` (and, for
    Anthropic, ``system``) as the provider takes them; ``tools``: the tool
    schemas, counted against the budget; ``config``: an ``AssemblyConfig``
    or its JSON form; ``counter``: a text counter (default tiktoken);
    ``summariser``: the §10 work-summary writer (default the offline
    builder); ``tighten``: remove that many more units than the budget
    needs (``retry``); ``count_all``: count every message exactly, not
    only those the budget needs (the same output; ``tokens_before`` always
    exact); ``observer``: called with every intermediate view.

    Raises ``RequestFormatError``, ``ConfigError``, ``PairingError`` or
    ``OverBudgetError``; each has ``as_dict()`` for the response body.
    """
    with collector.paused() as paused:
        if paused and summariser is not None:
            summariser = _GcResumed(summariser)
        return _assemble(format=format, messages=messages, config=config, system=system, tools=tools,
                         counter=counter, summariser=summariser, tighten=tighten, count_all=count_all,
                         observer=observer)


def _assemble(*, format: str, messages: Sequence[Any], config: AssemblyConfig | Mapping[str, Any],
              system: Any, tools: Any, counter: TextCounter | None, summariser: LoopSummariser | None,
              tighten: int, count_all: bool,
              observer: Callable[[str, list[Message]], None] | None) -> AssemblyResult:
    started = time.perf_counter()
    cfg = AssemblyConfig.coerce(config)
    if format not in FORMATS:
        raise RequestFormatError([{"index": None, "field": "format", "message": "must be openai or anthropic"}])
    transcript = parse(format, messages, system=system, tools=tools)
    count = counter if counter is not None else default_counter()
    msgs: list[Message] = transcript.messages
    budget = cfg.budget
    fixed = REQUEST_OVERHEAD + count_tools(tools, count) + count_system(transcript.system, count)
    tokens = MessageTokens(count)  # each message counted once, when its size is needed
    steps: list[dict] = []

    def exact_tokens_before() -> int:
        return fixed + sum(tokens(m) for m in transcript.messages)

    def partial(**extra: Any) -> dict:
        # A refusal's figures are exact: the whole input is counted.
        return {"format": format, "tokens_before": exact_tokens_before(), "budget": budget, "steps": list(steps),
                "token_counter": counter_name(count), **extra}

    # Each validation of the list the next steps work on also pairs its
    # calls with their results (``pairs``), for the ledger and the notes.
    pairs: dict = {}
    violations = validate(msgs, format, pairs=pairs)
    steps.append({"step": "validate_input", "violations": len(violations)})
    repairs: list[dict] = []
    placeholders: frozenset[int] = frozenset()
    if violations:
        if cfg.on_pairing_error == SYNTHESIZE_ERROR_RESULTS and repairable(violations):
            msgs, repairs, placeholders = synthesize_error_results(msgs, violations, format)
            pairs = {}
            again = validate(msgs, format, pairs=pairs)
            steps.append({"step": "synthesize_error_results", "repaired": len(repairs), "violations": len(again)})
            if again:
                raise InvariantBroken(f"repair left {again}")
        else:
            raise PairingError(violations, report=partial(violations=[v.as_dict() for v in violations]))

    ledger = build_ledger(msgs, cfg.side_effect_tools, format=format, placeholders=placeholders, pairs=pairs)

    loop = compact_tool_loop(msgs, format=format, config=cfg.loop, previous_summary=cfg.work_summary,
                             summariser=summariser or DeterministicLoopSummariser(count), count=count,
                             max_tokens=cfg.summary_max_tokens, ledger=ledger, tokens=tokens)
    loop_step = {"step": "loop_compaction", "outcome": loop.status, "folded": len(loop.folded_indices),
                 "covered": len(loop.covered_indices)}
    changed = len(loop.messages) != len(msgs) or not all(map(operator.is_, loop.messages, msgs))
    if changed:
        pairs = {}
        again = validate(loop.messages, format, pairs=pairs)
        loop_step["violations"] = len(again)
        if again:
            raise InvariantBroken(f"loop compaction left {again}")
        msgs = loop.messages
    steps.append(loop_step)

    # Units are counted as trimming needs them; the protected ones always.
    units = assign_buckets(split_units(msgs, format, None), msgs, cfg)
    protected = [u for u in units if u.bucket != MIDDLE]
    prefix_tokens = fixed + sum(measure(u, msgs, tokens) for u in protected if u.bucket == PREFIX)
    suffix_tokens = sum(measure(u, msgs, tokens) for u in protected if u.bucket == SUFFIX)
    bucket_step = {"step": "buckets"}  # filled in once trimming has counted what it needed
    steps.append(bucket_step)

    def refusal_sizes() -> tuple[dict, dict]:
        # A refusal's figures are exact: every unit is counted.
        for u in units:
            measure(u, msgs, tokens)
        buckets = _bucket_summary(units)
        bucket_step.update({k: v["tokens"] for k, v in buckets.items()})
        return ({"budget": budget, "tokens_before": exact_tokens_before(), "protected_prefix_tokens": prefix_tokens,
                 "protected_suffix_tokens": suffix_tokens}, buckets)

    if prefix_tokens > budget:
        sizes, buckets = refusal_sizes()
        raise OverBudgetError(
            f"The protected prefix alone (system prompts, pinned messages and tool schemas) needs "
            f"{prefix_tokens} tokens, over the input budget of {budget}; it is never cut.",
            sizes={**sizes, "reason": "protected_prefix_over_budget"},
            report=partial(ledger=[e.as_dict() for e in ledger], buckets=buckets))

    gone = set(loop.folded_indices) | set(loop.covered_indices)
    outcome = trim(units, msgs, format=format, config=cfg, ledger=ledger, count=count, fixed_tokens=fixed,
                   budget=budget, tighten=tighten,
                   gone=frozenset((e.index, e.call_id) for e in ledger if e.index in gone), tokens=tokens,
                   count_all=count_all, observer=observer, pairs=pairs)
    steps.extend(outcome.steps)
    if not outcome.fits:
        sizes, buckets = refusal_sizes()
        raise OverBudgetError(
            f"After removing every middle ring and turn the request still needs {outcome.tokens_after} "
            f"tokens, over the input budget of {budget}; the protected prefix and suffix (recent rings "
            f"and user turns) are never cut.",
            sizes={**sizes, "tokens_after_trimming": outcome.tokens_after, "reason": "over_budget_after_trimming"},
            report=partial(ledger=[e.as_dict() for e in ledger], buckets=buckets))

    buckets = _bucket_summary(units)
    bucket_step.update({k: v["tokens"] for k, v in buckets.items()})
    tokens_before_exact = not outcome.uncounted
    if not tokens_before_exact:
        bucket_step["tokens_exact"] = False
    if msgs is transcript.messages:  # the units are the input's messages, each once
        tokens_before = fixed + sum(row["tokens"] for row in buckets.values())
    elif tokens_before_exact:
        tokens_before = exact_tokens_before()
    else:
        # Units trimming never had to count: their lower bound, said so.
        known = tokens.known
        tokens_before = fixed + sum(tokens(m) if known(m) else message_floor(m) for m in transcript.messages)

    # The output, validated as it will be rendered (the adapters render a
    # neutral message exactly; the round-trip tests hold them to it).
    check = validate(outcome.messages, format)
    steps.append({"step": "validate_output", "violations": len(check)})
    if check:
        raise InvariantBroken(f"output left {check}")
    rendered = render_messages(format, outcome.messages)
    rendered_system = render_system(transcript.system)

    leading = []
    for message, bucket in zip(rendered, outcome.buckets):
        if bucket != PREFIX:
            break
        leading.append(message)
    at_input = msgs is transcript.messages  # each message at its input position

    def indices(u: Unit) -> list[int]:
        return list(range(u.start, u.stop)) if at_input else _input_indices(msgs, u)

    dropped_rings = sorted((indices(u) for u in outcome.dropped if u.kind == RING), key=lambda r: r[0] if r else -1)
    if at_input:  # a turn is one message (``buckets``): its input index is its position
        dropped_turns = sorted([u.start for u in outcome.dropped if u.kind != RING])
    else:
        dropped_turns = sorted(i for u in outcome.dropped if u.kind != RING for i in indices(u))
    report = AssemblyReport(
        format=format, tokens_before=tokens_before, tokens_before_exact=tokens_before_exact,
        tokens_after=outcome.tokens_after, budget=budget,
        dropped_rings=dropped_rings, dropped_turns=dropped_turns, summary_used=outcome.summary_used,
        ledger=ledger, repairs=repairs,
        prefix_hash=prefix_hash(format, tools, rendered_system, leading), steps=steps, events=loop.events,
        folded=sorted(set(loop.folded_indices) | set(loop.covered_indices)), buckets=buckets,
        messages_before=len(transcript.messages), messages_after=len(rendered), token_counter=counter_name(count),
    )
    report.seconds = round(time.perf_counter() - started, 6)
    return AssemblyResult(format=format, messages=rendered, system=rendered_system, report=report,
                          work_summary=loop.work_summary)


REQUEST_KEYS = ("format", "messages", "system", "tools", "config")


def assemble_request(body: Any, *, counter: TextCounter | None = None,
                     summariser: LoopSummariser | None = None) -> AssemblyResult:
    """The REST body of ``POST /api/v1/context/assemble`` (SPEC §9): strict
    about its own keys (unknown ones refused by name), then ``assemble``."""
    if not isinstance(body, Mapping):
        raise RequestFormatError([{"index": None, "field": "body", "message": "must be a JSON object"}])
    errors = [{"index": None, "field": str(k), "message": "unknown field"} for k in body if k not in REQUEST_KEYS]
    for key in ("format", "messages", "config"):
        if key not in body:
            errors.append({"index": None, "field": key, "message": "is required"})
    if body.get("format") == "openai" and body.get("system") is not None:
        errors.append({"index": None, "field": "system",
                       "message": "OpenAI requests carry system prompts as messages"})
    if "tools" in body and body["tools"] is not None and not isinstance(body["tools"], list):
        errors.append({"index": None, "field": "tools", "message": "must be a list of tool schemas"})
    if errors:
        raise RequestFormatError(errors)
    return assemble(format=body["format"], messages=body["messages"], config=body["config"],
                    system=body.get("system"), tools=body.get("tools"), counter=counter, summariser=summariser)
