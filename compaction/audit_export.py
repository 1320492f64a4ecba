"""The audit export (issues 6, 17): JSONL and CSV lines built by PostgreSQL.

The export streams one line per job from ``COPY (SELECT …) TO STDOUT``:
PostgreSQL writes each record's text and the view passes the bytes on, so
a worker does no per-record work in Python. The lines are byte for byte
those of the Python builder (``compaction.audit``: ``jsonl_lines`` and
``csv_lines`` over ``audit_records``), which stays the path on SQLite (and
where ``COMPACTION_AUDIT_EXPORT_IN_SQL`` is off) and serves the paged JSON;
``tests/compaction/test_audit_export.py`` compares the two.

What makes the bytes equal:

* JSON: keys in the record's order, no spaces (``separators=(",", ":")``),
  text through ``to_json`` (PostgreSQL escapes exactly the characters
  ``json.dumps(..., ensure_ascii=False)`` escapes: ``"``, ``\\`` and the
  controls, as ``\\n``-style or lower-case ``\\u00XX``), times as
  ``compaction.audit.iso`` spells them (microseconds only when not zero, a
  ``Z`` for UTC). A stored JSON list of message ids (``jsonb``, printed
  with spaces) is re-joined without them; its elements (strings) are
  printed by PostgreSQL as JSON already.
* CSV: PostgreSQL's CSV writer quotes a cell exactly when Python's
  ``csv`` module does (a comma, a quote, a CR or LF; quotes doubled) once
  empty text is sent as NULL (which it writes unquoted, as Python writes
  ``""``); cells are neutralised by the rule of ``compaction.csvsafe``
  (``_csv_text``); Python ends a row with CR LF, PostgreSQL with LF, so
  each row's LF is replaced (one row per ``COPY`` message).
* JSONL goes through the CSV writer too, as one column with a quote and a
  delimiter byte that JSON text cannot hold (raw control characters are
  always escaped in it): PostgreSQL then never quotes it and writes the
  line as is.

Which jobs, in what order, is the Django query the view built (scopes,
filters, cursor: ``compaction.api.filters``, ``compaction.keyset``): its SQL
is the inner query here, so the two paths cannot disagree on a filter.

An export reads one snapshot (``REPEATABLE READ, READ ONLY``). Building
the records is nearly all of its cost, so two connections build them: the
export's own the odd rows, a second one, in the same snapshot
(``pg_export_snapshot`` / ``SET TRANSACTION SNAPSHOT``), the even ones,
and the worker passes their lines on in turn; inside a caller's
transaction (whose rows no other connection sees) one connection builds
them all. A client that goes away closes the generator: psycopg cancels
the ``COPY``s, the transaction rolls back, the second connection is
closed, and the connection is free at once.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import closing

import psycopg
from django.conf import settings
from django.db import connection, transaction
from django.db.models import QuerySet
from psycopg import sql as pgsql

from . import audit
from .audit import CSV_COLUMNS
from .bindings.handoff import HANDOFF_KIND
from .csvsafe import FORMULA_TRIGGERS

# The columns the inner (Django) query hands on; ``j`` is its alias.
INNER_COLUMNS = (
    "id", "scope", "conversation_id", "conversation_external_id", "from_pair", "to_pair", "message_ids",
    "source_digest", "current_digest", "model_id", "prompt_version_name", "state", "attempts_used",
    "max_attempts", "last_failure_code", "created_at", "updated_at", "kind", "parent_generation_id",
    "parent_digest", "break_generation_id", "break_pair", "source_changed_at", "latest_review_id",
)

# Bytes of COPY rows handed to the web server at once: large enough that the
# per-chunk cost of the WSGI stack vanishes, small enough that memory stays flat.
CHUNK_BYTES = 256 * 1024
# The first chunk leaves sooner: the client sees the export begin at once.
FIRST_CHUNK_BYTES = 16 * 1024

# The first characters that make a CSV cell a formula, as code points (for ascii()).
_TRIGGER_CODES = ", ".join(str(ord(c)) for c in FORMULA_TRIGGERS)


# --- SQL pieces ------------------------------------------------------------------

def _iso(expr: str, *, quoted: bool = False) -> str:
    """``compaction.audit.iso`` in SQL: ``…T…`` in UTC, ``.ffffff`` only when
    not zero, then ``Z``; ``quoted``: inside the quotes of a JSON string.

    One ``to_char`` writes it all (``\\"`` is a literal quote in its
    pattern); a zone given as an interval is arithmetic, where a zone name
    is looked up at every call."""
    quote = '\\"' if quoted else ""
    return (f"replace(to_char(({expr}) AT TIME ZONE INTERVAL '00:00', "
            f"'{quote}YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"{quote}'), '.000000Z', 'Z')")


def _j_text(expr: str, *, nullable: bool = False) -> str:
    value = f"to_json({expr})::text"
    return f"COALESCE({value}, 'null')" if nullable else value


def _j_int(expr: str, *, nullable: bool = False) -> str:
    return f"COALESCE(({expr})::text, 'null')" if nullable else f"({expr})::text"


def _j_time(expr: str, *, nullable: bool = False) -> str:
    value = _iso(expr, quoted=True)
    return f"COALESCE({value}, 'null')" if nullable else value


# Set aside every \\ and then every \" (as bytes JSON text never holds raw),
# join the strings, put them back.
_BS = "\\"
_IDS_JOIN = (f"replace(replace(replace(replace(replace(substr(t, 3), '{_BS}{_BS}', E'{_BS}x02'), '{_BS}\"', "
             f"E'{_BS}x01'), '\", \"', '\",\"'), E'{_BS}x01', '{_BS}\"'), E'{_BS}x02', '{_BS}{_BS}')")


def _j_ids(expr: str) -> str:
    """A stored JSON list of strings (``jsonb`` prints ``["a", "b"]``)
    written without spaces (``["a","b"]``).

    ``jsonb`` prints ``", "`` between two strings. Inside a string every
    quote is escaped; with the escapes set aside, a ``", "`` read from just
    inside the first string on is always a separator. Without a backslash
    in the text (the common case) there is none to set aside, and reading
    from the start is reading from inside the first string unless that
    string is ``", "`` itself: one ``replace``, a third of the work. (Two
    microseconds a list with escapes; taking the list apart and joining it
    again takes five.)"""
    return (f"(SELECT CASE WHEN strpos(t, '{_BS}') = 0 AND left(t, 5) <> '[\", \"' "
            f"THEN replace(t, '\", \"', '\",\"') ELSE left(t, 2) || {_IDS_JOIN} END "
            f"FROM (SELECT ({expr})::text AS t) ids)")


def _object(pairs: list[tuple[str, str]]) -> str:
    """A JSON object's text from (key, JSON-text expression) pairs, in order."""
    args = []
    for n, (key, value) in enumerate(pairs):
        args.append("'" + ("{" if n == 0 else ",") + f'"{key}":' + "'")
        args.append(value)
    args.append("'}'")
    return "concat(" + ", ".join(args) + ")"


