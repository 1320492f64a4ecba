"""Keyset pagination: the one cursor scheme of the desk lists and the REST
lists (issues 5, 6 and 10).

A page is the rows after one row's position in a total order, never an
offset: rows inserted while someone walks the pages do not shift a page not
yet read, and reading a page costs the same however deep it is.

A list is a ``Keyset``: a name, an order (every field descending or every
field ascending, the last one unique) and the kind of value each ordering
field holds. Its cursor is opaque to clients: base64url, without padding,
of compact JSON ``{"k": <list>, "p": [<ordering values of one row>]}``, plus
``"r": 1`` for a cursor that reads backwards (a "previous" link). Whatever
is not exactly that — not base64url of JSON, another list's cursor, a time
without its zone, text with a NUL or a lone surrogate, an id out of range,
a number that is not finite — is
refused with ``InvalidCursor``, so a cursor we did not issue is never
guessed at. The desk answers it with a 400 page, the REST API with
``400 invalid_cursor``.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from dataclasses import dataclass
from datetime import datetime, timezone

from django.db.models import Q, QuerySet

# Ids are bigints: a cursor, filter or URL naming a larger one names no row.
MAX_ID = 2**63 - 1

# What an ordering field holds, and so what a cursor's value for it must be.
TIME = "time"  # an ISO 8601 time with its zone, read in UTC
TEXT = "text"
COUNT = "count"  # a whole number from 0
ID = "id"  # a row id, 1..MAX_ID


_UNPAIRED = re.compile("[\ud800-\udfff]")


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


def _read(kind: str, value):
    """One ordering value of a cursor, as the query compares it."""
    if kind == TIME:
        if not isinstance(value, str):
            raise InvalidCursor("the cursor names no time")
        try:
            moment = datetime.fromisoformat(value)
            # In UTC: PostgreSQL refuses some offsets Python accepts.
            moment = moment.astimezone(timezone.utc) if moment.tzinfo else None
        except (ValueError, OverflowError):
            moment = None
        if moment is None:
            raise InvalidCursor("the cursor names no time")
        return moment
    if kind == TEXT:
        # No stored text holds a NUL or a lone surrogate (PostgreSQL cannot
        # store or compare either), so such a cursor names no row.
        if not isinstance(value, str) or "\x00" in value or _UNPAIRED.search(value):
            raise InvalidCursor("the cursor names no text")
        return value
    if not isinstance(value, int) or isinstance(value, bool) or value < (1 if kind == ID else 0) \
            or value > MAX_ID:
        raise InvalidCursor("the cursor names no row")
    return value


def _written(value):
    return value.isoformat() if isinstance(value, datetime) else value


def _value_of(row, name: str):
    value = row
    for part in name.split("__"):
        value = getattr(value, part)
    return value


@dataclass
class Page:
    rows: list
    next_cursor: str | None
    previous_cursor: str | None = None


@dataclass(frozen=True)
class Keyset:
    """One list's order and its cursors."""

    kind: str
    order: tuple[str, ...]
    values: tuple[str, ...]  # TIME, TEXT, COUNT or ID for each ordering field

    def cursor(self, position: list, *, backwards: bool = False) -> str:
        payload = {"k": self.kind, "p": [_written(v) for v in position]}
        if backwards:
            payload["r"] = 1
        return cursor_pack(payload)

    def position(self, row) -> list:
        return [_value_of(row, name.lstrip("-")) for name in self.order]

    def decode(self, cursor: str) -> tuple[list, bool]:
        """The position a cursor names and whether it reads backwards."""
        data = cursor_unpack(cursor)
        if not isinstance(data, dict) or not {"k", "p"} <= set(data) <= {"k", "p", "r"}:
            raise InvalidCursor("the cursor is not one this API issued")
        if data["k"] != self.kind:
            raise InvalidCursor(f"the cursor belongs to another list ({data['k']!r}), not {self.kind!r}")
        if "r" in data and data["r"] != 1:
            raise InvalidCursor("the cursor is not one this API issued")
        position = data["p"]
        if not isinstance(position, list) or len(position) != len(self.order):
            raise InvalidCursor("the cursor names no row")
        return [_read(kind, value) for kind, value in zip(self.values, position)], "r" in data

    def after(self, qs: QuerySet, position: list | None) -> QuerySet:
        """The rows strictly after ``position`` in this list's order."""
        return rows_after(qs, order=list(self.order), position=position)

    def page(self, qs: QuerySet, *, cursor: str | None, size: int) -> Page:
        """The ``size`` rows after (or, for a backwards cursor, before) the
        cursor's row, in this list's order; one row more is read to know
        whether another page follows, never a count."""
        position, backwards = self.decode(cursor) if cursor else (None, False)
        order = [o[1:] if o.startswith("-") else f"-{o}" for o in self.order] if backwards else list(self.order)
        rows = list(rows_after(qs, order=order, position=position)[: size + 1])
        more, rows = len(rows) > size, rows[:size]
        if backwards:
            rows.reverse()
            # The rows after this page's last one: the page read before.
            following = self.cursor(self.position(rows[-1])) if rows else None
            earlier = self.cursor(self.position(rows[0]), backwards=True) if more and rows else None
            return Page(rows, following, earlier)
        following = self.cursor(self.position(rows[-1])) if more else None
        earlier = self.cursor(self.position(rows[0]), backwards=True) if position is not None and rows else None
        return Page(rows, following, earlier)
