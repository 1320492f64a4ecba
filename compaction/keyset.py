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
import math

from django.db.models import Q, QuerySet


# Ids are bigints: a cursor, filter or URL naming a larger one names no row.
MAX_ID = 2**63 - 1


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
        return json.loads(raw.decode("utf-8"), parse_constant=_no_constant, parse_float=_finite_float)
    except (UnicodeError, binascii.Error, ValueError) as exc:
        raise InvalidCursor("the cursor is not one this API issued") from exc


def _no_constant(name: str):
    # Python's json reads NaN and ±Infinity; JSON has no such numbers and no
    # cursor we issue holds one (int() of one raises OverflowError, not ValueError).
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):  # e.g. 1e400
        raise ValueError(f"{text} is out of range")
    return number


def rows_after(qs: QuerySet, *, order: list[str], position=None) -> QuerySet:
    """``qs`` in ``order`` (every field descending or every field ascending,
    the last one unique), from the row after ``position`` (the values of the
    ``order`` fields in the last row already read) on."""
    if position is not None:
        names = [o.lstrip("-") for o in order]
        op = "lt" if order[0].startswith("-") else "gt"
        # (a, b) < (va, vb)  ⇔  a < va OR (a = va AND b < vb)
        after = Q()
        for i, name in enumerate(names):
            term = Q(**{f"{name}__{op}": position[i]})
            for j in range(i):
                term &= Q(**{names[j]: position[j]})
            after |= term
        # The redundant bound on the leading column gives the planner an
        # index range to start from instead of filtering an OR row by row.
        qs = qs.filter(Q(**{f"{names[0]}__{op}e": position[0]}), after)
    return qs.order_by(*order)
