"""Observability for the engine (issue 3 §9; seed 002 events and logs).

Structured events ``compacting``, ``compacted`` and ``compaction_failed``
are written as one log line each (``event key=value ...``, values JSON-encoded,
also attached to the record as ``extra``) on the ``compaction.events``
logger, sent as the ``compaction_event`` signal, and counted in Prometheus
metrics served at ``/metrics`` (``compaction.metrics``).
"""

from __future__ import annotations

import json
import logging

from django.dispatch import Signal
from prometheus_client import Counter, Histogram

logger = logging.getLogger("compaction.events")
compaction_event = Signal()  # sent with event=<name>, fields=<dict>

ATTEMPTS = Counter("compaction_attempts_total", "Finished compaction attempts.", ["outcome", "failure_code"])
CLAIMS = Counter("compaction_claims_total", "Claim decisions.", ["result"])
GENERATIONS = Counter("compaction_generations_total", "Summary generations written.")
TOKENS = Counter("compaction_tokens_total", "Tokens reported by providers.", ["direction"])
PROVIDER_LATENCY = Histogram(
    "compaction_provider_latency_seconds", "Time spent in the provider call.",
    buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
)
OVERHEAD = Histogram(
    "compaction_job_overhead_seconds", "Orchestration time per job outside the provider call.",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5),
)
REAPED = Counter("compaction_leases_reaped_total", "Running attempts whose lease expired.")


def emit(event: str, **fields) -> None:
    level = logging.WARNING if event == "compaction_failed" else logging.INFO
    if logger.isEnabledFor(level):
        line = " ".join(f"{k}={json.dumps(v, ensure_ascii=False, default=str)}" for k, v in fields.items())
        logger.log(level, "%s %s", event, line, extra={"event": event, "fields": fields})
    compaction_event.send(sender=None, event=event, fields=fields)


def attempt_observed(*, outcome: str, failure_code: str, input_tokens, output_tokens, latency_ms) -> None:
    ATTEMPTS.labels(outcome=outcome, failure_code=failure_code or "").inc()
    if input_tokens:
        TOKENS.labels(direction="input").inc(input_tokens)
    if output_tokens:
        TOKENS.labels(direction="output").inc(output_tokens)
    if latency_ms is not None:
        PROVIDER_LATENCY.observe(latency_ms / 1000)
    if outcome == "succeeded":
        GENERATIONS.inc()
