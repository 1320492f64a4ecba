"""The desk's formatting helpers: plain, fast, and escaping."""

from datetime import datetime, timedelta, timezone

from compaction.desk.templatetags import ago, job_url, state, utc


def test_utc_formats_aware_datetimes_in_utc_and_none_as_blank():
    cet = timezone(timedelta(hours=1))
    assert utc(datetime(2026, 11, 1, 11, 30, tzinfo=cet)) == "2026-11-01 10:30 UTC"
    assert utc(None) == ""


def test_every_time_says_it_is_utc():
    moment = datetime(2026, 11, 1, 10, 30, 5, tzinfo=timezone.utc)
    assert utc(moment, "%H:%M:%S") == "10:30:05 UTC"
    assert utc(moment, "%Y-%m-%d %H:%M:%S") == "2026-11-01 10:30:05 UTC"
    # ISO 8601 with its Z (in title attributes) already names the zone.
    assert utc(moment, "%Y-%m-%dT%H:%M:%SZ") == "2026-11-01T10:30:05Z"


def test_ago_is_compact():
    now = datetime.now(timezone.utc)
    assert ago(now - timedelta(days=3, hours=2)) == "3 d ago"
    assert ago(now - timedelta(minutes=12, seconds=5)) == "12 min ago"
    assert ago(None) == ""


def test_state_pill_escapes_and_labels():
    html = state('<img src=x onerror="1">')
    assert "<img" not in html and "&lt;img" in html
    assert ">no job yet</span>" in state("no_job")


def test_job_url_matches_reverse():
    from django.urls import reverse

    assert job_url(42) == reverse("desk-job", args=[42])
