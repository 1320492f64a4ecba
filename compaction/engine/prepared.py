"""Server-side prepared statements for the engine's hot path on PostgreSQL
(issue 3 "Measured": orchestration overhead per job).

Django's psycopg cursors bind parameters on the client, so PostgreSQL plans
every statement afresh; for the engine's per-job statements planning cost
about as much as running them.

A prepared statement belongs to its connection. When an outage breaks the
connection (issue 12), ``engine.outages.reconnect`` closes it and Django
opens a new one; psycopg keeps its cache of prepared statements per
connection, so each statement is simply prepared again on the new one the
first time it runs there (tests/compaction/engine/test_hot_path.py kills a
connection with ``pg_terminate_backend`` to check).
"""

from __future__ import annotations

import psycopg
from django.db import connection


def execute_prepared(sql: str, params: list):
    """PostgreSQL: run one hot statement as a server-side prepared statement
    and return its first row.

    Django's psycopg cursors bind parameters on the client, so PostgreSQL
    plans the claim and the finish afresh every time — planning those CTEs
    cost about as much as running them. A server-binding cursor with
    ``prepare=True`` makes PostgreSQL plan each once per connection. It runs
    on Django's own connection, so it takes part in any open transaction
    exactly like ``connection.cursor()``; errors are translated the same way.
    (Prepared statements, like the admission slots' session advisory locks,
    need a direct connection or session pooling.)
    """
    connection.ensure_connection()
    connection.validate_no_broken_transaction()
    conn = connection.connection
    if conn.prepare_threshold is None:
        # Django leaves automatic preparing off (None), which also disables
        # ``prepare=True``; a threshold no query reaches keeps automatic
        # preparing off for every other statement on this connection.
        conn.prepare_threshold = 2**31 - 1
    with connection.wrap_database_errors, psycopg.Cursor(conn) as cursor:
        cursor.execute(sql, params, prepare=True)
        return cursor.fetchone()
