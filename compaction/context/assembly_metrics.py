"""Prometheus metrics of context assembly, with the seed 004 §5 names (SPEC §9
"Metrics"), and of in-run tool-loop compaction (SPEC §10, seed 002 §11).

Registered in prometheus_client's default registry, so ``/metrics`` serves
them (``compaction.metrics``); with ``PROMETHEUS_MULTIPROC_DIR`` set they
add up across processes like the engine's. What one assembly adds is the
pure library's rule (``compaction.context.assembly.metrics.samples``); this
module only records it.

==========================================  =====================================================
``context_assemble_tokens``                 histogram: tokens of the assembled request
``context_assemble_dropped_rings_total``    counter: tool rings trimmed away
``context_assemble_summary_total``          counter: summaries used (the §9 note, a §10 work summary)
``context_assemble_summary_fail_total``     counter: summaries that failed or did not fit
``context_assemble_pairing_error_total``    counter: requests refused for broken pairing
``context_assemble_reject_total``           counter: requests refused (fail closed), by ``code``
``context_assemble_seconds``                histogram: time spent assembling
``context_loop_compactions_total``          counter: tool-loop compactions by ``outcome``
                                            (``compacted``, ``failed``)
``context_loop_tokens_total``               counter: tokens of the loop's working region before
                                            and after its compactions (``stage``)
==========================================  =====================================================

Every counter but the reject and loop ones is labelled by ``format``
(``openai``, ``anthropic``).
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from .assembly.assembler import AssemblyResult
from .assembly.errors import AssemblyError
from .assembly.metrics import samples
from .assembly.neutral import FORMATS

_TOKEN_BUCKETS = (256, 1024, 4096, 8192, 16384, 32768, 65536, 131072, 262144, 1048576)
_SECONDS_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)

TOKENS = Histogram("context_assemble_tokens", "Tokens of one assembled request (after trimming).", ["format"],
                   buckets=_TOKEN_BUCKETS)
DROPPED_RINGS = Counter("context_assemble_dropped_rings_total", "Tool rings trimmed away by context assembly.",
                        ["format"])
SUMMARIES = Counter("context_assemble_summary_total",
                    "Summaries context assembly used (summary notes and tool-loop work summaries).", ["format"])
SUMMARY_FAILURES = Counter("context_assemble_summary_fail_total",
                           "Summaries that failed or did not fit (the raw history or the ledger note stayed).",
                           ["format"])
PAIRING_ERRORS = Counter("context_assemble_pairing_error_total",
                         "Assembly requests refused because their tool pairing is broken.", ["format"])
REJECTS = Counter("context_assemble_reject_total", "Assembly requests refused (fail closed), by code.", ["code"])
SECONDS = Histogram("context_assemble_seconds", "Time spent assembling one request.", buckets=_SECONDS_BUCKETS)
LOOP_COMPACTIONS = Counter("context_loop_compactions_total", "In-run tool-loop compactions, by outcome.",
                           ["outcome"])
LOOP_TOKENS = Counter("context_loop_tokens_total",
                      "Tokens of the tool loop's working region around its compactions.", ["stage"])

REJECT_CODES = ("context_assembly_pairing_error", "context_over_budget")

# Every label value shows from the start (at 0), so a dashboard never
# mistakes "nothing yet" for "not exported".
for _format in FORMATS:
    for _metric in (TOKENS, DROPPED_RINGS, SUMMARIES, SUMMARY_FAILURES, PAIRING_ERRORS):
        _metric.labels(format=_format)
for _code in REJECT_CODES:
    REJECTS.labels(code=_code)
for _outcome in ("compacted", "failed"):
    LOOP_COMPACTIONS.labels(outcome=_outcome)
for _stage in ("before", "after"):
    LOOP_TOKENS.labels(stage=_stage)


def observe(outcome: AssemblyResult | AssemblyError, *, format: str, seconds: float) -> None:
    """Record one assembly: a result, or the refusal it ended in."""
    values = samples(outcome, seconds)
    label = format if format in FORMATS else "unknown"
    SECONDS.observe(values["context_assemble_seconds"])
    if isinstance(outcome, AssemblyError):
        if values["context_assemble_pairing_error_total"]:
            PAIRING_ERRORS.labels(format=label).inc()
        REJECTS.labels(code=outcome.code).inc()
        return
    TOKENS.labels(format=label).observe(values["context_assemble_tokens"])
    DROPPED_RINGS.labels(format=label).inc(values["context_assemble_dropped_rings_total"])
    SUMMARIES.labels(format=label).inc(values["context_assemble_summary_total"])
    SUMMARY_FAILURES.labels(format=label).inc(values["context_assemble_summary_fail_total"])
    for event in outcome.report.events:
        if event["event"] == "compacted":
            LOOP_COMPACTIONS.labels(outcome="compacted").inc()
            LOOP_TOKENS.labels(stage="before").inc(event.get("tokens_before") or 0)
            LOOP_TOKENS.labels(stage="after").inc(event.get("tokens_after") or 0)
        elif event["event"] == "compaction_failed":
            LOOP_COMPACTIONS.labels(outcome="failed").inc()