def _list(select: str) -> str:
    """A JSON list's text from a subquery of JSON-text rows."""
    return f"('[' || array_to_string(ARRAY({select}), ',') || ']')"


def _csv_text(expr: str) -> str:
    """``compaction.csvsafe.csv_cell`` of a text: a quote before a formula
    trigger; empty text as NULL (which PostgreSQL writes unquoted)."""
    return f"(CASE WHEN ascii({expr}) IN ({_TRIGGER_CODES}) THEN '''' || {expr} ELSE NULLIF({expr}, '') END)"


def _csv_bool(expr: str) -> str:
    return f"(CASE WHEN {expr} THEN 'true' ELSE 'false' END)"


# --- the record -------------------------------------------------------------------

ATTEMPTS = _list(
    "SELECT " + _object([
        ("number", _j_int("a.number")),
        ("started_at", _j_time("a.started_at")),
        ("finished_at", _j_time("a.finished_at", nullable=True)),
        ("outcome", _j_text("a.outcome")),
        ("failure_code", _j_text("NULLIF(a.failure_code, '')", nullable=True)),
        ("failure_detail", _j_text("a.failure_detail")),
        ("finish_reason", _j_text("NULLIF(a.finish_reason, '')", nullable=True)),
        ("model", _j_text("a.model")),
        ("input_tokens", _j_int("a.input_tokens", nullable=True)),
        ("output_tokens", _j_int("a.output_tokens", nullable=True)),
        ("latency_ms", _j_int("a.latency_ms", nullable=True)),
    ]) + " FROM compaction_attempt a WHERE a.job_id = j.id ORDER BY a.number"
)

