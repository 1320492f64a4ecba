"""Desk cursors are validated like the REST ones (issue 12 item 3): any
cursor a client can send to ``/``, ``/queue/`` or ``/activity/`` — crafted,
fuzzed or garbage — is answered with the page or a 400, never a 500."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compaction.desk.activity import ACTIVITY
from compaction.desk.queue import QUEUE
from compaction.desk.selectors import CONVERSATION_SORTS
from compaction.keyset import cursor_pack
from tests.compaction.desk.conftest import page_urls

pytestmark = pytest.mark.django_db

# Every keyset the three pages read, with the query that selects it.
LISTS = [("conversations", f"sort={sort}", keyset) for sort, keyset in CONVERSATION_SORTS.items()] + [
    ("queue", "", QUEUE), ("activity", "", ACTIVITY)]


def _get(client, world, name, query, cursor):
    url = f"{page_urls(world)[name]}?{query + '&' if query else ''}cursor={cursor}"
    return client.get(url)


@pytest.mark.parametrize("name, query, keyset", LISTS, ids=[f"{n}-{q}" for n, q, _ in LISTS])
@pytest.mark.parametrize("position", [
    ["2026-01-01T00:00:00+16:00", 1],  # an offset PostgreSQL refuses as a literal
    ["0001-01-01T00:00:00+16:00", 1], ["9999-12-31T23:59:59-23:59", 1],  # before year 1, after 9999 in UTC
    ["conv-\u0000", 1], ["\u0000", 1],  # a NUL in the sort key: PostgreSQL cannot compare it
    ["conv-\ud800", 1],  # a lone surrogate: not encodable to the database
    [2**63, 1], [-1, 1], [0, 2**63], [0, 0], [True, 1], ["5", "6"], [5.5, 1],
])
def test_a_crafted_cursor_is_refused_with_400_on_every_list(as_user, world, name, query, keyset, position):
    response = _get(as_user(world.staff), world, name, query, cursor_pack({"k": keyset.kind, "p": position}))
    assert response.status_code in (200, 400), response.status_code
    if isinstance(position[0], str) and ("\u0000" in position[0] or "\ud800" in position[0]):
        assert response.status_code == 400  # text the database cannot hold names no row
    if position[0] == "2026-01-01T00:00:00+16:00" and keyset.values[0] == "time":
        assert response.status_code == 200  # a proper time, read in UTC


_json = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3),
    max_leaves=6,
)
_times = st.datetimes(timezones=st.timezones()).map(lambda d: d.isoformat()) | st.builds(
    lambda d, h, m: f"{d.isoformat()}{'+' if h >= 0 else '-'}{abs(h):02d}:{m:02d}",
    st.datetimes(), st.integers(-23, 23), st.integers(0, 59))
_scalar = _times | st.text() | st.integers(min_value=-(2**65), max_value=2**65) | _json


@settings(max_examples=150, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(which=st.sampled_from(LISTS), position=st.lists(_scalar, min_size=0, max_size=3),
       extra=st.sampled_from([{}, {"r": 1}, {"r": 2}, {"x": 1}]), garbage=st.none() | st.text(max_size=40))
def test_any_cursor_is_answered_with_the_page_or_400_never_500(as_user, world, which, position, extra, garbage):
    name, query, keyset = which
    cursor = garbage if garbage is not None else cursor_pack({"k": keyset.kind, "p": position, **extra})
    from urllib.parse import quote

    response = _get(as_user(world.staff), world, name, query, quote(cursor))
    assert response.status_code in (200, 400), (response.status_code, cursor)
