"""The desk pages and actions for every role (issue 5 §1–§6)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from compaction.models import AuditEvent, CompactionJob, JobState, Review

pytestmark = pytest.mark.django_db


def page_urls(world):
    return {
        "conversations": reverse("desk-conversations"),
        "conversation": reverse("desk-conversation", args=[world.conversation.pk]),
        "job": reverse("desk-job", args=[world.failed.pk]),
        "queue": reverse("desk-queue"),
        "activity": reverse("desk-activity"),
    }


# --- who may open what ----------------------------------------------------------

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


def test_login_page_renders_and_signs_in(client, world):
    assert client.get("/accounts/login/").status_code == 200
    response = client.post("/accounts/login/", {"username": "sue", "password": "pw-for-tests"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/").status_code == 200


def test_logout_is_a_post_that_ends_the_session(as_user, world):
    client = as_user(world.support)
    assert client.post("/accounts/logout/").status_code == 302
    assert client.get("/").status_code == 302
