"""Keyset pagination, shared by the desk lists (issue 5) and the REST lists (issue 6).

A page is the rows after one row's position in a total order, never an
offset: rows inserted while someone walks the pages do not shift a page not
yet read, and reading a page costs the same however deep it is. The cursor
that carries the position is opaque to clients: base64url, without padding,
of compact JSON. What the JSON holds is each list's business (the desk keeps
the ordering values; the REST API also names the list); this module only
packs and unpacks it, and refuses with ``InvalidCursor`` whatever is not
base64url of JSON, so a cursor we did not issue is never guessed at.
"""

from __future__ import annotations

import base64
import binascii
import json


class InvalidCursor(ValueError):
    """A cursor this service did not issue."""


def cursor_pack(payload) -> str:
    raw = json.dumps(payload, separators=(",", ":"), default=str)
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def cursor_unpack(value: str):
    """The JSON value a cursor holds; ``InvalidCursor`` for anything else.
    Strict base64: a character outside the alphabet is refused, not skipped."""
    try:
        padded = value + "=" * (-len(value) % 4)
        raw = base64.b64decode(padded.encode("ascii"), altchars=b"-_", validate=True)
        return json.loads(raw.decode("utf-8"))
    except (UnicodeError, binascii.Error, ValueError) as exc:
        raise InvalidCursor("the cursor is not one this API issued") from exc
