"""Verdicts are bound to the generation they judged (issue 16 item 1, SPEC
§11): a verdict needs a summary; a summary replaced by a newer generation,
or whose source changed after its verdict, is unreviewed again — on the
desk, in the API and in the audit record — with the old verdict kept as
history."""

from __future__ import annotations

import importlib
from datetime import timedelta

import pytest
from django.apps import apps
from django.urls import reverse
from django.utils import timezone

from compaction import actions, audit
from compaction.models import CompactionJob, JobState, Review, SummaryGeneration, verdict_stands
from conversations.documents import validate_document
from conversations.services.ingest import conversation_ingest
from tests.compaction.api.conftest import client_for
from tests.compaction.desk.conftest import make_succeeded
from tests.factories import conversation_document


def record(job, user, verdict="approved", note="reads right"):
    return actions.do_review_record(job=job, reviewer=user, verdict=verdict, note=note)


def audit_review(job, user):
    (record_,) = audit.audit_records([audit.audit_job_get(user=user, job_id=job.pk)])
    return record_["review"]


def replace_summary(job):
    """A newer job for the same range and source (another model), succeeded:
    its generation replaces ``job``'s."""
    newer = CompactionJob.objects.create(
        kind=job.kind, scope=job.scope, conversation=job.conversation, from_pair=job.from_pair, to_pair=job.to_pair,
        message_ids=job.message_ids, source_digest=job.source_digest, model_id="another-model",
        prompt_version=job.prompt_version)
    number = max(SummaryGeneration.objects.filter(conversation=job.conversation).values_list("number", flat=True)) + 1
    make_succeeded(newer, text="A newer summary [a-1].", number=number)
    return newer


def edit_source(conversation, pair=2):
    doc = conversation_document(50, scope="default", external_id=conversation.external_id,
                                title=conversation.title)
    for message in doc["messages"]:
        if message["id"] == f"a-{pair}":
            message["content"] += " Corrected after the summary was made."
    conversation_ingest(document=validate_document(doc), actor="tests")


def test_the_rule_over_plain_values():
    now = timezone.now()
    assert verdict_stands(review_created_at=now, review_generation_id=1, superseded=False, source_changed_at=None)
    assert not verdict_stands(review_created_at=now, review_generation_id=None, superseded=False,
                              source_changed_at=None)
    assert not verdict_stands(review_created_at=now, review_generation_id=1, superseded=True, source_changed_at=None)
    assert not verdict_stands(review_created_at=now, review_generation_id=1, superseded=False,
                              source_changed_at=now + timedelta(seconds=1))
    assert verdict_stands(review_created_at=now, review_generation_id=1, superseded=False,
                          source_changed_at=now - timedelta(seconds=1))


def test_a_verdict_is_bound_to_the_generation_of_its_job(world):
    review = record(world.succeeded, world.support)
    assert review.generation == world.succeeded.generation and review.job == world.succeeded
    assert audit_review(world.succeeded, world.staff)["verdict"] == "approved"


def test_a_verdict_needs_a_summary_in_the_action_the_api_and_the_desk(world, as_user):
    with pytest.raises(actions.ActionRefused) as exc:
        record(world.failed, world.support)
    assert exc.value.code == "no_summary"

    response = client_for(world.support).post("/api/v1/reviews/", {"job": world.failed.pk, "verdict": "approved",
                                                                  "note": "fine"}, format="json")
    assert response.status_code == 409 and response.json()["code"] == "no_summary"

    client = as_user(world.support)
    page = client.get(reverse("desk-job", args=[world.failed.pk])).content.decode()
    assert "Record verdict" not in page and "No summary to judge" in page
    response = client.post(reverse("desk-job-review", args=[world.failed.pk]), {"verdict": "approved", "note": "x"})
    assert response.status_code == 400 and "has no summary to judge" in response.content.decode()
    assert not Review.objects.exists()


def test_a_failed_job_that_later_succeeds_shows_its_new_summary_unreviewed(world, as_user):
    """The issue's own case: before, a verdict recorded on the failed job
    showed as the new summary's verdict."""
    legacy = Review.objects.create(job=world.failed, generation=None, reviewer=world.support, verdict="approved",
                                   note="approved before there was a summary")
    make_succeeded(world.failed, text="Now there is a summary [a-10].", number=2)
    page = as_user(world.support).get(reverse("desk-job", args=[world.failed.pk])).content.decode()
    assert "Not reviewed yet" in page and "approved before there was a summary" in page
    assert audit_review(world.failed, world.staff) is None
    assert legacy.generation is None


