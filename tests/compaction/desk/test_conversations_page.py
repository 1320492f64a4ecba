"""``/``: the conversations list, its filters, sorts and pager (issue 5 §2)."""

from __future__ import annotations

import pytest

from compaction.desk.selectors import CONVERSATION_SORTS
from compaction.keyset import cursor_pack

pytestmark = pytest.mark.django_db


def test_conversations_page_lists_rows_with_scope_pairs_and_state_bar(as_user, world):
    html = as_user(world.staff).get("/").content.decode()
    assert "conv-a" in html and "Refund for order 88232" in html
    assert "1 succeeded" in html and "1 failed" in html and "1 exhausted" in html
    assert 'class="bar-part bg-failed"' in html


def test_conversations_page_shows_only_the_users_scopes(as_user, world):
    html = as_user(world.support).get("/").content.decode()
    assert "conv-a" in html
    assert "conv-secret" not in html and "Other tenant secret" not in html


@pytest.mark.parametrize(
    "query, present, absent",
    [
        ("q=conv-a", "conv-a", "conv-secret"),
        ("q=tenant", "conv-secret", "conv-a"),
        ("scope=other", "conv-secret", "conv-a"),
        ("has=exhausted", "conv-a", "conv-secret"),
        ("has=stale", None, "conv-a"),
    ],
)
def test_conversations_filters(as_user, world, query, present, absent):
    html = as_user(world.staff).get(f"/?{query}").content.decode()
    if present:
        assert present in html
    assert f">{absent}<" not in html


def test_verdict_filter_uses_the_latest_verdict_of_each_job(as_user, world):
    from compaction.actions import do_review_record

    do_review_record(job=world.succeeded, reviewer=world.support, verdict="needs_work", note="too vague")
    client = as_user(world.staff)
    assert ">conv-a<" in client.get("/?verdict=needs_work").content.decode()
    do_review_record(job=world.succeeded, reviewer=world.support, verdict="approved", note="fixed by re-read")
    assert ">conv-a<" not in client.get("/?verdict=needs_work").content.decode()
    assert ">conv-a<" in client.get("/?verdict=approved").content.decode()


def test_updated_since_filter(as_user, world):
    client = as_user(world.staff)
    assert ">conv-a<" in client.get("/?updated_since=2000-01-01").content.decode()
    assert ">conv-a<" not in client.get("/?updated_since=2999-01-01").content.decode()


def test_bad_filter_value_is_a_400_naming_the_field(as_user, world):
    response = as_user(world.staff).get("/?has=everything")
    assert response.status_code == 400
    assert "has:" in response.content.decode()


def test_keyset_pagination_walks_every_row_once_without_count(as_user, world):
    from conversations.models import Conversation

    Conversation.objects.bulk_create(
        [Conversation(scope="default", external_id=f"bulk-{i:03d}", title=f"bulk {i}") for i in range(120)]
    )
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = as_user(world.staff)
    seen, url, pages = [], "/?sort=external_id", 0
    with CaptureQueriesContext(connection) as queries:
        while url:
            response = client.get(url)
            rows = response.context["rows"]
            seen += [c.external_id for c in rows]
            url = response.context["next_url"]
            pages += 1
    assert len(seen) == len(set(seen)) == 122
    assert seen == sorted(seen)
    assert pages > 1
    # Without a count: no page asks the database how many rows there are
    # (a COUNT per group — the state bars' jobs per conversation — is not that).
    totals = [q["sql"] for q in queries.captured_queries
              if "COUNT(" in q["sql"].upper() and "GROUP BY" not in q["sql"].upper()]
    assert not totals


def test_bad_cursor_is_a_400(as_user, world):
    assert as_user(world.staff).get("/?cursor=!!notacursor").status_code == 400


@pytest.mark.parametrize("sort", ["pairs", "external_id", "oldest"])
def test_a_cursor_with_an_infinite_number_is_a_400_for_every_sort(as_user, world, sort):
    kind = CONVERSATION_SORTS[sort].kind
    for position in ([float("inf"), 1], ["x", float("inf")]):  # json writes them as Infinity
        cursor = cursor_pack({"k": kind, "p": position})
        assert as_user(world.staff).get(f"/?sort={sort}&cursor={cursor}").status_code == 400


def test_htmx_request_renders_only_the_results_partial(as_user, world):
    response = as_user(world.staff).get("/?q=conv", HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="results"')
    assert "<html" not in html


def test_pager_links_keep_the_filters_and_work_with_and_without_htmx(as_user, world):
    from conversations.models import Conversation

    Conversation.objects.bulk_create(
        [Conversation(scope="default", external_id=f"bulk-{i:03d}", title=f"bulk {i}") for i in range(60)]
    )
    client = as_user(world.staff)
    first = client.get("/?q=bulk&sort=external_id")
    next_url = first.context["next_url"]
    assert next_url.startswith("?q=bulk&sort=external_id&cursor=")
    html = first.content.decode().replace("&amp;", "&")
    assert (f'<a href="{next_url}" hx-get="{next_url}" hx-target="#results" hx-swap="outerHTML" '
            'hx-push-url="true">Next page »</a>') in html
    assert "« First page" not in html

    second = client.get(f"/{next_url}", HTTP_HX_REQUEST="true").content.decode().replace("&amp;", "&")
    assert ('<a href="?q=bulk&sort=external_id" hx-get="?q=bulk&sort=external_id" hx-target="#results" '
            'hx-swap="outerHTML" hx-push-url="true">« First page</a>') in second
    assert "Next page »" not in second


def test_updated_since_starts_at_midnight_utc(as_user, world):
    from datetime import datetime, timezone

    from conversations.models import Conversation

    Conversation.objects.filter(external_id="conv-a").update(updated_at=datetime(2026, 5, 2, 0, 30, tzinfo=timezone.utc))
    client = as_user(world.staff)
    assert ">conv-a<" in client.get("/?updated_since=2026-05-02").content.decode()
    assert ">conv-a<" not in client.get("/?updated_since=2026-05-03").content.decode()
