"""``grant_access`` (SPEC §1, §2): a user, roles, scopes and a token."""

import pytest

from conversations.models import ScopeGrant, TokenScope
from tests.factories import run_command as run

pytestmark = pytest.mark.django_db


def test_grant_access_creates_user_role_scopes_and_a_scoped_token():
    out, _, failed = run("grant_access", "bot", "--role", "integrator", "--scope", "a", "--scope", "b",
                         "--token", "--token-scope", "a")
    assert failed is None and "token: " in out
    assert set(ScopeGrant.objects.filter(user__username="bot").values_list("scope", flat=True)) == {"a", "b"}
    assert TokenScope.objects.get(token__user__username="bot").scopes == ["a"]


def test_grant_access_refuses_a_token_scope_the_user_lacks():
    _, _, failed = run("grant_access", "bot", "--scope", "a", "--token", "--token-scope", "z")
    assert failed is not None and "not granted" in str(failed)


def test_a_weak_password_is_refused_by_djangos_validators_and_nothing_is_written(db):
    from django.contrib.auth.models import User

    out, err, failure = run("grant_access", "newbie", "--role", "support", "--password", "12345678")
    assert failure is not None and "--password:" in str(failure) and "too common" in str(failure)
    assert not User.objects.filter(username="newbie").exists()
