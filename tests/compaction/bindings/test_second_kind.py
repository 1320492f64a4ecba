"""A second kind of binding goes through the one engine — claim, provider,
contract, finish, generation — with no change to the engine (issue 10).
The kind (``quintet``: five pairs, optionally bound to a parent generation)
exists only in the test suite; on SQLite the same path runs in a
subprocess."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from compaction.engine.claim import job_claim
from compaction.engine.leases import jobs_reap_expired
from compaction.engine.run import job_run
from compaction.models import Attempt, CompactionJob, JobState, SummaryGeneration
from tests.compaction.bindings import quintet
from tests.compaction.conftest import RecordingProvider, ingest, live_db, run_on_sqlite
from tests.factories import conversation_document


@pytest.fixture
def kind(db):
    quintet.register()
    yield quintet.QUINTETS
    quintet.unregister()


@pytest.fixture
def conversation(kind):
    return ingest(conversation_document(30))


@live_db
def test_a_second_kind_goes_from_claim_to_an_immutable_generation(conversation):
    provider = RecordingProvider()
    job = quintet.quintet_job(conversation, k=0)
    outcome = job_run(job_id=job.pk, provider=provider)
    assert outcome.status == "succeeded", outcome
    (request,) = provider.requests
    # The provider saw the kind's material: the five assistant answers, labelled.
    assert [a.message_id for a in request.answers] == [f"a-{i}" for i in range(5)]
    assert provider.in_transaction == [False]  # the model call runs outside any transaction
    generation = SummaryGeneration.objects.get(job=job)
    assert (generation.kind, generation.from_pair, generation.to_pair, generation.parent_id) == (quintet.KIND, 0, 4,
                                                                                                  None)
    assert generation.message_ids == job.message_ids and generation.source_digest == job.source_digest
    assert Attempt.objects.get(job=job).outcome == "succeeded"


def test_a_child_is_claimable_only_while_its_parent_is_the_newest_generation(conversation):
    first = quintet.quintet_job(conversation, k=0)
    job_run(job_id=first.pk, provider=RecordingProvider())
    parent = SummaryGeneration.objects.get(job=first)
    child = quintet.quintet_job(conversation, k=1, parent=parent)
    late = quintet.quintet_job(conversation, k=2, parent=parent)  # bound to the same parent
    assert job_run(job_id=child.pk, provider=RecordingProvider()).status == "succeeded"
    generation = SummaryGeneration.objects.get(job=child)
    assert generation.parent_id == parent.pk
    assert generation.parent_digest == hashlib.sha256(parent.text.encode()).hexdigest()
    # Its parent is no longer the newest: the binding stopped being current.
    outcome = job_run(job_id=late.pk, provider=RecordingProvider())
    assert (outcome.status, outcome.detail) == ("stale", "source_changed")
    assert CompactionJob.objects.get(pk=late.pk).state == JobState.STALE
    # And a first job, without a parent, once there is a generation.
    orphan = quintet.quintet_job(conversation, k=3)
    assert job_claim(job=orphan, worker="w", model_id=orphan.model_id).refused == "source_changed"


def test_the_kinds_own_contract_judges_its_answers(conversation):
    job = quintet.quintet_job(conversation, k=0)
    long = RecordingProvider(result={"text": "x" * 2001, "finish_reason": "stop", "model": "extractive-v2"})
    outcome = job_run(job_id=job.pk, provider=long)
    assert (outcome.status, outcome.failure_code) == ("failed", "too_long")  # a segment may have 6,000
    assert not SummaryGeneration.objects.filter(job=job).exists()


def test_a_binding_of_the_wrong_shape_is_refused_before_and_inside_the_claim(conversation, kind, monkeypatch):
    four = quintet.quintet_job(conversation, k=0, to_pair=3)
    assert job_claim(job=four, worker="w", model_id=four.model_id).refused == "invalid_binding"
    assert CompactionJob.objects.get(pk=four.pk).state == JobState.STALE
    twice = quintet.quintet_job(conversation, k=1)
    CompactionJob.objects.filter(pk=twice.pk).update(message_ids=twice.message_ids[:9] + [twice.message_ids[0]])
    twice.refresh_from_db()
    monkeypatch.setattr(kind, "shape_problem", lambda job: "")  # the statement must refuse alone
    assert job_claim(job=twice, worker="w", model_id=twice.model_id).attempt is None
    assert not Attempt.objects.filter(job=twice).exists()


def test_an_expired_lease_of_the_second_kind_is_reaped_like_any(conversation):
    job = quintet.quintet_job(conversation, k=0, max_attempts=1)
    job_claim(job=job, worker="dead", model_id=job.model_id, lease_seconds=0)
    assert jobs_reap_expired(now=timezone.now() + timedelta(seconds=1)) == [job.pk]
    job.refresh_from_db()
    assert (job.state, job.last_failure_code) == (JobState.EXHAUSTED, "lease_expired")


def test_the_binding_is_unique_with_and_without_a_parent(conversation):
    first = quintet.quintet_job(conversation, k=0)
    with pytest.raises(IntegrityError), transaction.atomic():
        quintet.quintet_job(conversation, k=0)
    job_run(job_id=first.pk, provider=RecordingProvider())
    parent = SummaryGeneration.objects.get(job=first)
    quintet.quintet_job(conversation, k=1, parent=parent)
    with pytest.raises(IntegrityError), transaction.atomic():
        quintet.quintet_job(conversation, k=1, parent=parent)


def test_segments_are_not_confused_with_the_second_kind(conversation):
    """A quintet generation over pairs 0-4 is no summary of segment 0-9, and
    its job no job of that range."""
    from compaction.bindings.segments import conversation_plan
    from compaction.context.projection import conversation_projection

    job_run(job_id=quintet.quintet_job(conversation, k=0).pk, provider=RecordingProvider())
    (segment_job,) = conversation_plan(conversation=conversation)
    assert segment_job.kind == "segment"
    body = conversation_projection(conversation=conversation, budget_bytes=10**6)
    assert all(block["kind"] == "raw" for block in body["blocks"])
    assert {p["reason"] for p in body["pairs"] if p["index"] < 10} == {"pending"}


SQLITE_SCRIPT = r"""
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from compaction.engine.claim import job_claim
from compaction.engine.run import job_run
from compaction.models import SummaryGeneration
from conversations.documents import validate_document
from conversations.services.ingest import conversation_ingest
from tests.compaction.bindings import quintet
from tests.factories import conversation_document

quintet.register()
conv = conversation_ingest(document=validate_document(conversation_document(30)), actor="t").conversation
first = quintet.quintet_job(conv, k=0)
assert job_run(job_id=first.pk).status == "succeeded"
parent = SummaryGeneration.objects.get(job=first)
child = quintet.quintet_job(conv, k=1, parent=parent)
late = quintet.quintet_job(conv, k=2, parent=parent)
assert job_run(job_id=child.pk).status == "succeeded"
assert SummaryGeneration.objects.get(job=child).parent_id == parent.pk
assert job_claim(job=late, worker="w", model_id=late.model_id).refused == "source_changed"
print("sqlite-quintet-ok", SummaryGeneration.objects.filter(kind=quintet.KIND).count())
"""


def test_a_second_kind_goes_through_the_engine_on_sqlite_too(tmp_path):
    assert "sqlite-quintet-ok 2" in run_on_sqlite(SQLITE_SCRIPT, tmp_path)