def test_a_summary_replaced_by_a_newer_generation_is_unreviewed_again_with_its_verdict_as_history(world, as_user):
    record(world.succeeded, world.support, note="first summary is fine")
    newer = replace_summary(world.succeeded)
    assert audit_review(world.succeeded, world.staff) is None
    assert audit_review(newer, world.staff) is None
    with pytest.raises(actions.ActionRefused) as exc:
        record(world.succeeded, world.support)
    assert exc.value.code == "superseded"

    client = as_user(world.support)
    page = client.get(reverse("desk-job", args=[newer.pk])).content.decode()
    assert "Not reviewed yet" in page
    assert "first summary is fine" in page and "no longer stands" in page  # the range's history
    conv = client.get(reverse("desk-conversation", args=[world.conversation.pk])).content.decode()
    assert "unreviewed again" in conv
    assert client.get(reverse("desk-conversations") + "?verdict=approved").context["rows"] == []


def test_a_summary_whose_source_changed_after_its_verdict_is_unreviewed_again(world, as_user):
    record(world.succeeded, world.support, verdict="approved", note="matches its source")
    assert audit_review(world.succeeded, world.staff)["note"] == "matches its source"
    edit_source(world.conversation, pair=2)
    job = CompactionJob.objects.get(pk=world.succeeded.pk)
    assert job.source_changed_at is not None and job.state == JobState.SUCCEEDED
    assert audit_review(job, world.staff) is None
    response = client_for(world.staff).get("/api/v1/audits/", {"verdict": "none", "state": "succeeded"})
    assert job.pk in [r["job"] for r in response.json()["results"]]
    page = as_user(world.support).get(reverse("desk-job", args=[job.pk])).content.decode()
    assert "Not reviewed yet" in page and "matches its source" in page
    # A verdict given after the change stands.
    record(job, world.support, verdict="needs_work", note="source moved on")
    assert audit_review(job, world.staff)["verdict"] == "needs_work"


def test_the_newest_standing_verdict_is_current_and_older_ones_are_history(world, as_user):
    record(world.succeeded, world.support, verdict="needs_work", note="thin")
    record(world.succeeded, world.operator, verdict="approved", note="fixed by a better reading")
    assert audit_review(world.succeeded, world.staff)["verdict"] == "approved"
    page = as_user(world.support).get(reverse("desk-job", args=[world.succeeded.pk])).content.decode()
    assert "thin" in page and "fixed by a better reading" in page


@pytest.mark.parametrize("note", ["", "   ", "x" * (actions.REASON_MAX_CHARS + 1)])
def test_one_note_rule_for_the_desk_the_api_and_the_action(world, as_user, note):
    with pytest.raises(actions.ActionRefused):
        record(world.succeeded, world.support, note=note)
    api = client_for(world.support).post("/api/v1/reviews/", {"job": world.succeeded.pk, "verdict": "approved",
                                                              "note": note}, format="json")
    assert api.status_code == 400 and "note" in api.json()["errors"]
    desk = as_user(world.support).post(reverse("desk-job-review", args=[world.succeeded.pk]),
                                       {"verdict": "approved", "note": note})
    assert desk.status_code == 400
    assert not Review.objects.exists()


def test_a_note_at_the_limit_after_trimming_is_taken_everywhere(world, as_user):
    note = "  " + "y" * actions.REASON_MAX_CHARS + "  "
    api = client_for(world.support).post("/api/v1/reviews/", {"job": world.succeeded.pk, "verdict": "approved",
                                                              "note": note}, format="json")
    assert api.status_code == 201, api.json()
    desk = as_user(world.support).post(reverse("desk-job-review", args=[world.succeeded.pk]),
                                       {"verdict": "approved", "note": note})
    assert desk.status_code == 302
    assert {len(r.note) for r in Review.objects.all()} == {actions.REASON_MAX_CHARS}


def test_migration_binds_old_reviews_to_the_generation_their_job_had_then(world):
    generation = world.succeeded.generation
    before = Review.objects.create(job=world.failed, generation=None, reviewer=world.support, verdict="approved",
                                   note="on a job without a summary")
    after = Review.objects.create(job=world.succeeded, generation=None, reviewer=world.support,
                                  verdict="needs_work", note="written before 0018")
    # A review older than the job's generation judged no summary.
    Review.objects.filter(pk=before.pk).update(created_at=generation.created_at - timedelta(days=1))
    make_succeeded(world.failed, number=2)  # its generation is newer than the review
    migration = importlib.import_module("compaction.migrations.0018_review_generation")
    migration.bind_reviews_to_generations(apps, None)
    after.refresh_from_db()
    before.refresh_from_db()
    assert after.generation_id == generation.pk
    assert before.generation_id is None
