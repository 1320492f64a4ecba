"""The desk pages and actions for every role (issue 5 §1–§6)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from compaction.keyset import cursor_pack
from compaction.models import AuditEvent, CompactionJob, JobState, Review
from compaction.selectors import ACTIVITY, CONVERSATION_SORTS, QUEUE

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


# --- conversations page -----------------------------------------------------------

def test_conversations_page_lists_rows_with_scope_pairs_and_state_bar(as_user, world):
    html = as_user(world.staff).get("/").content.decode()
    assert "conv-a" in html and "Refund for order 88232" in html
    assert "1 succeeded" in html and "1 failed" in html and "1 exhausted" in html
    assert 'class="bar-part bg-failed"' in html


def test_conversations_page_shows_only_the_users_scopes(as_user, world):
    html = as_user(world.support).get("/").content.decode()
    assert "conv-a" in html
    assert "conv-secret" not in html and "Other tenant secret" not in html


@pytest.mark.parametrize(
    "query, present, absent",
    [
        ("q=conv-a", "conv-a", "conv-secret"),
        ("q=tenant", "conv-secret", "conv-a"),
        ("scope=other", "conv-secret", "conv-a"),
        ("has=exhausted", "conv-a", "conv-secret"),
        ("has=stale", None, "conv-a"),
    ],
)
def test_conversations_filters(as_user, world, query, present, absent):
    html = as_user(world.staff).get(f"/?{query}").content.decode()
    if present:
        assert present in html
    assert f">{absent}<" not in html


def test_verdict_filter_uses_the_latest_verdict_of_each_job(as_user, world):
    from compaction.actions import do_review_record

    do_review_record(job=world.succeeded, reviewer=world.support, verdict="needs_work", note="too vague")
    client = as_user(world.staff)
    assert ">conv-a<" in client.get("/?verdict=needs_work").content.decode()
    do_review_record(job=world.succeeded, reviewer=world.support, verdict="approved", note="fixed by re-read")
    assert ">conv-a<" not in client.get("/?verdict=needs_work").content.decode()
    assert ">conv-a<" in client.get("/?verdict=approved").content.decode()


def test_updated_since_filter(as_user, world):
    client = as_user(world.staff)
    assert ">conv-a<" in client.get("/?updated_since=2000-01-01").content.decode()
    assert ">conv-a<" not in client.get("/?updated_since=2999-01-01").content.decode()


def test_bad_filter_value_is_a_400_naming_the_field(as_user, world):
    response = as_user(world.staff).get("/?has=everything")
    assert response.status_code == 400
    assert "has:" in response.content.decode()


def test_keyset_pagination_walks_every_row_once_without_count(as_user, world, django_assert_max_num_queries):
    from conversations.models import Conversation

    Conversation.objects.bulk_create(
        [Conversation(scope="default", external_id=f"bulk-{i:03d}", title=f"bulk {i}") for i in range(120)]
    )
    client = as_user(world.staff)
    seen, url = [], "/?sort=external_id"
    while url:
        response = client.get(url)
        rows = response.context["rows"]
        seen += [c.external_id for c in rows]
        url = response.context["next_url"]
    assert len(seen) == len(set(seen)) == 122
    assert seen == sorted(seen)


def test_bad_cursor_is_a_400(as_user, world):
    assert as_user(world.staff).get("/?cursor=!!notacursor").status_code == 400


@pytest.mark.parametrize("sort", ["pairs", "external_id", "oldest"])
def test_a_cursor_with_an_infinite_number_is_a_400_for_every_sort(as_user, world, sort):
    kind = CONVERSATION_SORTS[sort].kind
    for position in ([float("inf"), 1], ["x", float("inf")]):  # json writes them as Infinity
        cursor = cursor_pack({"k": kind, "p": position})
        assert as_user(world.staff).get(f"/?sort={sort}&cursor={cursor}").status_code == 400


LIST_PAGES = {"conversations": CONVERSATION_SORTS["recent"].kind, "queue": QUEUE.kind, "activity": ACTIVITY.kind}
_MOMENT = "2026-01-01T00:00:00+00:00"


@pytest.mark.parametrize("name", LIST_PAGES)
@pytest.mark.parametrize("position", [
    "!!notacursor", [1], "not json",  # garbage, a bare list, text that is no cursor
    ["", 5], [None, 5], ["2026-01-01T00:00:00", 5],  # no time, and a time without its zone
    # [time, Infinity], [time, 1e400] (a float that overflows to infinity), [NaN, 5]: int() of an
    # infinite float raises OverflowError, not ValueError, and answered 500
    [_MOMENT, float("inf")], [_MOMENT, 1e400], [float("nan"), 5],
])
def test_every_list_page_answers_a_malformed_cursor_with_400(as_user, world, name, position):
    if position in ("!!notacursor", "not json"):
        cursor = position if position.startswith("!") else cursor_pack(position)
    else:
        cursor = cursor_pack({"k": LIST_PAGES[name], "p": position})
    assert as_user(world.staff).get(f"{page_urls(world)[name]}?cursor={cursor}").status_code == 400


@pytest.mark.parametrize("name", LIST_PAGES)
def test_every_list_page_answers_a_bad_filter_with_400_naming_the_field(as_user, world, name):
    response = as_user(world.staff).get(f"{page_urls(world)[name]}?scope=no-such-scope")
    assert response.status_code == 400
    assert "scope:" in response.content.decode()


def test_htmx_request_renders_only_the_results_partial(as_user, world):
    response = as_user(world.staff).get("/?q=conv", HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="results"')
    assert "<html" not in html


@pytest.mark.parametrize("name", LIST_PAGES)
def test_every_list_page_swaps_its_results_with_the_pager_inside(as_user, world, name):
    html = as_user(world.staff).get(page_urls(world)[name], HTTP_HX_REQUEST="true").content.decode()
    assert html.lstrip().startswith('<section id="results"') and "<html" not in html
    assert '<nav class="pager"' in html


def test_pager_links_keep_the_filters_and_work_with_and_without_htmx(as_user, world):
    from conversations.models import Conversation

    Conversation.objects.bulk_create(
        [Conversation(scope="default", external_id=f"bulk-{i:03d}", title=f"bulk {i}") for i in range(60)]
    )
    client = as_user(world.staff)
    first = client.get("/?q=bulk&sort=external_id")
    next_url = first.context["next_url"]
    assert next_url.startswith("?q=bulk&sort=external_id&cursor=")
    html = first.content.decode().replace("&amp;", "&")
    assert (f'<a href="{next_url}" hx-get="{next_url}" hx-target="#results" hx-swap="outerHTML" '
            'hx-push-url="true">Next page »</a>') in html
    assert "« First page" not in html

    second = client.get(f"/{next_url}", HTTP_HX_REQUEST="true").content.decode().replace("&amp;", "&")
    assert ('<a href="?q=bulk&sort=external_id" hx-get="?q=bulk&sort=external_id" hx-target="#results" '
            'hx-swap="outerHTML" hx-push-url="true">« First page</a>') in second
    assert "Next page »" not in second


# --- conversation page ---------------------------------------------------------------

def test_conversation_page_shows_bands_tail_segments_and_generation_chain(as_user, world):
    html = as_user(world.support).get(reverse("desk-conversation", args=[world.conversation.pk])).content.decode()
    assert html.count('class="band bg-') == 3
    assert "raw tail · 20 pairs" in html
    assert f'href="/jobs/{world.failed.pk}/"' in html
    assert "<svg" in html and "generation 1:" in html


def test_conversation_of_another_scope_is_404(as_user, world):
    url = reverse("desk-conversation", args=[world.other_conversation.pk])
    assert as_user(world.support).get(url).status_code == 404
    assert as_user(world.staff).get(url).status_code == 200


def test_succeeded_job_whose_source_changed_is_shown_stale(as_user, world):
    from tests.desk.conftest import ingest
    from tests.factories import conversation_document

    doc = conversation_document(50, scope="default", external_id="conv-a", title="Refund for order 88232")
    doc["messages"][1]["content"] = "Answer 0 was corrected: the fee was 1.00 EUR."
    ingest(doc)
    response = as_user(world.support).get(reverse("desk-conversation", args=[world.conversation.pk]))
    first = response.context["segments"][0]
    assert first.job.pk == world.succeeded.pk and first.state == "stale" and first.source_valid is False


# --- segment page ------------------------------------------------------------------------

def test_segment_page_shows_three_columns_attempts_and_binding(as_user, world):
    html = as_user(world.support).get(reverse("desk-job", args=[world.failed.pk])).content.decode()
    assert "User messages" in html and "Assistant answers" in html and "Summary" in html
    assert html.count('class="msg msg-user') == 10 and html.count('class="msg msg-assistant') == 10
    assert "Question 10: what was the fee on day 10?" in html and "Answer 19:" in html
    assert "conversation-compaction@3" in html and "extractive-v1" in html
    assert "✓ source matches" in html
    assert "tool_calls" in html and "2310 ms" in html and "812 / 143" in html
    assert "What the model returned" in html


def test_segment_page_shows_summary_of_succeeded_job(as_user, world):
    html = as_user(world.support).get(reverse("desk-job", args=[world.succeeded.pk])).content.decode()
    assert "Summary of the ten answers: fees were 0.00 to 9.09 EUR [a-0]." in html
    assert "generation 1" in html


def test_stale_segment_names_changed_messages_with_a_diff_of_their_revisions(as_user, world):
    from tests.desk.conftest import ingest
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
    assert ("del", "-Answer 1: the fee was 1.01 EUR as of 2026-10-02.") in change.diff
    assert ("add", "+Answer 1: the fee was 7.77 EUR, corrected.") in change.diff
    assert '<span class="d-add">+Answer 1: the fee was 7.77 EUR, corrected.</span>' in html


def test_job_of_another_scope_is_404(as_user, world):
    url = reverse("desk-job", args=[world.other_failed.pk])
    assert as_user(world.operator).get(url).status_code == 404


def test_operator_sees_rerun_and_grant_forms_support_does_not(as_user, world):
    url = reverse("desk-job", args=[world.failed.pk])
    assert "Re-run this range" in as_user(world.operator).get(url).content.decode()
    support_html = as_user(world.support).get(url).content.decode()
    assert "Re-run this range" not in support_html and "Grant one more attempt" not in support_html
    assert "Record verdict" in support_html


def test_unsettled_job_polls_and_settled_job_does_not(as_user, world):
    client = as_user(world.support)
    settled = client.get(reverse("desk-job", args=[world.failed.pk])).content.decode()
    assert 'hx-trigger="every 2s"' not in settled
    CompactionJob.objects.filter(pk=world.failed.pk).update(state=JobState.RUNNING)
    running = client.get(reverse("desk-job", args=[world.failed.pk])).content.decode()
    assert 'hx-trigger="every 2s"' in running
    live = client.get(reverse("desk-job", args=[world.failed.pk]) + "?region=live", HTTP_HX_REQUEST="true")
    assert live.content.decode().lstrip().startswith('<section id="live"')


# --- actions -----------------------------------------------------------------------------

def rerun_post(client, job, *, reason="provider hiccup, retry", confirm="on", htmx=False, action="desk-job-rerun",
               prefix="rerun"):
    data = {f"{prefix}-reason": reason}
    if confirm:
        data[f"{prefix}-confirm"] = confirm
    extra = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    return client.post(reverse(action, args=[job.pk]), data, **extra)


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
    from tests.desk.conftest import ingest
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
    from tests.desk.conftest import ingest
    from tests.factories import conversation_document

    doc = conversation_document(50, scope="default", external_id="conv-a", title="Refund for order 88232")
    doc["messages"][1]["content"] = "Answer 0 was corrected: the fee was 1.00 EUR."
    ingest(doc)
    response = rerun_post(as_user(world.operator), world.succeeded, action="desk-job-replan", prefix="replan",
                          reason="", confirm="")
    assert response.status_code == 400
    assert CompactionJob.objects.filter(conversation=world.conversation, from_pair=0).count() == 1
    assert not AuditEvent.objects.exists()


def test_anonymous_action_redirects_to_login_and_changes_nothing(client, world):
    response = rerun_post(client, world.failed)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert CompactionJob.objects.get(pk=world.failed.pk).state == JobState.FAILED


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


@pytest.mark.parametrize("role", ["support", "operator", "staff"])
def test_reviewers_record_a_verdict_and_it_is_audited(as_user, world, role):
    user = getattr(world, role)
    response = as_user(user).post(reverse("desk-job-review", args=[world.succeeded.pk]),
                                  {"verdict": "needs_work", "note": "misses the refund date"})
    assert response.status_code == 302
    review = Review.objects.get()
    assert review.reviewer == user and review.verdict == "needs_work" and review.generation is not None
    assert AuditEvent.objects.get(action="review.record").after == {"verdict": "needs_work",
                                                                    "note": "misses the refund date"}


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


# --- queue -------------------------------------------------------------------------------------

def test_queue_lists_failed_and_exhausted_ranges_in_the_users_scopes(as_user, world):
    response = as_user(world.operator).get(reverse("desk-queue"))
    ids = {j.pk for j in response.context["rows"]}
    assert ids == {world.failed.pk, world.exhausted.pk}
    staff_ids = {j.pk for j in as_user(world.staff).get(reverse("desk-queue")).context["rows"]}
    assert staff_ids == {world.failed.pk, world.exhausted.pk, world.other_failed.pk}


def test_queue_leaves_out_a_job_whose_range_a_newer_job_covers(as_user, world):
    from compaction.bindings.segments import conversation_plan
    from compaction.engine.run import job_run
    from tests.desk.conftest import ingest
    from tests.factories import conversation_document

    doc = conversation_document(50, scope="default", external_id="conv-a", title="Refund for order 88232")
    doc["messages"][1]["content"] = "Answer 0 was corrected: the fee was 1.00 EUR."
    ingest(doc)
    client = as_user(world.operator)
    assert world.succeeded.pk in {j.pk for j in client.get(reverse("desk-queue")).context["rows"]}
    (newer,) = conversation_plan(conversation=world.conversation)  # what auto-planning does after an edit
    assert world.succeeded.pk not in {j.pk for j in client.get(reverse("desk-queue")).context["rows"]}
    html = client.get(reverse("desk-job", args=[world.succeeded.pk])).content.decode()
    assert "Bind this range to its current source" not in html
    assert f"Job <a href=\"{reverse('desk-job', args=[newer.pk])}\">#{newer.pk}</a>" in html
    assert "the projection gives these pairs raw" in html
    outcome = job_run(job_id=newer.pk)
    assert outcome.status == "succeeded", outcome
    html = client.get(reverse("desk-job", args=[world.succeeded.pk])).content.decode()
    assert f"job #{newer.pk}'s summary covers these pairs now" in html


@pytest.mark.parametrize("query, expected", [
    ("failure_code=too_long", {"exhausted"}),
    ("state=failed", {"failed"}),
    ("scope=default&prompt_version=conversation-compaction%403", {"failed", "exhausted"}),
    ("prompt_version=conversation-compaction%401", set()),
    ("older_than=1d", set()),
])
def test_queue_filters(as_user, world, query, expected):
    rows = as_user(world.operator).get(f"{reverse('desk-queue')}?{query}").context["rows"]
    assert {j.pk for j in rows} == {getattr(world, name).pk for name in expected}


def test_queue_shows_selection_only_to_operators(as_user, world):
    assert 'name="jobs"' in as_user(world.operator).get(reverse("desk-queue")).content.decode()
    assert 'name="jobs"' not in as_user(world.support).get(reverse("desk-queue")).content.decode()


def test_bulk_rerun_reruns_every_selected_range_with_one_reason(as_user, world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        response = as_user(world.operator).post(reverse("desk-queue-rerun"), {
            "jobs": [world.failed.pk, world.exhausted.pk], "reason": "provider outage over", "confirm": "on"})
    assert response.status_code == 302
    states = set(CompactionJob.objects.filter(pk__in=[world.failed.pk, world.exhausted.pk])
                 .values_list("state", flat=True))
    assert states == {JobState.PENDING}
    assert list(AuditEvent.objects.values_list("reason", flat=True).distinct()) == ["provider outage over"]
    assert AuditEvent.objects.count() == 2 and len(callbacks) == 1


def test_bulk_rerun_ignores_jobs_of_other_scopes(as_user, world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks():
        as_user(world.operator).post(reverse("desk-queue-rerun"), {
            "jobs": [world.failed.pk, world.other_failed.pk], "reason": "retry", "confirm": "on"})
    assert CompactionJob.objects.get(pk=world.other_failed.pk).state == JobState.FAILED
    assert CompactionJob.objects.get(pk=world.failed.pk).state == JobState.PENDING


def test_queue_lists_a_succeeded_summary_whose_source_changed(as_user, world):
    from tests.desk.conftest import ingest
    from tests.factories import conversation_document

    def listed(query=""):
        response = as_user(world.support).get(reverse("desk-queue") + query)
        return {j.pk for j in response.context["rows"]}, response.content.decode()

    assert world.succeeded.pk not in listed()[0]
    doc = conversation_document(50, scope="default", external_id="conv-a", title="Refund for order 88232")
    doc["messages"][1]["content"] = "Answer 0 was corrected: the fee was 1.00 EUR."
    ingest(doc)
    rows, html = listed()
    assert world.succeeded.pk in rows and "source changed" in html
    assert listed("?state=source_changed")[0] == {world.succeeded.pk}
    assert world.succeeded.pk not in listed("?state=failed")[0]


def test_bulk_rerun_of_a_summary_whose_source_changed_plans_a_new_job(
        as_user, world, django_capture_on_commit_callbacks):
    from tests.desk.conftest import ingest
    from tests.factories import conversation_document

    doc = conversation_document(50, scope="default", external_id="conv-a", title="Refund for order 88232")
    doc["messages"][1]["content"] = "Answer 0 was corrected: the fee was 1.00 EUR."
    ingest(doc)
    with django_capture_on_commit_callbacks():
        as_user(world.operator).post(reverse("desk-queue-rerun"), {
            "jobs": [world.succeeded.pk], "reason": "answer 0 corrected", "confirm": "on"})
    old = CompactionJob.objects.get(pk=world.succeeded.pk)
    assert old.state == JobState.SUCCEEDED  # the record stays
    new = CompactionJob.objects.filter(conversation=world.conversation, from_pair=0).exclude(pk=old.pk).get()
    assert new.state == JobState.PENDING and new.source_digest != old.source_digest and new.source_changed_at is None


def test_bulk_rerun_binds_a_stale_range_to_its_current_source_and_leaves_the_others(
        as_user, world, django_capture_on_commit_callbacks):
    from tests.desk.conftest import ingest
    from tests.factories import conversation_document

    doc = conversation_document(50, scope="default", external_id="conv-a", title="Refund for order 88232")
    doc["messages"][21]["content"] = "Answer 10 changed."
    ingest(doc)
    assert CompactionJob.objects.get(pk=world.failed.pk).state == JobState.STALE
    with django_capture_on_commit_callbacks():
        response = as_user(world.operator).post(reverse("desk-queue-rerun"), {
            "jobs": [world.failed.pk], "reason": "source edited", "confirm": "on"}, follow=True)
    new = CompactionJob.objects.filter(conversation=world.conversation, from_pair=10).exclude(pk=world.failed.pk).get()
    assert f"#{world.failed.pk} → #{new.pk}" in response.content.decode()
    assert new.state == JobState.PENDING and new.source_digest != world.failed.source_digest
    assert AuditEvent.objects.get(action="job.replan").reason == "source edited"
    # Only the selected range: the conversation's exhausted range was not re-run.
    assert CompactionJob.objects.get(pk=world.exhausted.pk).state == JobState.EXHAUSTED


@pytest.mark.parametrize("data, message", [
    ({"reason": "x", "confirm": "on"}, "Select at least one range."),
    ({"jobs": ["1"], "confirm": "on"}, "Give a reason"),
    ({"jobs": ["1"], "reason": "x"}, "Tick the confirmation"),
])
def test_bulk_rerun_validates_its_form(as_user, world, data, message):
    response = as_user(world.operator).post(reverse("desk-queue-rerun"), data)
    assert response.status_code == 400 and message in response.content.decode()
    assert not AuditEvent.objects.exists()


@pytest.mark.parametrize("role", ["support", "outsider"])
def test_bulk_rerun_is_403_for_non_operators(as_user, world, role):
    response = as_user(getattr(world, role)).post(reverse("desk-queue-rerun"), {
        "jobs": [world.failed.pk], "reason": "x", "confirm": "on"})
    assert response.status_code == 403
    assert CompactionJob.objects.get(pk=world.failed.pk).state == JobState.FAILED


# --- activity ------------------------------------------------------------------------------------

def test_activity_lists_who_did_what_when_and_why(as_user, world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks():
        rerun_post(as_user(world.operator), world.failed, reason="retry after outage")
    html = as_user(world.support).get(reverse("desk-activity")).content.decode()
    assert "olga" in html and "job.rerun" in html and "retry after outage" in html
    assert "state=failed" in html and "state=pending" in html
    assert f"job #{world.failed.pk}" in html


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


# --- conversation re-run ----------------------------------------------------------------------

def test_operator_reruns_a_whole_conversation(as_user, world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks():
        response = as_user(world.operator).post(
            reverse("desk-conversation-rerun", args=[world.conversation.pk]),
            {"rerun-reason": "model upgraded", "rerun-confirm": "on"})
    assert response.status_code == 302
    assert set(CompactionJob.objects.filter(pk__in=[world.failed.pk, world.exhausted.pk])
               .values_list("state", flat=True)) == {JobState.PENDING}
    assert AuditEvent.objects.get(action="conversation.rerun").reason == "model upgraded"


@pytest.mark.parametrize("role", ["support", "outsider"])
def test_conversation_rerun_is_403_for_non_operators(as_user, world, role):
    response = as_user(getattr(world, role)).post(
        reverse("desk-conversation-rerun", args=[world.conversation.pk]),
        {"rerun-reason": "x", "rerun-confirm": "on"})
    assert response.status_code == 403 and not AuditEvent.objects.exists()


def test_conversation_rerun_needs_a_reason_and_stays_in_scope(as_user, world):
    client = as_user(world.operator)
    response = client.post(reverse("desk-conversation-rerun", args=[world.conversation.pk]), {"rerun-confirm": "on"})
    assert response.status_code == 400 and "Give a reason" in response.content.decode()
    response = client.post(reverse("desk-conversation-rerun", args=[world.other_conversation.pk]),
                           {"rerun-reason": "x", "rerun-confirm": "on"})
    assert response.status_code == 404 and not AuditEvent.objects.exists()


def test_scope_menu_lists_every_scope_for_staff_and_only_granted_scopes_for_others(as_user, world):
    assert as_user(world.staff).get("/").context["form"].fields["scope"].choices == [
        ("", "all scopes"), ("default", "default"), ("other", "other")]
    assert as_user(world.support).get("/").context["form"].fields["scope"].choices == [
        ("", "all scopes"), ("default", "default")]


def test_bulk_rerun_returns_to_the_filtered_queue(as_user, world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks():
        response = as_user(world.operator).post(reverse("desk-queue-rerun"), {
            "jobs": [world.failed.pk], "reason": "retry", "confirm": "on",
            "next_query": "failure_code=tool_calls&scope=default"})
    assert response["Location"] == "/queue/?failure_code=tool_calls&scope=default"


def test_forbidden_page_explains_the_role(as_user, world):
    response = as_user(world.support).post(reverse("desk-job-rerun", args=[world.failed.pk]),
                                           {"rerun-reason": "x", "rerun-confirm": "on"})
    assert response.status_code == 403 and "Your role does not allow this" in response.content.decode()


# --- projection preview -------------------------------------------------------------------------

def test_conversation_page_loads_the_preview_lazily(as_user, world):
    html = as_user(world.support).get(reverse("desk-conversation", args=[world.conversation.pk])).content.decode()
    assert 'hx-trigger="load"' in html and f"?budget=65536" in html
    assert "Uses <strong>" not in html


def test_projection_preview_shows_how_each_pair_is_given_and_why(as_user, world):
    url = reverse("desk-conversation", args=[world.conversation.pk])
    response = as_user(world.support).get(f"{url}?budget=1000000")
    preview = {p["index"]: (p["as"], p["reason"]) for p in response.context["preview_pairs"]}
    assert preview[0] == ("summary", None)
    assert preview[10] == ("raw", "failed") and preview[20][0] == "raw"
    assert preview[49] == ("raw", None)
    assert response.context["preview"]["complete"] is True
    html = response.content.decode()
    assert "complete: nothing left out" in html and ">failed</span>" in html


def test_projection_preview_with_a_small_budget_omits_pairs_and_says_so(as_user, world):
    url = reverse("desk-conversation", args=[world.conversation.pk])
    response = as_user(world.support).get(f"{url}?budget=300", HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert html.lstrip().startswith('<section class="card" id="preview"')
    assert "incomplete: some pairs omitted" in html and "over_budget" in html
    assert '<li class="as-omitted"' in html


@pytest.mark.parametrize("budget, message", [("lots", "whole number"), ("0", "at least 1")])
def test_projection_preview_reports_a_bad_budget(as_user, world, budget, message):
    url = reverse("desk-conversation", args=[world.conversation.pk])
    html = as_user(world.support).get(f"{url}?budget={budget}").content.decode()
    assert message in html


def test_updated_since_starts_at_midnight_utc(as_user, world):
    from datetime import datetime, timezone

    from conversations.models import Conversation

    Conversation.objects.filter(external_id="conv-a").update(updated_at=datetime(2026, 5, 2, 0, 30, tzinfo=timezone.utc))
    client = as_user(world.staff)
    assert ">conv-a<" in client.get("/?updated_since=2026-05-02").content.decode()
    assert ">conv-a<" not in client.get("/?updated_since=2026-05-03").content.decode()
