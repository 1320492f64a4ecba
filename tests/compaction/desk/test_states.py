"""States at a glance (issue 16 §5): a job its range replaced is
``superseded`` and a summary whose source changed is ``source_changed`` —
in the timeline, the state bars, the generation table and chart and the
badges — never counted as ``succeeded``."""

from __future__ import annotations

import pytest
from django.urls import reverse

from compaction import actions
from compaction.bindings.segments import conversation_plan
from compaction.models import CompactionJob, JobState, PromptVersion
from tests.compaction.desk.conftest import ingest, make_succeeded
from tests.factories import conversation_document

pytestmark = pytest.mark.django_db


def edit_first_answer(world):
    doc = conversation_document(50, scope="default", external_id="conv-a", title="Refund for order 88232")
    doc["messages"][1]["content"] = "Answer 0 was corrected: the fee was 1.00 EUR."
    ingest(doc)


def replan_first_range(world, django_capture_on_commit_callbacks) -> CompactionJob:
    with django_capture_on_commit_callbacks():
        return actions.do_job_replan(job=CompactionJob.objects.get(pk=world.succeeded.pk), actor=world.operator,
                                     reason="bind to the corrected answer")


def list_counts(client, world) -> dict:
    rows = client.get(reverse("desk-conversations")).context["rows"]
    return next(c for c in rows if c.pk == world.conversation.pk).state_counts


def test_the_list_counts_a_summary_whose_source_changed_as_source_changed(as_user, world):
    client = as_user(world.support)
    assert list_counts(client, world) == {"succeeded": 1, "failed": 1, "exhausted": 1}
    edit_first_answer(world)
    assert list_counts(client, world) == {"source_changed": 1, "failed": 1, "exhausted": 1}
    html = client.get(reverse("desk-conversations")).content.decode()
    assert '<span class="fg-source_changed">1 source changed</span>' in html
    assert "bg-source_changed" in html


def test_the_list_counts_a_replaced_job_as_superseded_not_succeeded(as_user, world, django_capture_on_commit_callbacks):
    edit_first_answer(world)
    new = replan_first_range(world, django_capture_on_commit_callbacks)
    client = as_user(world.support)
    assert list_counts(client, world) == {"superseded": 1, "pending": 1, "failed": 1, "exhausted": 1}
    html = client.get(reverse("desk-conversations")).content.decode()
    assert '<span class="fg-superseded">1 superseded</span>' in html
    assert "succeeded" not in html.split('id="results"')[1]
    # Once the new job succeeds, one summary counts as succeeded again.
    make_succeeded(new, number=2)
    assert list_counts(client, world) == {"superseded": 1, "succeeded": 1, "failed": 1, "exhausted": 1}


def test_sql_and_python_agree_on_every_jobs_shown_state(world, django_capture_on_commit_callbacks):
    edit_first_answer(world)
    replan_first_range(world, django_capture_on_commit_callbacks)
    jobs = list(CompactionJob.objects.filter(conversation=world.conversation).with_display_state())
    for job in jobs:
        others = [j for j in jobs if j.pk != job.pk and j.from_pair == job.from_pair]
        assert job.shown_state == job.display_state(superseded=job.superseded_by(others) is not None), job
    assert sorted(j.shown_state for j in jobs) == ["exhausted", "failed", "pending", "superseded"]


def test_the_conversation_page_shows_source_changed_in_timeline_table_and_chart(as_user, world):
    edit_first_answer(world)
    response = as_user(world.support).get(reverse("desk-conversation", args=[world.conversation.pk]))
    html = response.content.decode()
    assert response.context["segments"][0].state == "source_changed"
    assert '<li class="band bg-source_changed">' in html and '<span class="band-state">source changed</span>' in html
    (generation,) = response.context["generations"]
    assert generation.display_state == "source_changed"
    assert 'class="bar-source_changed"' in html and "(source changed)</title>" in html
    # The legend names the state.
    assert '<span class="swatch bg-source_changed"></span>source changed' in html


def test_a_replaced_summary_is_superseded_in_the_generation_table_and_chart(
        as_user, world, django_capture_on_commit_callbacks):
    edit_first_answer(world)
    new = replan_first_range(world, django_capture_on_commit_callbacks)
    make_succeeded(new, number=2, text="Summary of the corrected answers [a-0].")
    response = as_user(world.support).get(reverse("desk-conversation", args=[world.conversation.pk]))
    html = response.content.decode()
    first = response.context["segments"][0]
    assert first.job.pk == new.pk and first.state == "succeeded"
    states = {g.number: g.display_state for g in response.context["generations"]}
    assert states == {1: "superseded", 2: "valid"}
    assert 'class="bar-superseded"' in html and "generation 1:" in html and "(superseded)</title>" in html
    assert '<span class="state state-superseded"' in html


def test_the_timeline_marks_a_summary_a_newer_job_replaces_as_superseded(as_user, world):
    conversation = ingest(conversation_document(30, scope="default", external_id="conv-v2"))
    v2 = PromptVersion.objects.get(name="conversation-compaction@2")
    v3 = PromptVersion.objects.get(name="conversation-compaction@3")
    (old,) = conversation_plan(conversation=conversation, prompt_version=v2)
    make_succeeded(old)
    new = actions.do_job_rerun_with_prompt(job=old, prompt_version=v3, actor=world.operator, reason="prompt v3")
    response = as_user(world.support).get(reverse("desk-conversation", args=[conversation.pk]))
    (band,) = response.context["segments"]
    # The summary that exists still speaks for the range, marked as being replaced.
    assert band.job.pk == old.pk and band.state == "superseded"
    assert "a newer job of this range replaces it" in response.content.decode()
    assert new.state == JobState.PENDING


def test_the_segment_page_badges_a_superseded_job_and_its_range_s_other_jobs(
        as_user, world, django_capture_on_commit_callbacks):
    edit_first_answer(world)
    new = replan_first_range(world, django_capture_on_commit_callbacks)
    client = as_user(world.support)
    old_page = client.get(reverse("desk-job", args=[world.succeeded.pk])).content.decode()
    live = old_page.split('id="live"')[1].split("</section>")[0]
    assert 'class="state state-superseded"' in live and "(job succeeded)" in live
    new_page = client.get(reverse("desk-job", args=[new.pk])).content.decode()
    assert 'class="state state-pending"' in new_page.split('id="live"')[1].split("</section>")[0]
    other = new_page.split("Other jobs for this range")[1]
    assert f"#{world.succeeded.pk}</a> <span class=\"state state-superseded\"" in other


def test_a_source_changed_summary_is_badged_on_its_page_and_in_the_queue(as_user, world):
    edit_first_answer(world)
    client = as_user(world.support)
    live = client.get(reverse("desk-job", args=[world.succeeded.pk])).content.decode().split('id="live"')[1]
    assert 'class="state state-source_changed"' in live.split("</section>")[0]
    queue = client.get(reverse("desk-queue") + "?state=source_changed").content.decode()
    assert '<span class="state state-source_changed"' in queue and " UTC</span>" in queue


def test_has_filter_counts_ranges_by_the_job_that_counts(as_user, world, django_capture_on_commit_callbacks):
    client = as_user(world.support)
    ids = lambda q: [c.pk for c in client.get(f"{reverse('desk-conversations')}?{q}").context["rows"]]  # noqa: E731
    assert ids("has=source_changed") == []
    edit_first_answer(world)
    assert ids("has=source_changed") == [world.conversation.pk]
    replan_first_range(world, django_capture_on_commit_callbacks)
    assert ids("has=source_changed") == [] and ids("has=pending") == [world.conversation.pk]
