"""Issue 6: the time cursor names one row of one list; anything else is refused."""

import base64
import json
from datetime import datetime, timezone

import pytest

from compaction.api.plumbing import InvalidCursor, cursor_decode, cursor_encode

AT = datetime(2026, 11, 30, 1, 2, 3, 456789, tzinfo=timezone.utc)


def raw(obj) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


def test_cursor_round_trips_the_position_to_the_microsecond():
    assert cursor_decode(cursor_encode(kind="audits", created_at=AT, pk=7), kind="audits") == (AT, 7)


def test_cursor_time_is_read_in_utc():
    value = raw({"k": "audits", "t": "2026-11-30T19:52:03+18:50", "i": 7})
    assert cursor_decode(value, kind="audits") == (datetime(2026, 11, 30, 1, 2, 3, tzinfo=timezone.utc), 7)


def test_cursor_of_another_list_is_refused():
    with pytest.raises(InvalidCursor, match="another list"):
        cursor_decode(cursor_encode(kind="activity", created_at=AT, pk=7), kind="audits")


@pytest.mark.parametrize(
    "value",
    [
        "", "not-a-cursor", "@@@@", "é", raw([1, 2]), raw({"k": "audits", "t": AT.isoformat()}),
        raw({"k": "audits", "t": AT.isoformat(), "i": 0}), raw({"k": "audits", "t": AT.isoformat(), "i": 2**63}),
        raw({"k": "audits", "t": AT.isoformat(), "i": "7"}), raw({"k": "audits", "t": AT.isoformat(), "i": True}),
        raw({"k": "audits", "t": "yesterday", "i": 7}), raw({"k": "audits", "t": "2026-11-30T01:02:03", "i": 7}),
        raw({"k": "audits", "t": 5, "i": 7}), raw({"k": "audits", "t": "0001-01-01T00:00:00+05:00", "i": 7}), raw({"k": "audits", "t": AT.isoformat(), "i": 7, "x": 1}),
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
    ],
)
def test_malformed_cursor_is_refused(value):
    with pytest.raises(InvalidCursor):
        cursor_decode(value, kind="audits")
