"""What one assembly adds to the seed 004 metrics (SPEC §9 "Metrics", seed 004 §5 建议指标).

Pure: it turns a result or a refusal into the samples the metric names of
seed 004 take; the endpoint records them (with prometheus_client, phase 2):

==========================================  =====================================
``context_assemble_tokens``                 histogram: tokens of the assembled request
``context_assemble_dropped_rings_total``    counter: rings trimmed away
``context_assemble_summary_total``          counter: summaries used (the §9 note, §10 work summary)
``context_assemble_summary_fail_total``     counter: summaries that failed or did not fit
``context_assemble_pairing_error_total``    counter: requests refused for broken pairing
``context_assemble_reject_total``           counter: requests refused (fail closed), any reason
``context_assemble_seconds``                histogram: time spent assembling
==========================================  =====================================
"""

from __future__ import annotations

from .assembler import AssemblyResult
from .errors import AssemblyError, PairingError

NAMES = (
    "context_assemble_tokens",
    "context_assemble_dropped_rings_total",
    "context_assemble_summary_total",
    "context_assemble_summary_fail_total",
    "context_assemble_pairing_error_total",
    "context_assemble_reject_total",
    "context_assemble_seconds",
)


def samples(outcome: AssemblyResult | AssemblyError, seconds: float | None = None) -> dict[str, float]:
    """The value each metric takes for one assembly (counters: the increment;
    histograms: the observation; a histogram absent when there is none)."""
    if isinstance(outcome, AssemblyError):
        return {
            "context_assemble_dropped_rings_total": 0,
            "context_assemble_summary_total": 0,
            "context_assemble_summary_fail_total": 0,
            "context_assemble_pairing_error_total": int(isinstance(outcome, PairingError)),
            "context_assemble_reject_total": 1,
            **({"context_assemble_seconds": seconds} if seconds is not None else {}),
        }
    report = outcome.report
    loop_events = [e["event"] for e in report.events]
    summary_failed = sum(1 for s in report.steps if s.get("summary_did_not_fit")) + loop_events.count(
        "compaction_failed")
    return {
        "context_assemble_tokens": report.tokens_after,
        "context_assemble_dropped_rings_total": len(report.dropped_rings),
        "context_assemble_summary_total": int(report.summary_used) + loop_events.count("compacted"),
        "context_assemble_summary_fail_total": summary_failed,
        "context_assemble_pairing_error_total": 0,
        "context_assemble_reject_total": 0,
        "context_assemble_seconds": report.seconds if seconds is None else seconds,
    }
