import pytest
from rest_framework.test import APIClient

from tests.factories import make_user, token_for


@pytest.fixture
def integrator(db):
    return make_user("integrator", role="integrator")


@pytest.fixture
def api(integrator):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_for(integrator)}")
    return client
