"""The chain stays linear under racing workers, on PostgreSQL with real
connections (SPEC §7: a generation whose parent is not the newest valid
generation cannot be claimed; §5: the claim is one conditional write)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from compaction.bindings.handoff import handoff_plan
from compaction.engine.claim import job_claim
from compaction.engine.run import job_run
from compaction.models import Attempt, CompactionJob, JobState, SummaryGeneration
from tests.compaction.bindings.rolling import (ScriptedHandoffModel, handoff_child, ingest, rolling_document,
                                               rolling_scope, run_chain)
from tests.compaction.conftest import live_db
from tests.compaction.engine.test_claim_concurrency import run_threads

pytestmark = live_db


def require_postgres():
    if connection.vendor != "postgresql":
        pytest.skip("concurrency is checked on PostgreSQL")


class Gate(ScriptedHandoffModel):
    """Holds every caller until ``n`` of them are inside the model call, so
    both workers have claimed before either finishes."""

    def __init__(self, n):
        super().__init__()
        self.barrier = threading.Barrier(n, timeout=30)
        self.lock = threading.Lock()

    def summarise(self, request):
        self.barrier.wait()
        with self.lock:
            return super().summarise(request)


def test_two_workers_writing_children_of_one_parent_make_one_generation():
    require_postgres()
    rolling_scope(recent_turns=0, min_new_token_count=0, max_compaction_batch_messages=20)
    conversation = ingest(rolling_document(20))
    (first,) = handoff_plan(conversation=conversation)
    job_run(job_id=first.pk, provider=ScriptedHandoffModel())
    parent = SummaryGeneration.objects.get(job=first)
    assert parent.to_pair == 9
    # Two children of the tip over different material ends (their bindings differ).
    jobs = []
    for to_pair in (18, 19):
        jobs.append(handoff_child(
            conversation, parent=parent, from_pair=10, to_pair=to_pair,
            message_ids=[x for i in range(10, to_pair + 1) for x in (f"u-{i}", f"a-{i}")],
            source_digest=_digest(conversation, 10, to_pair), model_id=parent.model_id))
    gate = Gate(2)
    outcomes = run_threads(2, lambda i: job_run(job_id=jobs[i].pk, provider=gate, worker=f"w{i}"))
    assert sorted(o.status for o in outcomes) == ["stale", "succeeded"]
    children = SummaryGeneration.objects.filter(conversation=conversation, parent=parent)
    assert children.count() == 1
    loser = next(o for o in outcomes if o.status == "stale")
    assert Attempt.objects.get(job_id=loser.job_id).failure_code == "source_changed"
    assert CompactionJob.objects.get(pk=loser.job_id).state == JobState.STALE


def test_many_workers_claiming_a_child_of_a_parent_that_is_no_longer_the_tip_all_fail():
    require_postgres()
    rolling_scope(recent_turns=0, min_new_token_count=0, max_compaction_batch_messages=20)
    conversation = ingest(rolling_document(30))
    generations = run_chain(conversation, provider=ScriptedHandoffModel())
    assert len(generations) == 3
    first, second = generations[0], generations[1]
    late = handoff_child(conversation, parent=first, from_pair=10, to_pair=19, message_ids=second.message_ids,
                         source_digest=second.source_digest)
    claims = run_threads(8, lambda i: job_claim(job_id=late.pk, worker=f"w{i}", model_id="other-model"))
    assert all(c.attempt is None for c in claims)
    assert "source_changed" in {c.refused for c in claims}
    assert not Attempt.objects.filter(job=late).exists()
    assert CompactionJob.objects.get(pk=late.pk).state == JobState.STALE


def test_many_workers_claiming_the_chains_next_job_make_one_attempt():
    require_postgres()
    rolling_scope(recent_turns=0, min_new_token_count=0, max_compaction_batch_messages=20)
    conversation = ingest(rolling_document(20))
    (job,) = handoff_plan(conversation=conversation)
    claims = run_threads(8, lambda i: job_claim(job_id=job.pk, worker=f"w{i}", model_id=job.model_id))
    assert len([c for c in claims if c.attempt is not None]) == 1
    assert Attempt.objects.filter(job=job).count() == 1


def _digest(conversation, lo, hi):
    from compaction.bindings.handoff_material import stored_pairs
    from compaction.digest import range_digest

    return range_digest(stored_pairs(conversation.pk, lo, hi), lo, hi)[0]
