"""``/metrics``: every Prometheus metric of this process (the engine's,
``compaction.engine.metrics``; the projection's,
``compaction.context.metrics``) and gauges read from the database.

Worker processes and the web server are different processes: when
``PROMETHEUS_MULTIPROC_DIR`` is set (the demo sets it) counters and
histograms are shared through that directory. Job-state gauges are read
from the database at scrape time, so they are right whatever the process.
"""

from __future__ import annotations

import os

from django.db.models import Count
from django.http import HttpResponse
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from .engine.admission import slots_in_use
from .models import CompactionJob, JobState


class DatabaseCollector:
    """Gauges read from the database when scraped."""

    def collect(self):
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
