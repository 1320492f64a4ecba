"""Global admission slots (compaction/admission.py) on PostgreSQL: session
advisory locks, which belong to one database."""

from __future__ import annotations

import psycopg
import pytest
from django.db import connection

from compaction.engine.admission import ADVISORY_KEY, slot_acquire, slot_release, slots_in_use

pytestmark = pytest.mark.django_db


@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="advisory locks are PostgreSQL's")
def test_slots_held_in_another_database_are_not_counted_as_ours():
    params = connection.get_connection_params()
    other = {key: params[key] for key in ("host", "port", "user") if params.get(key)}
    with psycopg.connect(dbname="postgres", autocommit=True, **other) as elsewhere:
        # Another deployment on the same server holding its slot 1.
        elsewhere.execute("SELECT pg_advisory_lock(%s, %s)", [ADVISORY_KEY, 1])
        assert slots_in_use() == 0
        slot = slot_acquire(holder="here", lease_seconds=60)
        assert slot is not None and slots_in_use() == 1
        slot_release(number=slot, holder="here")
        assert slots_in_use() == 0