# A rolling job's drift findings (SPEC §11 ``drift``): its generation's, in
# the checkers' order; [] without a generation or findings. (Segment jobs: null.)
DRIFT_LIST = _list(
    "SELECT " + _object([
        ("kind", _j_text("f.kind")),
        ("code", _j_text("f.code")),
        ("section", _j_text("f.section", nullable=True)),
        ("line", _j_int("f.line", nullable=True)),
        ("message_ids", _j_ids("f.message_ids")),
    ]) + " FROM compaction_driftfinding f WHERE f.generation_id = g.id ORDER BY f.position"
)
IS_HANDOFF = "j.kind = %(handoff)s"

CHAIN_BREAK = _object([
    ("generation", _j_int("j.break_generation_id", nullable=True)),
    ("pair", _j_int("j.break_pair")),
])

# The review a record shows (SPEC §11 ``review``): the verdict that stands
# on the job's summary. Which review that is has one home,
# ``Review.objects.standing_of_job`` (``models.reviews``); the inner query
# (``compaction.audit.audit_jobs``) carries its id as ``latest_review_id``,
# and this join only reads that review. It gives ``rv.verdict``,
# ``rv.reviewer``, ``rv.note``, ``rv.created_at`` (``rv.verdict`` NULL: none
# stands).
REVIEW_JOIN = """
LEFT JOIN LATERAL (
    SELECT r.verdict, u.username AS reviewer, r.note, r.created_at
    FROM compaction_review r JOIN auth_user u ON u.id = r.reviewer_id
    WHERE r.id = j.latest_review_id
) rv ON true"""

# Lateral joins are nested loops over the inner query: the rows keep its order.
GENERATION_JOIN = """
LEFT JOIN LATERAL (
    SELECT sg.id, sg.number, sg.text, sg.created_at FROM compaction_summarygeneration sg WHERE sg.job_id = j.id
) g ON true"""

# compaction.audit.audit_jobs's source_valid, over the inner query's columns.
SOURCE_VALID = (f"(CASE WHEN {IS_HANDOFF} AND j.source_changed_at IS NOT NULL THEN false "
                "WHEN j.current_digest = j.source_digest THEN true ELSE false END)")

RECORD = _object([
    ("job", _j_int("j.id")),
    ("scope", _j_text("j.scope")),
    ("conversation", _j_int("j.conversation_id")),
    ("conversation_external_id", _j_text("j.conversation_external_id")),
    ("from_pair", _j_int("j.from_pair")),
    ("to_pair", _j_int("j.to_pair")),
    ("message_ids", _j_ids("j.message_ids")),
    ("source_digest", _j_text("j.source_digest")),
    ("current_digest", _j_text("j.current_digest", nullable=True)),
    ("source_valid", f"(CASE WHEN {SOURCE_VALID} THEN 'true' ELSE 'false' END)"),
    ("model", _j_text("j.model_id")),
    ("prompt_version", _j_text("j.prompt_version_name")),
    ("state", _j_text("j.state")),
    ("attempts_used", _j_int("j.attempts_used")),
    ("max_attempts", _j_int("j.max_attempts")),
    ("last_failure_code", _j_text("NULLIF(j.last_failure_code, '')", nullable=True)),
    ("created_at", _j_time("j.created_at")),
    ("updated_at", _j_time("j.updated_at")),
    ("attempts", ATTEMPTS),
    ("generation", "(CASE WHEN g.id IS NULL THEN 'null' ELSE " + _object([
        ("id", _j_int("g.id")),
        ("number", _j_int("g.number")),
        ("text", _j_text("g.text")),
        ("created_at", _j_time("g.created_at")),
    ]) + " END)"),
    ("review", "(CASE WHEN rv.verdict IS NULL THEN 'null' ELSE " + _object([
        ("verdict", _j_text("rv.verdict")),
        ("reviewer", _j_text("rv.reviewer")),
        ("note", _j_text("rv.note")),
        ("created_at", _j_time("rv.created_at")),
    ]) + " END)"),
    ("kind", _j_text("j.kind")),
    ("parent_generation", _j_int("j.parent_generation_id", nullable=True)),
    ("parent_digest", _j_text("NULLIF(j.parent_digest, '')", nullable=True)),
    ("chain_break", f"(CASE WHEN j.break_pair IS NULL THEN 'null' ELSE {CHAIN_BREAK} END)"),
    ("drift", f"(CASE WHEN {IS_HANDOFF} THEN {DRIFT_LIST} ELSE 'null' END)"),
])

