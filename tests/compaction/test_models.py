"""Which job counts for a range (CompactionJob.superseded_by and
CompactionJobQuerySet.not_superseded): the one operators act on and the
scanner retries."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from compaction.bindings.segments import conversation_plan
from compaction.engine.run import job_run
from compaction.models import CompactionJob, JobState
from tests.compaction.conftest import RecordingProvider, ingest
from tests.factories import conversation_document

CHANGED = datetime(2026, 11, 1, tzinfo=timezone.utc)


def job(pk, state, changed=False):
    return CompactionJob(pk=pk, state=state, source_changed_at=CHANGED if changed else None)


@pytest.mark.parametrize("this, others, expected", [
    # A newer job bound to the current source takes over (a newer prompt version, another model).
    (job(1, JobState.FAILED), [job(2, JobState.PENDING)], 2),
    # A newer job whose own source changed does not take over from a current one.
    (job(1, JobState.EXHAUSTED), [job(2, JobState.STALE, changed=True)], None),
    # A job whose source changed gives way to any current job, even an older one (an undone edit).
    (job(2, JobState.STALE, changed=True), [job(1, JobState.EXHAUSTED)], 1),
    (job(1, JobState.SUCCEEDED, changed=True), [job(2, JobState.PENDING)], 2),
    # Among jobs whose source changed, the newest counts.
    (job(1, JobState.STALE, changed=True), [job(2, JobState.STALE, changed=True)], 2),
    (job(2, JobState.STALE, changed=True), [job(1, JobState.STALE, changed=True)], None),
    # Alone, a job counts.
    (job(1, JobState.FAILED), [], None),
])
def test_the_job_that_counts_for_a_range(this, others, expected):
    found = this.superseded_by(others)
    assert (found.pk if found else None) == expected


def test_the_database_picks_the_same_jobs_as_the_rule(db):
    conv = ingest(conversation_document(30))
    (first,) = conversation_plan(conversation=conv)
    bad = RecordingProvider(result={"text": "", "finish_reason": "stop", "model": "extractive-v2"})
    job_run(job_id=first.pk, provider=bad)
    job_run(job_id=first.pk, provider=bad)  # exhausted
    edited = conversation_document(30)
    edited["messages"][1]["content"] = "Answer 0, corrected."
    ingest(edited)
    (second,) = conversation_plan(conversation=conv)
    ingest(conversation_document(30))  # the edit undone: first counts again, second is stale
    jobs = {j.pk: j for j in CompactionJob.objects.filter(conversation=conv)}
    assert (jobs[first.pk].state, jobs[second.pk].state) == (JobState.EXHAUSTED, JobState.STALE)
    by_rule = {pk for pk, j in jobs.items() if j.superseded_by([o for o in jobs.values() if o.pk != pk]) is None}
    assert by_rule == {first.pk}
    assert set(CompactionJob.objects.filter(conversation=conv).not_superseded().values_list("pk", flat=True)) == by_rule
