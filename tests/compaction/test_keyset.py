"""The opaque cursor both the desk and the REST lists use: base64url of JSON,
and nothing else is taken for one."""

import pytest

from compaction.keyset import InvalidCursor, cursor_pack, cursor_unpack


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
    import base64

    cursor = base64.urlsafe_b64encode(json_text.encode()).decode().rstrip("=")
    with pytest.raises(InvalidCursor):
        cursor_unpack(cursor)