# One expression per CSV_COLUMNS entry, in its order.
CSV_CELLS = {
    "job": "j.id",
    "scope": _csv_text("j.scope"),
    "conversation": "j.conversation_id",
    "conversation_external_id": _csv_text("j.conversation_external_id"),
    "from_pair": "j.from_pair",
    "to_pair": "j.to_pair",
    "message_ids": _j_ids("j.message_ids"),
    "source_digest": _csv_text("j.source_digest"),
    "current_digest": _csv_text("j.current_digest"),
    "source_valid": _csv_bool(SOURCE_VALID),
    "model": _csv_text("j.model_id"),
    "prompt_version": _csv_text("j.prompt_version_name"),
    "state": _csv_text("j.state"),
    "attempts_used": "j.attempts_used",
    "max_attempts": "j.max_attempts",
    "last_failure_code": _csv_text("j.last_failure_code"),
    "created_at": _iso("j.created_at"),
    "updated_at": _iso("j.updated_at"),
    "attempts": ATTEMPTS,
    "generation_id": "g.id",
    "generation_number": "g.number",
    "generation_text": _csv_text("g.text"),
    "generation_created_at": _iso("g.created_at"),
    "review_verdict": _csv_text("rv.verdict"),
    "review_reviewer": _csv_text("rv.reviewer"),
    "review_note": _csv_text("rv.note"),
    "review_created_at": _iso("rv.created_at"),
    "kind": _csv_text("j.kind"),
    "parent_generation": "j.parent_generation_id",
    "parent_digest": _csv_text("j.parent_digest"),
    "chain_break": f"(CASE WHEN j.break_pair IS NOT NULL THEN {CHAIN_BREAK} END)",
    "drift": f"(CASE WHEN {IS_HANDOFF} THEN {DRIFT_LIST} END)",
}
assert tuple(CSV_CELLS) == CSV_COLUMNS, "CSV_CELLS must follow CSV_COLUMNS"

_FROM = "FROM ({inner}) j" + GENERATION_JOIN + REVIEW_JOIN

# COPY's CSV writer for JSON lines: one column, quote and delimiter bytes
# that JSON text never holds raw, so no line is ever quoted.
_JSONL_COPY = "COPY ({select}) TO STDOUT (FORMAT csv, QUOTE E'\\x01', DELIMITER E'\\x02')"
_CSV_COPY = "COPY ({select}) TO STDOUT (FORMAT csv)"


