"""``/jobs/{id}/``: the segment page, the operator actions on one job and
verdicts (issue 5 §4; SPEC §1, §5)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from compaction.models import AuditEvent, CompactionJob, JobState, Review
from tests.compaction.desk.conftest import rerun_post

pytestmark = pytest.mark.django_db


def test_segment_page_shows_three_columns_attempts_and_binding(as_user, world):
    html = as_user(world.support).get(reverse("desk-job", args=[world.failed.pk])).content.decode()
    assert "User messages" in html and "Assistant answers" in html and "Summary" in html
    assert html.count('class="msg msg-user') == 10 and html.count('class="msg msg-assistant') == 10
    assert "Question 10: what was the fee on day 10?" in html and "Answer 19:" in html
    assert "conversation-compaction@3" in html and "extractive-v2" in html
    assert "✓ source matches" in html
    assert "tool_calls" in html and "2310 ms" in html and "812 / 143" in html
    assert "What the model returned" in html


def test_segment_page_shows_summary_of_succeeded_job(as_user, world):
    html = as_user(world.support).get(reverse("desk-job", args=[world.succeeded.pk])).content.decode()
    # The label is a link to its source card.
    assert ('Summary of the ten answers: fees were 0.00 to 9.09 EUR '
            '<a class="cite" href="#src-0-assistant" title="show message a-0">[a-0]</a>.') in html
    assert 'id="src-0-assistant"' in html
    assert "generation 1" in html


def test_stale_segment_names_changed_messages_with_a_diff_of_their_revisions(as_user, world):
    from tests.compaction.desk.conftest import ingest
    from tests.factories import conversation_document

    doc = conversation_document(50, scope="default", external_id="conv-a", title="Refund for order 88232")
    doc["messages"][3]["content"] = "Answer 1: the fee was 7.77 EUR, corrected."
    ingest(doc)
    response = as_user(world.support).get(reverse("desk-job", args=[world.succeeded.pk]))
    html = response.content.decode()
    assert response.context["source_valid"] is False
    assert response.context["current_digest"] != world.succeeded.source_digest
    assert "✗ source changed" in html
    (change,) = response.context["changed"]
    assert change.bound_id == "a-1" and change.role == "assistant"
    # A word-level diff: only the words that changed are marked.
    assert change.diff[0] == ("eq", "Answer 1: the fee was ")
    assert ("del", "as of 2026-10-02") in change.diff and ("add", "corrected") in change.diff
    assert ("del", "01") in change.diff and ("add", "77") in change.diff
    assert '<del class="w-del">as of 2026-10-02</del><ins class="w-add">corrected</ins>' in html


def test_job_of_another_scope_is_404(as_user, world):
    url = reverse("desk-job", args=[world.other_failed.pk])
    assert as_user(world.operator).get(url).status_code == 404


def test_operator_sees_rerun_and_grant_forms_support_does_not(as_user, world):
    url = reverse("desk-job", args=[world.failed.pk])
    assert "Re-run this range" in as_user(world.operator).get(url).content.decode()
    support_html = as_user(world.support).get(url).content.decode()
    assert "Re-run this range" not in support_html and "Grant one more attempt" not in support_html
    # A failed job has no summary to judge; a succeeded one has the verdict form.
    assert "No summary to judge" in support_html and "Record verdict" not in support_html
    succeeded = as_user(world.support).get(reverse("desk-job", args=[world.succeeded.pk])).content.decode()
    assert "Record verdict" in succeeded


def test_unsettled_job_polls_and_settled_job_does_not(as_user, world):
    client = as_user(world.support)
    settled = client.get(reverse("desk-job", args=[world.failed.pk])).content.decode()
    assert 'hx-trigger="every 2s"' not in settled
    CompactionJob.objects.filter(pk=world.failed.pk).update(state=JobState.RUNNING)
    running = client.get(reverse("desk-job", args=[world.failed.pk])).content.decode()
    assert 'hx-trigger="every 2s"' in running
    live = client.get(reverse("desk-job", args=[world.failed.pk]) + "?region=live", HTTP_HX_REQUEST="true")
    assert live.content.decode().lstrip().startswith('<section id="live"')


def test_operator_rerun_queues_the_job_and_audits_the_reason(as_user, world, django_capture_on_commit_callbacks):
    client = as_user(world.operator)
    with django_capture_on_commit_callbacks() as callbacks:
        response = rerun_post(client, world.failed)
    assert response.status_code == 302 and response["Location"] == reverse("desk-job", args=[world.failed.pk])
    job = CompactionJob.objects.get(pk=world.failed.pk)
    assert job.state == JobState.PENDING and job.max_attempts == 2  # it had an attempt left
    event = AuditEvent.objects.get(action="job.rerun")
    assert event.actor == world.operator and event.reason == "provider hiccup, retry"
    assert event.before["state"] == "failed" and event.after["state"] == "pending"
    assert len(callbacks) == 1


def test_operator_rerun_over_htmx_returns_the_live_region_with_new_state(as_user, world,
                                                                         django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks():
        response = rerun_post(as_user(world.operator), world.failed, htmx=True)
    html = response.content.decode()
    assert response.status_code == 200 and html.lstrip().startswith('<section id="live"')
    assert "state-pending" in html and 'hx-trigger="every 2s"' in html
    assert 'id="summary" hx-swap-oob="true"' in html


def test_operator_grants_an_attempt_to_an_exhausted_job(as_user, world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks():
        response = rerun_post(as_user(world.operator), world.exhausted, action="desk-job-grant", prefix="grant",
                              reason="prompt fixed upstream")
    assert response.status_code == 302
    job = CompactionJob.objects.get(pk=world.exhausted.pk)
    assert job.state == JobState.PENDING and job.max_attempts == 3
    assert AuditEvent.objects.get(action="job.grant_attempt").reason == "prompt fixed upstream"


@pytest.mark.parametrize("action, prefix", [("desk-job-rerun", "rerun"), ("desk-job-grant", "grant"),
                                            ("desk-job-replan", "replan")])
@pytest.mark.parametrize("role", ["support", "outsider"])
def test_non_operator_posting_an_operator_action_gets_403_and_nothing_happens(as_user, world, action, prefix, role):
    response = rerun_post(as_user(getattr(world, role)), world.failed, action=action, prefix=prefix)
    assert response.status_code == 403
    assert CompactionJob.objects.get(pk=world.failed.pk).state == JobState.FAILED
    assert not AuditEvent.objects.exists()


def test_operator_binds_a_range_whose_source_changed_to_its_current_source(
        as_user, world, django_capture_on_commit_callbacks):
    from tests.compaction.desk.conftest import ingest
    from tests.factories import conversation_document

    client = as_user(world.operator)
    page = reverse("desk-job", args=[world.succeeded.pk])
    assert "Bind this range to its current source" not in client.get(page).content.decode()
    doc = conversation_document(50, scope="default", external_id="conv-a", title="Refund for order 88232")
    doc["messages"][1]["content"] = "Answer 0 was corrected: the fee was 1.00 EUR."
    ingest(doc)
    assert "Bind this range to its current source" in client.get(page).content.decode()
    with django_capture_on_commit_callbacks():
        response = rerun_post(client, world.succeeded, action="desk-job-replan", prefix="replan",
                              reason="answer 0 corrected")
    new = CompactionJob.objects.filter(conversation=world.conversation, from_pair=0).exclude(
        pk=world.succeeded.pk).get()
    assert response.status_code == 302 and response["Location"] == reverse("desk-job", args=[new.pk])
    assert new.state == JobState.PENDING and new.source_changed_at is None
    assert AuditEvent.objects.get(action="job.replan").reason == "answer 0 corrected"
    assert CompactionJob.objects.get(pk=world.succeeded.pk).state == JobState.SUCCEEDED


def test_binding_a_range_needs_a_reason_and_confirmation(as_user, world):
    from tests.compaction.desk.conftest import ingest
    from tests.factories import conversation_document

    doc = conversation_document(50, scope="default", external_id="conv-a", title="Refund for order 88232")
    doc["messages"][1]["content"] = "Answer 0 was corrected: the fee was 1.00 EUR."
    ingest(doc)
    response = rerun_post(as_user(world.operator), world.succeeded, action="desk-job-replan", prefix="replan",
                          reason="", confirm="")
    assert response.status_code == 400
    assert CompactionJob.objects.filter(conversation=world.conversation, from_pair=0).count() == 1
    assert not AuditEvent.objects.exists()


def test_staff_may_rerun(as_user, world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks():
        assert rerun_post(as_user(world.staff), world.failed).status_code == 302
    assert CompactionJob.objects.get(pk=world.failed.pk).state == JobState.PENDING


@pytest.mark.parametrize("reason, confirm, message", [
    ("", "on", "Give a reason"),
    ("   ", "on", "Give a reason"),
    ("good reason", None, "Tick the confirmation"),
])
def test_rerun_needs_a_reason_and_a_confirmation(as_user, world, reason, confirm, message):
    response = rerun_post(as_user(world.operator), world.failed, reason=reason, confirm=confirm)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert CompactionJob.objects.get(pk=world.failed.pk).state == JobState.FAILED
    assert not AuditEvent.objects.exists()


def test_rerun_refused_by_the_service_shows_its_message(as_user, world):
    client = as_user(world.operator)
    response = rerun_post(client, world.succeeded, htmx=True)
    assert "only failed or exhausted jobs can be re-run" in response.content.decode()
    response = rerun_post(client, world.succeeded)
    assert response.status_code == 302
    assert "only failed or exhausted jobs can be re-run" in client.get(response["Location"]).content.decode()


def test_operator_cannot_rerun_a_job_of_another_scope(as_user, world):
    assert rerun_post(as_user(world.operator), world.other_failed).status_code == 404
    assert CompactionJob.objects.get(pk=world.other_failed.pk).state == JobState.FAILED


@pytest.mark.parametrize("role", ["support", "operator", "staff"])
def test_reviewers_record_a_verdict_and_it_is_audited(as_user, world, role):
    user = getattr(world, role)
    response = as_user(user).post(reverse("desk-job-review", args=[world.succeeded.pk]),
                                  {"verdict": "needs_work", "note": "misses the refund date"})
    assert response.status_code == 302
    review = Review.objects.get()
    assert review.reviewer == user and review.verdict == "needs_work" and review.generation is not None
    assert AuditEvent.objects.get(action="review.record").after == {"verdict": "needs_work",
                                                                    "note": "misses the refund date",
                                                                    "generation": review.generation_id}


def test_verdict_over_htmx_returns_the_review_region(as_user, world):
    response = as_user(world.support).post(reverse("desk-job-review", args=[world.succeeded.pk]),
                                           {"verdict": "approved", "note": "matches"}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="review"') and "Verdict recorded." in html


@pytest.mark.parametrize("note", ["", "   "])
def test_verdict_without_a_note_is_refused_and_says_why(as_user, world, note):
    # The note is the verdict's reason: required on the desk as in the API (issue 10).
    response = as_user(world.support).post(reverse("desk-job-review", args=[world.succeeded.pk]),
                                           {"verdict": "approved", "note": note})
    assert response.status_code == 400 and not Review.objects.exists()
    assert "Give a note" in response.content.decode()


def test_verdict_without_a_choice_is_400(as_user, world):
    response = as_user(world.support).post(reverse("desk-job-review", args=[world.succeeded.pk]), {"note": "x"})
    assert response.status_code == 400 and not Review.objects.exists()


def test_user_without_role_cannot_record_a_verdict(as_user, world):
    response = as_user(world.outsider).post(reverse("desk-job-review", args=[world.succeeded.pk]),
                                            {"verdict": "approved"})
    assert response.status_code == 403 and not Review.objects.exists()


def test_verdict_on_another_scopes_job_is_404(as_user, world):
    response = as_user(world.support).post(reverse("desk-job-review", args=[world.other_failed.pk]),
                                           {"verdict": "approved"})
    assert response.status_code == 404 and not Review.objects.exists()
