"""Keyset pagination ordered by time (issue 6).

A page is the rows after a position ``(created_at, id)``, so rows inserted
while a client walks the pages never shift a page it has not read yet and
never make it see a row twice: the cursor names a row, not an offset. The
cursor is opaque to clients (base64 of a small JSON object) and names the
list it belongs to; anything that does not decode to a position of that
list is refused with ``400 invalid_cursor``, never silently ignored.
"""

from __future__ import annotations

from datetime import datetime, timezone

from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param

from .keyset import InvalidCursor, cursor_pack, cursor_unpack, rows_after
from .rest import ApiError

MAX_ID = 2**63 - 1


def cursor_encode(*, kind: str, created_at: datetime, pk: int) -> str:
    return cursor_pack({"k": kind, "t": created_at.isoformat(), "i": pk})


def cursor_decode(value: str, *, kind: str) -> tuple[datetime, int]:
    """The position a cursor names; ``InvalidCursor`` for anything else."""
    data = cursor_unpack(value)
    if not isinstance(data, dict) or set(data) != {"k", "t", "i"}:
        raise InvalidCursor("the cursor is not one this API issued")
    if data["k"] != kind:
        raise InvalidCursor(f"the cursor belongs to another list ({data['k']!r}), not {kind!r}")
    pk = data["i"]
    if not isinstance(pk, int) or isinstance(pk, bool) or not 1 <= pk <= MAX_ID:
        raise InvalidCursor("the cursor names no row")
    try:
        created_at = datetime.fromisoformat(data["t"]) if isinstance(data["t"], str) else None
        # In UTC: PostgreSQL refuses some offsets Python accepts.
        created_at = created_at.astimezone(timezone.utc) if created_at and created_at.tzinfo else None
    except (ValueError, OverflowError):
        created_at = None
    if created_at is None:
        raise InvalidCursor("the cursor names no time")
    return created_at, pk


class TimeCursorPagination:
    """Pages of ``page_size`` rows ordered by ``(created_at, id)``,
    ascending (an export read from the oldest) or descending (a log read
    from the newest)."""

    cursor_query_param = "cursor"
    page_size_query_param = "page_size"
    query_params = (cursor_query_param, page_size_query_param)

    def __init__(self, *, kind: str, descending: bool = False, page_size: int = 50, max_page_size: int = 500):
        self.kind = kind
        self.descending = descending
        self.page_size = page_size
        self.max_page_size = max_page_size
        self.next_cursor: str | None = None
        self.request = None

    def _page_size(self, request) -> int:
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        try:
            size = int(raw)
        except ValueError:
            size = 0
        if not 1 <= size <= self.max_page_size:
            message = f"page_size must be an integer from 1 to {self.max_page_size}"
            raise ApiError(code="invalid_filter", message=f"page_size: {message}", errors={"page_size": [message]})
        return size

    def position(self, request) -> tuple[datetime, int] | None:
        raw = request.query_params.get(self.cursor_query_param)
        if raw is None:
            return None
        try:
            return cursor_decode(raw, kind=self.kind)
        except InvalidCursor as exc:
            raise ApiError(code="invalid_cursor", message=f"cursor: {exc}", errors={"cursor": [str(exc)]}) from None

    def after(self, queryset, position: tuple[datetime, int] | None):
        """The rows strictly after ``position`` in this list's order."""
        order = ["-created_at", "-id"] if self.descending else ["created_at", "id"]
        return rows_after(queryset, order=order, position=position)

    def paginate(self, queryset, request) -> list:
        self.request = request
        size = self._page_size(request)
        rows = list(self.after(queryset, self.position(request))[: size + 1])
        more, rows = len(rows) > size, rows[:size]
        self.next_cursor = (
            cursor_encode(kind=self.kind, created_at=rows[-1].created_at, pk=rows[-1].pk) if more else None
        )
        return rows

    def next_link(self) -> str | None:
        if self.next_cursor is None:
            return None
        url = self.request.build_absolute_uri()
        return replace_query_param(url, self.cursor_query_param, self.next_cursor)

    def response(self, results: list) -> Response:
        return Response({"next": self.next_link(), "next_cursor": self.next_cursor, "results": results})
