"""Administrators manage users, scope grants and prompt versions (SPEC §1)."""

import pytest
from django.test import Client
from django.utils import timezone

from compaction.models import PromptVersion
from tests.factories import admin_client, make_user

pytestmark = pytest.mark.django_db


def test_staff_can_list_scope_grants_and_prompt_versions():
    client, _ = admin_client()
    assert client.get("/admin/conversations/scopegrant/").status_code == 200
    page = client.get("/admin/compaction/promptversion/")
    assert page.status_code == 200 and b"conversation-compaction@3" in page.content


def test_a_frozen_prompt_versions_templates_are_read_only_in_the_admin():
    version = PromptVersion.objects.get(name="conversation-compaction@3")
    PromptVersion.objects.filter(pk=version.pk).update(frozen_at=timezone.now())
    page = admin_client()[0].get(f"/admin/compaction/promptversion/{version.pk}/change/")
    assert page.status_code == 200
    assert b'name="system_template"' not in page.content  # shown, not editable


def test_support_users_cannot_open_the_admin():
    client = Client()
    client.force_login(make_user("sue", role="support"))
    assert client.get("/admin/compaction/promptversion/").status_code == 302
