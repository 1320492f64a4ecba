"""Who may open which desk page and post which action (SPEC §1; issue 5 §1)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from compaction.models import CompactionJob, JobState
from tests.compaction.desk.conftest import page_urls, rerun_post

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("name", ["conversations", "conversation", "job", "queue", "activity"])
def test_anonymous_is_sent_to_login_from_every_page(client, world, name):
    url = page_urls(world)[name]
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=")


@pytest.mark.parametrize("name", ["conversations", "conversation", "job", "queue", "activity"])
@pytest.mark.parametrize("role", ["support", "operator", "staff"])
def test_every_role_can_read_every_page(as_user, world, name, role):
    response = as_user(getattr(world, role)).get(page_urls(world)[name])
    assert response.status_code == 200


@pytest.mark.parametrize("name", ["conversations", "conversation", "job", "queue", "activity"])
def test_user_without_a_role_gets_403(as_user, world, name):
    assert as_user(world.outsider).get(page_urls(world)[name]).status_code == 403


@pytest.mark.parametrize("name", ["conversations", "conversation", "job", "queue", "activity"])
def test_an_integrator_works_through_the_api_not_the_desk(as_user, world, name):
    from tests.factories import make_user

    integrator = make_user("ivan", role="integrator")
    assert as_user(integrator).get(page_urls(world)[name]).status_code == 403


def test_login_page_renders_and_signs_in(client, world):
    assert client.get("/accounts/login/").status_code == 200
    response = client.post("/accounts/login/", {"username": "sue", "password": "pw-for-tests"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/").status_code == 200


def test_logout_is_a_post_that_ends_the_session(as_user, world):
    client = as_user(world.support)
    assert client.post("/accounts/logout/").status_code == 302
    assert client.get("/").status_code == 302


def test_anonymous_action_redirects_to_login_and_changes_nothing(client, world):
    response = rerun_post(client, world.failed)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert CompactionJob.objects.get(pk=world.failed.pk).state == JobState.FAILED


def test_csrf_is_enforced_on_actions(world):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(world.operator)
    assert rerun_post(client, world.failed).status_code == 403
    assert CompactionJob.objects.get(pk=world.failed.pk).state == JobState.FAILED
    page = client.get(reverse("desk-job", args=[world.failed.pk]))
    token = page.cookies["csrftoken"].value
    assert f'"X-CSRFToken": "' in page.content.decode()  # HTMX requests carry it from <body hx-headers>
    response = client.post(reverse("desk-job-review", args=[world.failed.pk]), {"verdict": "approved"},
                           HTTP_X_CSRFTOKEN=token, HTTP_HX_REQUEST="true")
    assert response.status_code == 200


def test_forbidden_page_explains_the_role(as_user, world):
    response = as_user(world.support).post(reverse("desk-job-rerun", args=[world.failed.pk]),
                                           {"rerun-reason": "x", "rerun-confirm": "on"})
    assert response.status_code == 403 and "Your role does not allow this" in response.content.decode()
