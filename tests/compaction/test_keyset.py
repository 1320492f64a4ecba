"""The one cursor scheme of the desk and the REST lists (issues 5, 6, 10):
base64url of JSON naming a list and one row's position in it, and nothing
else is taken for one."""

import base64
import json
from datetime import datetime, timezone

import pytest

from compaction.keyset import ID, TIME, InvalidCursor, Keyset, cursor_pack, cursor_unpack


def test_cursor_round_trips_its_json_without_padding():
    cursor = cursor_pack(["2026-11-30T01:02:03.456789+00:00", 7])
    assert "=" not in cursor
    assert cursor_unpack(cursor) == ["2026-11-30T01:02:03.456789+00:00", 7]


def test_character_outside_base64url_is_refused_not_skipped():
    cursor = cursor_pack(["bulk-001", 7])
    with pytest.raises(InvalidCursor):
        cursor_unpack(cursor[:4] + "!!!!" + cursor[4:])


@pytest.mark.parametrize("value", ["", "@@@@", "é", "bm90IGpzb24", "_-8"])  # "bm90IGpzb24" is "not json"
def test_what_is_not_base64url_of_json_is_refused(value):
    with pytest.raises(InvalidCursor):
        cursor_unpack(value)


@pytest.mark.parametrize("json_text", ["[Infinity,1]", "[-Infinity,1]", "[NaN,1]", "[1e400,1]", '{"i":1e999}'])
def test_a_number_that_is_not_finite_is_refused(json_text):
    # Python's json reads these; no cursor we issue holds one, and int() of
    # an infinite float raises OverflowError where callers expect InvalidCursor.
    cursor = base64.urlsafe_b64encode(json_text.encode()).decode().rstrip("=")
    with pytest.raises(InvalidCursor):
        cursor_unpack(cursor)


# --- a list's cursor names one row of that list; anything else is refused ------

AT = datetime(2026, 11, 30, 1, 2, 3, 456789, tzinfo=timezone.utc)
AUDITS = Keyset("audits", ("created_at", "id"), (TIME, ID))


def raw(obj) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


def test_cursor_round_trips_the_position_to_the_microsecond():
    assert AUDITS.decode(AUDITS.cursor([AT, 7])) == ([AT, 7], False)


def test_cursor_time_is_read_in_utc():
    value = raw({"k": "audits", "p": ["2026-11-30T19:52:03+18:50", 7]})
    assert AUDITS.decode(value) == ([datetime(2026, 11, 30, 1, 2, 3, tzinfo=timezone.utc), 7], False)


def test_cursor_of_another_list_is_refused():
    activity = Keyset("activity", ("-created_at", "-id"), (TIME, ID))
    with pytest.raises(InvalidCursor, match="another list"):
        AUDITS.decode(activity.cursor([AT, 7]))


@pytest.mark.parametrize(
    "value",
    [
        "", "not-a-cursor", "@@@@", "é", raw([1, 2]), raw({"k": "audits", "p": [AT.isoformat()]}),
        raw({"k": "audits", "p": [AT.isoformat(), 0]}), raw({"k": "audits", "p": [AT.isoformat(), 2**63]}),
        raw({"k": "audits", "p": [AT.isoformat(), "7"]}), raw({"k": "audits", "p": [AT.isoformat(), True]}),
        raw({"k": "audits", "p": ["yesterday", 7]}), raw({"k": "audits", "p": ["2026-11-30T01:02:03", 7]}),
        raw({"k": "audits", "p": [5, 7]}), raw({"k": "audits", "p": ["0001-01-01T00:00:00+05:00", 7]}),
        raw({"k": "audits", "p": [AT.isoformat(), 7], "x": 1}),
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
    ],
)
def test_malformed_cursor_is_refused(value):
    with pytest.raises(InvalidCursor):
        AUDITS.decode(value)
