"""``/activity/``: the activity log and its filters (issue 5 §6)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.compaction.desk.conftest import rerun_post

pytestmark = pytest.mark.django_db


def test_activity_lists_who_did_what_when_and_why(as_user, world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks():
        rerun_post(as_user(world.operator), world.failed, reason="retry after outage")
    html = as_user(world.support).get(reverse("desk-activity")).content.decode()
    assert "olga" in html and "job.rerun" in html and "retry after outage" in html
    assert '<th scope="row">state</th><td class="mono">failed</td>' in html
    assert '<td class="mono">pending</td>' in html
    assert f"job #{world.failed.pk}" in html


def test_activity_shows_only_the_fields_an_action_changed(as_user, world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks():
        rerun_post(as_user(world.operator), world.failed, reason="retry after outage")
    response = as_user(world.support).get(reverse("desk-activity"))
    (event,) = response.context["rows"]
    # A failed job with its attempt left: only its state moves.
    assert event.changes == [{"field": "state", "before": "failed", "after": "pending"}]
    delta = response.content.decode().split('class="delta"')[1].split("</td>\n      </tr>")[0]
    assert "prompt_version" not in delta and "attempts_used" not in delta and "max_attempts" not in delta


def test_activity_shows_a_first_verdict_as_new_fields_and_a_second_as_what_changed(as_user, world):
    from compaction.actions import do_review_record

    do_review_record(job=world.succeeded, reviewer=world.support, verdict="needs_work", note="dates missing")
    do_review_record(job=world.succeeded, reviewer=world.support, verdict="approved", note="dates missing")
    rows = as_user(world.support).get(reverse("desk-activity")).context["rows"]
    second, first = rows
    assert first.changes == [{"field": "note", "before": "—", "after": "dates missing"},
                             {"field": "verdict", "before": "—", "after": "needs_work"}]
    assert second.changes == [{"field": "verdict", "before": "needs_work", "after": "approved"}]


def test_activity_hides_other_scopes_events(as_user, world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks():
        rerun_post(as_user(world.staff), world.other_failed, reason="other-scope-reason")
    assert "other-scope-reason" not in as_user(world.support).get(reverse("desk-activity")).content.decode()
    assert "other-scope-reason" in as_user(world.staff).get(reverse("desk-activity")).content.decode()


def test_activity_filters(as_user, world, django_capture_on_commit_callbacks):
    from compaction.actions import do_review_record

    do_review_record(job=world.succeeded, reviewer=world.support, verdict="approved", note="looks right")
    with django_capture_on_commit_callbacks():
        rerun_post(as_user(world.operator), world.failed, reason="retry")
    client = as_user(world.staff)
    actions = lambda q: [e.action for e in client.get(f"{reverse('desk-activity')}?{q}").context["rows"]]  # noqa: E731
    assert actions("action=review.record") == ["review.record"]
    assert actions("actor=olga") == ["job.rerun"]
    assert actions(f"job={world.failed.pk}") == ["job.rerun"]
    assert sorted(actions(f"conversation={world.conversation.pk}")) == ["job.rerun", "review.record"]
    assert actions("since=2999-01-01") == []
