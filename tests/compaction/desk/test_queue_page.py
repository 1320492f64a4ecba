"""``/queue/``: failed, exhausted and stale ranges and summaries whose source
changed; bulk re-runs (issue 5 §5)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from compaction.models import AuditEvent, CompactionJob, JobState

pytestmark = pytest.mark.django_db


def test_queue_lists_failed_and_exhausted_ranges_in_the_users_scopes(as_user, world):
    response = as_user(world.operator).get(reverse("desk-queue"))
    ids = {j.pk for j in response.context["rows"]}
    assert ids == {world.failed.pk, world.exhausted.pk}
    staff_ids = {j.pk for j in as_user(world.staff).get(reverse("desk-queue")).context["rows"]}
    assert staff_ids == {world.failed.pk, world.exhausted.pk, world.other_failed.pk}


def test_queue_leaves_out_a_job_whose_range_a_newer_job_covers(as_user, world):
    from compaction.bindings.segments import conversation_plan
    from compaction.engine.run import job_run
    from tests.compaction.desk.conftest import ingest
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
    from tests.compaction.desk.conftest import ingest
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
    from tests.compaction.desk.conftest import ingest
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
    from tests.compaction.desk.conftest import ingest
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


def test_bulk_rerun_returns_to_the_filtered_queue(as_user, world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks():
        response = as_user(world.operator).post(reverse("desk-queue-rerun"), {
            "jobs": [world.failed.pk], "reason": "retry", "confirm": "on",
            "next_query": "failure_code=tool_calls&scope=default"})
    assert response["Location"] == f"/queue/?failure_code=tool_calls&scope=default&kept={world.failed.pk}"


def test_bulk_rerun_keeps_its_rows_on_the_page_with_their_live_state(
        as_user, world, django_capture_on_commit_callbacks):
    client = as_user(world.operator)
    with django_capture_on_commit_callbacks():
        response = client.post(reverse("desk-queue-rerun"), {
            "jobs": [world.failed.pk, world.exhausted.pk], "reason": "retry", "confirm": "on"})
    kept = f"{world.failed.pk},{world.exhausted.pk}"
    assert response["Location"] == f"/queue/?kept={kept}"
    page = client.get(response["Location"])
    html = page.content.decode()
    # Pending now, so not in the failed-ranges list itself, but kept on the page.
    assert page.context["rows"] == []
    assert [j.pk for j in page.context["kept"]] == [world.failed.pk, world.exhausted.pk]
    kept_body = html.split('<tbody id="kept"')[1].split("</tbody>")[0]
    assert f'hx-get="/queue/?kept={kept}&amp;region=kept" hx-trigger="every 2s"' in kept_body
    assert "2 of 2 ranges still pending or running" in kept_body
    assert kept_body.count('class="state state-pending"') == 2
    # While they move, the kept rows have no checkbox (polling would undo a tick).
    assert 'name="jobs"' not in kept_body
    assert "Re-run the selected ranges" in html


def test_the_kept_rows_poll_until_every_one_has_settled(as_user, world, django_capture_on_commit_callbacks):
    from tests.compaction.desk.conftest import make_succeeded

    client = as_user(world.operator)
    with django_capture_on_commit_callbacks():
        client.post(reverse("desk-queue-rerun"), {
            "jobs": [world.failed.pk, world.exhausted.pk], "reason": "retry", "confirm": "on"})
    url = f"/queue/?kept={world.failed.pk},{world.exhausted.pk}&region=kept"
    make_succeeded(CompactionJob.objects.get(pk=world.failed.pk), number=2)
    region = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert region.lstrip().startswith('<tbody id="kept"') and "<html" not in region
    assert 'hx-trigger="every 2s"' in region and "1 of 2 ranges still pending or running" in region
    assert 'class="state state-succeeded"' in region and 'class="state state-pending"' in region
    CompactionJob.objects.filter(pk=world.exhausted.pk).update(state=JobState.FAILED)
    region = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    # Settled: polling stops and the rows can be selected again.
    assert "hx-trigger" not in region and "all 2 ranges settled." in region
    assert f'id="pick-{world.exhausted.pk}"' in region and f'id="pick-{world.failed.pk}"' in region
    # A kept job back in the queue is listed once, with the kept rows.
    page = client.get(f"/queue/?kept={world.failed.pk},{world.exhausted.pk}")
    assert world.exhausted.pk not in [j.pk for j in page.context["rows"]]
    assert page.content.decode().count(f'id="row-{world.exhausted.pk}"') == 1


def test_kept_rows_stay_in_the_users_scopes_and_refuse_a_bad_list(as_user, world):
    client = as_user(world.operator)
    page = client.get(f"/queue/?kept={world.other_failed.pk},{world.failed.pk}")
    assert [j.pk for j in page.context["kept"]] == [world.failed.pk]
    assert "conv-secret" not in page.content.decode()
    response = client.get("/queue/?kept=1,two")
    assert response.status_code == 400
    assert response.content.decode() == "kept: job ids must be whole numbers separated by commas"
    response = client.get("/queue/?kept=" + ",".join(str(i) for i in range(1, 102)))
    assert response.status_code == 400 and "kept: at most 100 job ids" in response.content.decode()


def test_the_queue_selection_needs_no_inline_script(as_user, world):
    html = as_user(world.operator).get(reverse("desk-queue")).content.decode()
    assert "onclick" not in html and "<script>" not in html
    assert '<script src="/static/desk/desk.js" defer></script>' in html
    assert 'data-pick-all' in html and "data-bulk-submit" in html and "data-bulk-count" in html
