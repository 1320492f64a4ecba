"""5xx found while fuzzing the ingest endpoint (issue 6), in
``conversations/documents.py`` (owned by the lead, not changed here).

Strict xfail: each turns into a failure the day the validator refuses the
input with a 400, so the marker is removed then.
"""

import pytest

from tests.api.conftest import client_for
from tests.factories import make_user

pytestmark = pytest.mark.django_db

BUG = ("documents.validate_document lets NUL / lone surrogates through outside message content, "
       "and timestamps PostgreSQL cannot store")


@pytest.mark.xfail(strict=True, raises=Exception, reason=BUG)
@pytest.mark.parametrize(
    "body",
    [
        b'{"scope": "s", "id": "c", "metadata": {"a": "\\u0000"}}',
        b'{"scope": "s", "id": "c", "metadata": {"\\u0000": 1}}',
        b'{"scope": "s", "id": "c", "metadata": {"a": "\\ud800"}}',
        b'{"scope": "\\ud800", "id": "c"}',
        b'{"scope": "s", "id": "c", "title": "\\udfff"}',
        b'{"scope": "s", "id": "c", "runs": [{"id": "\\ud948", "status": "completed"}]}',
        # PostgreSQL refuses offsets beyond +-15:59.
        b'{"scope": "s", "id": "c", "runs": [{"id": "r", "status": "completed", '
        b'"created_at": "2026-01-01T00:00:00+18:50"}]}',
    ],
)
def test_text_or_time_postgresql_cannot_store_is_a_400_not_a_500(body):
    client = client_for(make_user("admin", staff=True))
    response = client.post("/api/v1/ingest/", body, content_type="application/json")
    assert response.status_code == 400


@pytest.mark.xfail(strict=True, raises=Exception, reason=BUG)
def test_a_time_before_year_1_in_utc_is_refused_not_stored():
    # Stored as 0000-12-31T19:00Z (a BC date), which Python cannot read back:
    # every later read of the conversation would fail.
    client = client_for(make_user("admin", staff=True))
    body = (b'{"scope": "s", "id": "c", "runs": [{"id": "r", "status": "completed", '
            b'"created_at": "0001-01-01T00:00:00+05:00"}]}')
    response = client.post("/api/v1/ingest/", body, content_type="application/json")
    assert response.status_code == 400
