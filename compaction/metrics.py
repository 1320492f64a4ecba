"""Observability for the engine (issue 3 §9; seed 002 events and logs).

Structured events ``compacting``, ``compacted`` and ``compaction_failed``
are written as one log line each (``event key=value ...``, values JSON-encoded,
also attached to the record as ``extra``) on the ``compaction.events``
logger, sent as the ``compaction_event`` signal, and counted in Prometheus
metrics served at ``/metrics``.

Worker processes and the web server are different processes: when
``PROMETHEUS_MULTIPROC_DIR`` is set (the demo sets it) counters and
histograms are shared through that directory. Job-state gauges are read
from the database at scrape time, so they are right whatever the process.
"""

from __future__ import annotations

import json
import logging
import os

from django.dispatch import Signal
from django.http import HttpResponse
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST

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


class DatabaseCollector:
    """Gauges read from the database when scraped."""

    def collect(self):
        from django.db.models import Count

        from .admission import slots_in_use
        from .models import CompactionJob, JobState

        jobs = GaugeMetricFamily("compaction_jobs", "Compaction jobs by state.", labels=["state"])
        counts = dict(CompactionJob.objects.values_list("state").annotate(n=Count("id")).values_list("state", "n"))
        for state in JobState.values:
            jobs.add_metric([state], counts.get(state, 0))
        yield jobs
        yield GaugeMetricFamily("compaction_admission_slots_in_use", "Global admission slots held.",
                                value=slots_in_use())


def metrics_view(request):
    registry = CollectorRegistry()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.MultiProcessCollector(registry)
    else:
        from prometheus_client import REGISTRY

        registry = REGISTRY
        body = generate_latest(registry)
        db_registry = CollectorRegistry()
        db_registry.register(DatabaseCollector())
        return HttpResponse(body + generate_latest(db_registry), content_type=CONTENT_TYPE_LATEST)
    registry.register(DatabaseCollector())
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