def export_sql(queryset: QuerySet, *, fmt: str, half: int | None = None) -> tuple[str, dict]:
    """The ``SELECT`` of ``fmt``'s lines (``jsonl`` or ``csv``) for the jobs
    of ``queryset`` (from ``compaction.audit.audit_jobs``, filtered and
    ordered), one text row per line without its line end; and its
    parameters (named). ``half`` 1 or 0: only the odd or the even rows
    (the first row is row 1), each still built once."""
    if not queryset.query.order_by:
        queryset = queryset.order_by("created_at", "id")
    order = [_column_of(name) for name in queryset.query.order_by]
    if half is not None and not {"j.id", "j.id DESC"} & set(order):
        # The two halves number the same rows alike only in a total order.
        raise ValueError("a half export needs an order that ends ties by id")
    # Ordered, the inner query stays a subquery PostgreSQL runs once per row
    # (never merged into this one, which would repeat its expressions).
    inner, inner_params = queryset.values_list(*INNER_COLUMNS).query.sql_with_params()
    # The inner query's own %s placeholders become named ones, beside ours.
    names = {f"p{n}": value for n, value in enumerate(inner_params)}
    positions = iter(names)
    inner = re.sub(r"%[%s]", lambda m: "%%" if m.group() == "%%" else f"%({next(positions)})s", inner)
    if fmt == "jsonl":
        columns = RECORD
    elif fmt == "csv":
        columns = ", ".join(f"{cell} AS {name}" for name, cell in CSV_CELLS.items())
    else:
        raise ValueError(f"fmt: {fmt!r} is not jsonl or csv")
    where = ""
    if half is not None:
        # Rows numbered in the export's order (the inner query's, so no sort);
        # the other half is skipped before anything of its records is built.
        numbered = ", ".join(column.replace("j.", "i.", 1) for column in order)
        inner = f"SELECT i.*, row_number() OVER (ORDER BY {numbered}) AS rn FROM ({inner}) i"
        where = f" WHERE j.rn %% 2 = {int(half)}"
    sql = f"SELECT {columns} " + _FROM.format(inner=inner) + where + " ORDER BY " + ", ".join(order)
    return sql, {**names, "handoff": HANDOFF_KIND}


def _column_of(name: str) -> str:
    descending = name.startswith("-")
    field = name.lstrip("-")
    field = "id" if field == "pk" else field
    if field not in INNER_COLUMNS:
        raise ValueError(f"the export cannot order by {name!r}")
    return f"j.{field}" + (" DESC" if descending else "")


def export(queryset: QuerySet, *, fmt: str, chunk_size: int) -> Iterator[bytes]:
    """The bytes of ``fmt``'s export (``jsonl`` or ``csv``) of ``queryset``:
    built by PostgreSQL when it is the database, else by ``compaction.audit``
    ``chunk_size`` jobs at a time."""
    if connection.vendor == "postgresql" and settings.COMPACTION_AUDIT_EXPORT_IN_SQL:
        return export_lines(queryset, fmt=fmt)
    records = audit.audit_records_iter(queryset, chunk_size=chunk_size)
    lines = audit.csv_lines(records) if fmt == "csv" else audit.jsonl_lines(records)
    encoded = (line.encode("utf-8") for line in lines)
    # On PostgreSQL one snapshot too (on SQLite a read transaction that long
    # would keep every writer waiting).
    return _in_snapshot(encoded) if connection.vendor == "postgresql" else encoded


def _in_snapshot(chunks: Iterator[bytes]) -> Iterator[bytes]:
    with _snapshot():
        yield from chunks


def export_lines(queryset: QuerySet, *, fmt: str) -> Iterator[bytes]:
    """The export's bytes (the CSV with its header row), a chunk at a time,
    read from one REPEATABLE READ, READ ONLY snapshot. Closing the iterator
    midway cancels the query and ends the transaction."""
    if fmt == "csv":
        yield (",".join(CSV_COLUMNS) + "\r\n").encode()
    statement = _JSONL_COPY if fmt == "jsonl" else _CSV_COPY
    crlf = fmt == "csv"
    with _snapshot() as snapshot, connection.cursor() as cursor:
        raw = cursor.cursor
        # Two connections build every other record each (the server's work
        # is nearly all in building them), both from this transaction's
        # snapshot; inside a caller's transaction (whose rows no other
        # connection sees), or when no second connection is to be had, one.
        other = None
        if not snapshot.nested and settings.COMPACTION_AUDIT_EXPORT_TWO_CONNECTIONS:
            cursor.execute("SELECT pg_export_snapshot()")
            other = _second_connection(cursor.fetchone()[0])
        if other is None:
            sql, params = export_sql(queryset, fmt=fmt)
            with raw.copy(raw.mogrify(statement.format(select=sql), params)) as copy:
                yield from _chunks(copy, crlf=crlf)
            return
        odd, odd_params = export_sql(queryset, fmt=fmt, half=1)
        even, even_params = export_sql(queryset, fmt=fmt, half=0)
        # Closed on the way out: its transaction ends, and its query with it.
        with closing(other), raw.copy(raw.mogrify(statement.format(select=odd), odd_params)) as first, \
                other.cursor().copy(raw.mogrify(statement.format(select=even), even_params)) as second:
            yield from _chunks(_alternate(first, second), crlf=crlf)


