"""5xx found while fuzzing the ingest endpoint (issue 6), in
``conversations/documents.py`` (owned by the lead, not changed here).

Strict xfail: each turns into a failure the day the validator refuses the
input with a 400, so the marker is removed then.
"""

import pytest

from tests.api.conftest import client_for
from tests.factories import make_user

pytestmark = pytest.mark.django_db

BUG = "documents.validate_document lets NUL / lone surrogates through outside message content"


@pytest.mark.xfail(strict=True, raises=Exception, reason=BUG)
@pytest.mark.parametrize(
    "body",
    [
        b'{"scope": "s", "id": "c", "metadata": {"a": "\\u0000"}}',
        b'{"scope": "s", "id": "c", "metadata": {"\\u0000": 1}}',
        b'{"scope": "s", "id": "c", "metadata": {"a": "\\ud800"}}',
        b'{"scope": "\\ud800", "id": "c"}',
        b'{"scope": "s", "id": "c", "title": "\\udfff"}',
    ],
)
def test_invalid_text_outside_message_content_is_a_400_not_a_500(body):
    client = client_for(make_user("admin", staff=True))
    response = client.post("/api/v1/ingest/", body, content_type="application/json")
    assert response.status_code == 400
