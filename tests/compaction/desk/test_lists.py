"""What the three list pages (conversations, queue, activity) share: the
keyset pager, refused cursors and filters, the HTMX results partial (issue 5)."""

from __future__ import annotations

import pytest

from compaction.desk.activity import ACTIVITY
from compaction.desk.queue import QUEUE
from compaction.desk.selectors import CONVERSATION_SORTS
from compaction.keyset import cursor_pack
from tests.compaction.desk.conftest import page_urls

pytestmark = pytest.mark.django_db


LIST_PAGES = {"conversations": CONVERSATION_SORTS["recent"].kind, "queue": QUEUE.kind, "activity": ACTIVITY.kind}


_MOMENT = "2026-01-01T00:00:00+00:00"


@pytest.mark.parametrize("name", LIST_PAGES)
@pytest.mark.parametrize("position", [
    "!!notacursor", [1], "not json",  # garbage, a bare list, text that is no cursor
    ["", 5], [None, 5], ["2026-01-01T00:00:00", 5],  # no time, and a time without its zone
    # [time, Infinity], [time, 1e400] (a float that overflows to infinity), [NaN, 5]: int() of an
    # infinite float raises OverflowError, not ValueError, and answered 500
    [_MOMENT, float("inf")], [_MOMENT, 1e400], [float("nan"), 5],
])
def test_every_list_page_answers_a_malformed_cursor_with_400(as_user, world, name, position):
    if position in ("!!notacursor", "not json"):
        cursor = position if position.startswith("!") else cursor_pack(position)
    else:
        cursor = cursor_pack({"k": LIST_PAGES[name], "p": position})
    assert as_user(world.staff).get(f"{page_urls(world)[name]}?cursor={cursor}").status_code == 400


@pytest.mark.parametrize("name", LIST_PAGES)
def test_every_list_page_answers_a_bad_filter_with_400_naming_the_field(as_user, world, name):
    response = as_user(world.staff).get(f"{page_urls(world)[name]}?scope=no-such-scope")
    assert response.status_code == 400
    assert "scope:" in response.content.decode()


@pytest.mark.parametrize("name", LIST_PAGES)
def test_every_list_page_swaps_its_results_with_the_pager_inside(as_user, world, name):
    html = as_user(world.staff).get(page_urls(world)[name], HTTP_HX_REQUEST="true").content.decode()
    assert html.lstrip().startswith('<section id="results"') and "<html" not in html
    assert '<nav class="pager"' in html


def test_scope_menu_lists_every_scope_for_staff_and_only_granted_scopes_for_others(as_user, world):
    assert as_user(world.staff).get("/").context["form"].fields["scope"].choices == [
        ("", "all scopes"), ("default", "default"), ("other", "other")]
    assert as_user(world.support).get("/").context["form"].fields["scope"].choices == [
        ("", "all scopes"), ("default", "default")]
