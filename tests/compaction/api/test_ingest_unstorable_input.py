"""Inputs that fuzzing the ingest endpoint once turned into 5xx: text and
times the database cannot store must be refused with a 400 naming the field."""

import pytest

from tests.compaction.api.conftest import client_for
from tests.factories import make_user

pytestmark = pytest.mark.django_db

@pytest.mark.parametrize(
    "body",
    [
        b'{"scope": "s", "id": "c", "metadata": {"a": "\\u0000"}}',
        b'{"scope": "s", "id": "c", "metadata": {"\\u0000": 1}}',
        b'{"scope": "s", "id": "c", "metadata": {"a": "\\ud800"}}',
        b'{"scope": "\\ud800", "id": "c"}',
        b'{"scope": "s", "id": "c", "title": "\\udfff"}',
        b'{"scope": "s", "id": "c", "runs": [{"id": "\\ud948", "status": "completed"}]}',
    ],
)
def test_text_or_time_postgresql_cannot_store_is_a_400_not_a_500(body):
    client = client_for(make_user("admin", staff=True))
    response = client.post("/api/v1/ingest/", body, content_type="application/json")
    assert response.status_code == 400 and response.json()["code"] == "invalid_document"


def test_a_time_before_year_1_in_utc_is_refused_not_stored():
    # Stored as 0000-12-31T19:00Z (a BC date), which Python cannot read back:
    # every later read of the conversation would fail.
    client = client_for(make_user("admin", staff=True))
    body = (b'{"scope": "s", "id": "c", "runs": [{"id": "r", "status": "completed", '
            b'"created_at": "0001-01-01T00:00:00+05:00"}]}')
    response = client.post("/api/v1/ingest/", body, content_type="application/json")
    assert response.status_code == 400


def test_a_time_with_an_offset_the_database_refuses_is_stored_as_its_utc_instant():
    # PostgreSQL refuses offsets beyond +-15:59; the instant itself is fine.
    from conversations.models import Run

    client = client_for(make_user("admin", staff=True))
    body = (b'{"scope": "s", "id": "c", "runs": [{"id": "r", "status": "completed", '
            b'"created_at": "2026-01-01T00:00:00+18:50"}]}')
    assert client.post("/api/v1/ingest/", body, content_type="application/json").status_code == 201
    assert Run.objects.get().created_at.isoformat() == "2025-12-31T05:10:00+00:00"


@pytest.mark.parametrize(
    "body",
    [
        # Python's json module reads these, PostgreSQL's jsonb does not.
        b'{"scope": "s", "id": "c", "metadata": {"a": NaN}}',
        b'{"scope": "s", "id": "c", "metadata": {"a": -Infinity}}',
        b'{"scope": "s", "id": "c", "metadata": {"a": 1e400}}',
        # Python refuses to read these with errors other than a decode error.
        b'{"scope": "s", "id": "c", "metadata": {"a": ' + b"1" * 5000 + b"}}",
        b'{"scope": "s", "id": "c", "metadata": {"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}",
    ],
)
def test_numbers_and_nesting_json_cannot_carry_are_a_400_not_a_500(body):
    from conversations.models import Conversation

    client = client_for(make_user("admin", staff=True))
    response = client.post("/api/v1/ingest/", body, content_type="application/json")
    assert response.status_code == 400 and response.json()["code"] == "invalid_document"
    assert not Conversation.objects.exists()
