"""``/metrics`` (issue 12 item 7; ``compaction/metrics.py``): only a scrape
with the token or from an allowed address is answered, and the database
gauges cost one grouped count per cache interval, not one per scrape."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from compaction.bindings.segments import conversation_plan
from tests.compaction.conftest import ingest
from tests.factories import conversation_document

pytestmark = pytest.mark.django_db


@pytest.fixture
def guarded(settings):
    settings.COMPACTION_METRICS_TOKEN = "scrape-token-for-tests"
    settings.COMPACTION_METRICS_ALLOW = ["10.20.0.0/16", "::1"]


def scrape(address="192.0.2.1", **headers):
    return Client(REMOTE_ADDR=address).get("/metrics", **headers)


def test_an_anonymous_scrape_from_elsewhere_is_refused_and_reads_nothing(guarded):
    with CaptureQueriesContext(connection) as queries:
        response = scrape()
    assert response.status_code == 403 and b"compaction_jobs" not in response.content
    assert not [q for q in queries if "compaction_compactionjob" in q["sql"]]


@pytest.mark.parametrize("header", ["Bearer wrong-token", "Token scrape-token-for-tests", "Bearer", ""])
def test_a_wrong_token_is_refused(guarded, header):
    assert scrape(HTTP_AUTHORIZATION=header).status_code == 403


def test_the_token_or_an_allowed_address_may_scrape(guarded):
    assert scrape(HTTP_AUTHORIZATION="Bearer scrape-token-for-tests").status_code == 200
    assert scrape(address="10.20.3.4").status_code == 200
    assert scrape(address="::1").status_code == 200
    assert scrape(address="10.21.0.1").status_code == 403


def test_with_neither_configured_every_scrape_is_refused(settings):
    settings.COMPACTION_METRICS_TOKEN = ""
    settings.COMPACTION_METRICS_ALLOW = []
    assert scrape(address="127.0.0.1").status_code == 403


def test_behind_a_proxy_the_allow_list_reads_the_forwarded_address(settings):
    settings.COMPACTION_METRICS_ALLOW = ["10.20.0.0/16"]
    settings.DJANGO_FORWARDED_FOR_PROXIES = 1
    assert scrape(address="10.0.0.2", HTTP_X_FORWARDED_FOR="10.20.1.1").status_code == 200
    assert scrape(address="10.0.0.2", HTTP_X_FORWARDED_FOR="10.20.1.1, 192.0.2.9").status_code == 403


def test_the_job_gauges_are_read_once_per_interval_however_often_it_is_scraped(settings):
    settings.COMPACTION_METRICS_CACHE_SECONDS = 30
    from django.core.cache import cache

    from compaction.metrics import GAUGES_CACHE_KEY

    cache.delete(GAUGES_CACHE_KEY)
    conversation_plan(conversation=ingest(conversation_document(30)))
    grouped = []
    for _ in range(5):
        with CaptureQueriesContext(connection) as queries:
            response = scrape(address="127.0.0.1")
        assert response.status_code == 200
        assert 'compaction_jobs{state="pending"} 1.0' in response.content.decode()
        grouped.append(sum("GROUP BY" in q["sql"] and "compaction_compactionjob" in q["sql"] for q in queries))
    assert grouped == [1, 0, 0, 0, 0]
