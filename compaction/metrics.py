"""``/metrics``: every Prometheus metric of this process (the engine's,
``compaction.engine.metrics``; the projection's,
``compaction.context.metrics``) and gauges read from the database.

Worker processes and the web server are different processes: when
``PROMETHEUS_MULTIPROC_DIR`` is set (the demo sets it) counters and
histograms are shared through that directory.

**Who may scrape** (issue 12 item 7): the counts span every scope, so a
scrape must carry ``Authorization: Bearer <COMPACTION_METRICS_TOKEN>`` or
come from an address in ``COMPACTION_METRICS_ALLOW`` (addresses or
networks); anyone else gets 403 and nothing is read.

**What a scrape costs.** The job-state gauges are one grouped count over
the job table; it is read at most once per
``COMPACTION_METRICS_CACHE_SECONDS`` (15) and kept in the shared cache, so
however often and from however many web processes Prometheus scrapes, the
database answers that query at most once per interval.
"""

from __future__ import annotations

import hmac
import ipaddress
import os

from django.conf import settings
from django.core.cache import cache
from django.db.models import Count
from django.http import HttpResponse, HttpResponseForbidden
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from .engine.admission import slots_in_use
from .models import CompactionJob, JobState
from .signin import client_address

GAUGES_CACHE_KEY = "compaction:metrics:gauges"


def database_gauges() -> dict:
    """Jobs by state and admission slots held, from the database."""
    counts = dict(CompactionJob.objects.order_by().values_list("state").annotate(n=Count("id"))
                  .values_list("state", "n"))
    return {"jobs": {state: counts.get(state, 0) for state in JobState.values}, "slots": slots_in_use()}


def cached_gauges() -> dict:
    seconds = settings.COMPACTION_METRICS_CACHE_SECONDS
    if seconds <= 0:
        return database_gauges()
    gauges = cache.get(GAUGES_CACHE_KEY)
    if gauges is None:
        gauges = database_gauges()
        cache.set(GAUGES_CACHE_KEY, gauges, timeout=seconds)
    return gauges


class DatabaseCollector:
    """Gauges read from the database (through the cache) when scraped."""

    def collect(self):
        gauges = cached_gauges()
        jobs = GaugeMetricFamily("compaction_jobs", "Compaction jobs by state.", labels=["state"])
        for state, n in gauges["jobs"].items():
            jobs.add_metric([state], n)
        yield jobs
        yield GaugeMetricFamily("compaction_admission_slots_in_use", "Global admission slots held.",
                                value=gauges["slots"])


def _allowed_networks() -> list:
    networks = []
    for entry in settings.COMPACTION_METRICS_ALLOW:
        networks.append(ipaddress.ip_network(entry, strict=False))
    return networks


def scrape_allowed(request) -> bool:
    token = settings.COMPACTION_METRICS_TOKEN
    if token:
        scheme, _, given = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode()):
            return True
    try:
        address = ipaddress.ip_address(client_address(request))
    except ValueError:
        return False
    return any(address in network for network in _allowed_networks())


def metrics_view(request):
    if not scrape_allowed(request):
        return HttpResponseForbidden("metrics: a token (COMPACTION_METRICS_TOKEN) or an allowed address is required",
                                     content_type="text/plain")
    registry = CollectorRegistry()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.MultiProcessCollector(registry)
    else:
        from prometheus_client import REGISTRY

        body = generate_latest(REGISTRY)
        db_registry = CollectorRegistry()
        db_registry.register(DatabaseCollector())
        return HttpResponse(body + generate_latest(db_registry), content_type=CONTENT_TYPE_LATEST)
    registry.register(DatabaseCollector())
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
