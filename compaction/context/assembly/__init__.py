"""Context assembly for tool-calling runs and in-run tool-loop compaction
(SPEC §9, §10; seed 004 whole; seed 002 §7, §8, §10, §11).

A pure library: plain data in, plain data out; no database, no Django. The
REST endpoint (``POST /api/v1/context/assemble``) and the desk inspector
call it as it is.

    from compaction.context.assembly import assemble, AssemblyConfig

    result = assemble(format="openai", messages=[...], tools=[...],
                      config={"model_input_limit": 128_000})
    result.messages            # the next request's messages, same format
    result.report.as_dict()    # tokens, drops, ledger, prefix_hash, steps
    result.work_summary        # the run's work summary (§10), or None

Refusals are exceptions with ``code`` and ``as_dict()``:
``PairingError`` (``context_assembly_pairing_error``), ``OverBudgetError``
(``context_over_budget``), ``RequestFormatError`` (``invalid_request``),
``ConfigError`` (``invalid_config``).

Modules: ``neutral`` (the form), ``adapters`` (OpenAI / Anthropic),
``validator`` (pairing), ``counting`` (tokens), ``config``, ``ledger``,
``buckets``, ``trim``, ``notes``, ``repair``, ``toolloop`` (§10),
``assembler``, ``retry``, ``metrics`` (seed 004 metric samples),
``inspect`` (the desk inspector's per-unit view).
"""

from .adapters import from_anthropic, from_openai, parse, render_messages, render_system, to_anthropic, to_openai
from .assembler import AssemblyReport, AssemblyResult, assemble, assemble_request, prefix_hash
from .buckets import MIDDLE, PREFIX, SUFFIX, Unit, plan_units
from .config import AssemblyConfig, LoopConfig
from .counting import CachedCounter, count_message, count_request, default_counter
from .errors import (
    AssemblyError,
    ConfigError,
    InvariantBroken,
    OverBudgetError,
    PairingError,
    RequestFormatError,
)
from .inspect import inspect_assembly
from .ledger import LedgerEntry, build_ledger, has_side_effects
from .retry import ContextLengthExceeded, is_context_length_exceeded, retry_after_context_length_exceeded
from .toolloop import (
    LOOP_PROMPT_V1,
    LOOP_PROMPT_VERSION,
    DeterministicLoopSummariser,
    LoopSummariser,
    LoopSummaryRequest,
    compact_tool_loop,
    loop_prompt_messages,
)
from .validator import PROBLEMS, Violation, validate, validate_request

__all__ = [
    "AssemblyConfig", "AssemblyError", "AssemblyReport", "AssemblyResult", "CachedCounter", "ConfigError",
    "ContextLengthExceeded", "DeterministicLoopSummariser", "InvariantBroken", "LOOP_PROMPT_V1",
    "LOOP_PROMPT_VERSION", "LedgerEntry", "LoopConfig", "LoopSummariser", "LoopSummaryRequest", "MIDDLE",
    "OverBudgetError", "PREFIX", "PROBLEMS", "PairingError", "RequestFormatError", "SUFFIX", "Unit", "Violation",
    "assemble", "assemble_request", "build_ledger", "compact_tool_loop", "count_message", "count_request",
    "default_counter", "from_anthropic", "from_openai", "has_side_effects", "inspect_assembly", "is_context_length_exceeded",
    "loop_prompt_messages", "parse", "plan_units", "prefix_hash", "render_messages", "render_system",
    "retry_after_context_length_exceeded", "to_anthropic", "to_openai", "validate", "validate_request",
]
