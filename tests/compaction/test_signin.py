"""Sign-in throttling (issue 12 item 5; ``compaction/signin.py``, django-axes):
wrong passwords lock an account, and an address, after
``AXES_FAILURE_LIMIT``; the right password is then refused too; an
operator's command lifts the lock; Django's password validators are on."""

from __future__ import annotations

import pytest
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.test import Client

from compaction.signin import forwarded_client
from tests.factories import make_user

pytestmark = pytest.mark.django_db

LIMIT = 5


@pytest.fixture(autouse=True)
def _limit(settings):
    settings.AXES_FAILURE_LIMIT = LIMIT


def sign_in(username, password, address="10.0.0.1"):
    return Client(REMOTE_ADDR=address).post("/accounts/login/", {"username": username, "password": password})


def signed_in(response) -> bool:
    return response.status_code == 302 and response["Location"] == "/"


def test_an_account_is_locked_after_the_limit_from_any_address_and_the_right_password_is_refused():
    make_user("admin", staff=True, password="the-right-one")
    answers = [sign_in("admin", f"guess-{i}", address=f"10.0.1.{i}").status_code for i in range(LIMIT)]
    assert answers == [200] * (LIMIT - 1) + [429]  # the form with its error, then the lock at the limit
    locked = sign_in("admin", "the-right-one", address="10.0.9.9")
    assert locked.status_code == 429 and "Sign-in locked" in locked.content.decode()
    assert not signed_in(locked)
    # Another account is not affected.
    make_user("sue", password="sues-password")
    assert signed_in(sign_in("sue", "sues-password", address="10.0.9.9"))


def test_an_address_is_locked_after_the_limit_whatever_accounts_it_tries():
    make_user("olga", password="olgas-password")
    for i in range(LIMIT):
        sign_in(f"user-{i}", "wrong", address="10.0.2.2")
    assert sign_in("olga", "olgas-password", address="10.0.2.2").status_code == 429
    assert signed_in(sign_in("olga", "olgas-password", address="10.0.3.3"))


def test_fewer_failures_than_the_limit_do_not_lock_and_a_success_clears_them():
    make_user("admin", staff=True, password="the-right-one")
    for _ in range(LIMIT - 1):
        sign_in("admin", "wrong")
    assert signed_in(sign_in("admin", "the-right-one"))
    for _ in range(LIMIT - 1):
        sign_in("admin", "wrong")
    assert signed_in(sign_in("admin", "the-right-one"))


@pytest.mark.parametrize("command, argument", [("axes_reset_username", "admin"), ("axes_reset", None)])
def test_an_operator_lifts_the_lock_with_the_axes_commands(command, argument):
    make_user("admin", staff=True, password="the-right-one")
    for i in range(LIMIT):
        sign_in("admin", "wrong", address=f"10.0.4.{i}")
    assert sign_in("admin", "the-right-one").status_code == 429
    call_command(command, *([argument] if argument else []), stdout=open("/dev/null", "w"))
    assert signed_in(sign_in("admin", "the-right-one"))


def test_an_address_lock_is_lifted_with_axes_reset_ip():
    make_user("olga", password="olgas-password")
    for i in range(LIMIT):
        sign_in(f"user-{i}", "wrong", address="10.0.5.5")
    assert sign_in("olga", "olgas-password", address="10.0.5.5").status_code == 429
    call_command("axes_reset_ip", "10.0.5.5", stdout=open("/dev/null", "w"))
    assert signed_in(sign_in("olga", "olgas-password", address="10.0.5.5"))


def test_the_lock_ends_by_itself_after_the_cool_off(settings):
    from datetime import timedelta

    from axes.models import AccessAttempt

    make_user("admin", staff=True, password="the-right-one")
    for i in range(LIMIT):
        sign_in("admin", "wrong", address=f"10.0.6.{i}")
    assert sign_in("admin", "the-right-one").status_code == 429
    for attempt in AccessAttempt.objects.all():  # as if the cool-off (an hour) had passed
        attempt.attempt_time -= timedelta(hours=1, minutes=1)
        attempt.save()
    assert signed_in(sign_in("admin", "the-right-one"))


def test_the_admin_sign_in_is_throttled_too():
    make_user("admin", staff=True, password="the-right-one")
    for i in range(LIMIT):
        Client(REMOTE_ADDR=f"10.0.7.{i}").post("/admin/login/", {"username": "admin", "password": "wrong"})
    response = Client(REMOTE_ADDR="10.0.7.99").post("/admin/login/", {"username": "admin", "password": "the-right-one"})
    assert response.status_code == 429


def test_a_login_without_a_request_is_not_throttled_and_still_checks_the_password():
    make_user("admin", staff=True, password="the-right-one")
    client = Client()
    assert client.login(username="admin", password="the-right-one")
    assert not client.login(username="admin", password="wrong")


def test_behind_trusted_proxies_the_address_is_the_one_the_outermost_proxy_saw():
    assert forwarded_client("10.1.1.1", "", 0) == "10.1.1.1"
    assert forwarded_client("10.1.1.1", "6.6.6.6, 203.0.113.7", 1) == "203.0.113.7"  # a client may forge the left
    assert forwarded_client("10.1.1.1", "6.6.6.6, 203.0.113.7, 10.1.1.2", 2) == "203.0.113.7"
    assert forwarded_client("10.1.1.1", "", 1) == "10.1.1.1"


def test_djangos_password_validators_are_on():
    user = make_user("sue-reviewer", password="sues-password")
    for weak in ("short", "password123", "12345678901", "sue-reviewer1"):
        with pytest.raises(ValidationError):
            validate_password(weak, user=user)
    validate_password("correct horse battery staple 42", user=user)
