"""Pages render with a bounded number of queries, independent of data size
(issue 5, "Measured, not assumed"). Each page is rendered on a small world,
then again after the data grows; the query count must not move."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from compaction.bindings.segments import conversation_plan
from tests.compaction.desk.conftest import ingest, make_failed, make_succeeded
from tests.factories import conversation_document

pytestmark = pytest.mark.django_db


def queries(client, url) -> tuple[int, list[str]]:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200
    return len(ctx.captured_queries), [q["sql"] for q in ctx.captured_queries]


def grow(n_conversations: int, n_pairs: int):
    for i in range(n_conversations):
        conv = ingest(conversation_document(n_pairs, scope="default", external_id=f"grow-{i}", title=f"grow {i}"))
        for k, job in enumerate(conversation_plan(conversation=conv)):
            make_succeeded(job, number=k + 1) if k % 2 == 0 else make_failed(job)


def test_conversations_page_query_count_is_independent_of_data_size(as_user, world):
    client = as_user(world.support)
    small, _ = queries(client, "/")
    grow(8, 60)
    large, sql = queries(client, "/")
    assert large == small, sql
    assert not any("COUNT(*)" in s.upper() and "GROUP BY" not in s.upper() for s in sql)


def test_conversation_page_query_count_is_independent_of_its_size(as_user, world):
    client = as_user(world.support)
    small, _ = queries(client, reverse("desk-conversation", args=[world.conversation.pk]))
    big = ingest(conversation_document(160, scope="default", external_id="big", title="big"))
    for k, job in enumerate(conversation_plan(conversation=big)):
        if k % 3 == 0:
            make_succeeded(job, number=k + 1)
        elif k % 3 == 1:
            make_failed(job)
    large, sql = queries(client, reverse("desk-conversation", args=[big.pk]))
    assert large == small, sql


def test_segment_page_query_count_is_independent_of_attempts_and_reviews(as_user, world):
    from compaction.actions import do_review_record

    client = as_user(world.operator)
    url = reverse("desk-job", args=[world.succeeded.pk])
    small, _ = queries(client, url)
    for i in range(5):
        do_review_record(job=world.succeeded, reviewer=world.support, verdict="needs_work", note=f"note {i}")
    grow(3, 40)
    large, sql = queries(client, url)
    assert large == small, sql


@pytest.mark.parametrize("name", ["desk-queue", "desk-activity"])
def test_list_pages_query_count_is_independent_of_data_size(as_user, world, name, django_capture_on_commit_callbacks):
    from compaction.actions import do_job_rerun

    client = as_user(world.operator)
    small, _ = queries(client, reverse(name))
    grow(4, 50)
    with django_capture_on_commit_callbacks():
        for job in world.conversation.compaction_jobs.filter(state="exhausted"):
            do_job_rerun(job=job, actor=world.operator, reason="grow the log")
    large, sql = queries(client, reverse(name))
    assert large == small, sql


def test_review_pages_query_count_is_independent_of_data_size(as_user, world):
    """The review queue and the review-mode segment page (issue 16): more
    summaries, more reviews and more claims do not add queries."""
    from compaction import actions, reviewclaims
    from compaction.models import SummaryGeneration
    from tests.factories import make_user

    client = as_user(world.support)
    review_url = f"{reverse('desk-job', args=[world.succeeded.pk])}?review=1"
    small_queue, _ = queries(client, reverse("desk-review"))
    queries(client, review_url)  # takes the claim; every later view renews it
    small_review, _ = queries(client, review_url)
    grow(6, 60)
    rita = make_user("rita", role="support")
    gens = list(SummaryGeneration.objects.exclude(job=world.succeeded).order_by("id"))
    for g in gens[::2]:
        actions.do_review_record(job=g.job, reviewer=rita, verdict="approved", note="fine")
    for g in gens[1::2]:
        reviewclaims.review_claim_take(generation_id=g.pk, reviewer=rita)
    large_queue, sql = queries(client, reverse("desk-review"))
    assert large_queue == small_queue, sql
    large_review, sql = queries(client, review_url)
    assert large_review == small_review, sql