def _second_connection(snapshot_id: str) -> psycopg.Connection | None:
    """A connection of its own in the snapshot ``snapshot_id`` (exported by
    the export's transaction): REPEATABLE READ, READ ONLY, the same planner
    settings. None if the server refuses one."""
    try:
        other = psycopg.connect(**connection.get_connection_params(), autocommit=True)
    except psycopg.OperationalError:
        return None
    try:
        # One round trip (statements without parameters, literals quoted).
        other.execute(pgsql.SQL("; ").join([
            pgsql.SQL("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"),
            pgsql.SQL("SET TRANSACTION SNAPSHOT {}").format(snapshot_id), _planner_settings()]))
    except BaseException:
        other.close()
        raise
    return other


def _alternate(first, second) -> Iterator[bytes]:
    """Rows 1, 3, 5, … from ``first`` and 2, 4, 6, … from ``second``, in
    turn; each read to its end."""
    rows = iter(second)
    for row in first:
        yield row
        if (row := next(rows, None)) is not None:
            yield row
    yield from rows  # nothing: the halves of one snapshot's rows


# How the export's query is planned, for its transaction only: rows in the
# export's order straight from an index, never a sort of the whole result
# (the first byte would wait for it, and the server's memory grow with it);
# no JIT compilation before the first row; no parallel workers competing
# with the worker that sends the bytes on a small machine.
PLANNER = {"enable_sort": "off", "jit": "off", "max_parallel_workers_per_gather": "0"}


def _planner_settings() -> pgsql.Composed:
    """The one statement that gives the current transaction (only) the
    ``PLANNER`` settings; without parameters (literals quoted), so it can
    join other statements in one round trip."""
    return pgsql.SQL("SELECT {}").format(pgsql.SQL(", ").join(
        pgsql.SQL("set_config({}, {}, true)").format(name, value) for name, value in PLANNER.items()))


class _snapshot:
    """A REPEATABLE READ, READ ONLY transaction: every row the export reads
    is from the moment it began. Inside a transaction already (a caller's,
    or a test's), that one's snapshot is the export's."""

    def __enter__(self):
        self.atomic = transaction.atomic()
        self.nested = connection.in_atomic_block
        self.atomic.__enter__()
        with connection.cursor() as cursor:
            if not self.nested:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            cursor.execute(_planner_settings().as_string(cursor.cursor))
        return self

    def __exit__(self, *exc):
        if self.nested and exc[0] is None:
            # A savepoint released keeps its settings: give the caller's back.
            with connection.cursor() as cursor:
                for name in PLANNER:
                    cursor.execute(f"RESET {name}")
        return self.atomic.__exit__(*exc)


def _chunks(copy, *, crlf: bool = False) -> Iterator[bytes]:
    """COPY's rows, a chunk of about ``CHUNK_BYTES`` at a time (the first
    smaller, so the first byte leaves early). COPY ends each row with LF;
    with ``crlf`` (CSV: RFC 4180) each row's LF is cut and the rows end
    with CRLF instead. (A line break inside a quoted field stays as it is.)"""
    cut, end = (-1, b"\r\n") if crlf else (None, b"")  # row[:None]: the whole row
    parts: list = []
    size, limit = 0, min(FIRST_CHUNK_BYTES, CHUNK_BYTES)
    for row in copy:
        parts.append(row[:cut])
        size += len(row)
        if size >= limit:
            parts.append(b"")
            yield end.join(parts)
            parts, size, limit = [], 0, CHUNK_BYTES
    if parts:
        parts.append(b"")
        yield end.join(parts)
