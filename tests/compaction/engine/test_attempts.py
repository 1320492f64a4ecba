"""Bounded attempts (SPEC §5): at most 2 per range and prompt version, then
exhausted until an operator grants another — the rule's one home
(``engine.attempts``), pure where it can be."""

from __future__ import annotations

import pytest

from compaction.engine.attempts import failure_state, has_attempts_left, limit_after_grant
from compaction.models import CompactionJob, JobState


def job(used, limit=2):
    return CompactionJob(attempts_used=used, max_attempts=limit)


def test_a_new_job_may_make_two_attempts():
    from compaction.models.jobs import attempt_limit

    assert attempt_limit() == 2 == CompactionJob().max_attempts


@pytest.mark.parametrize("used, left", [(0, True), (1, True), (2, False), (3, False)])
def test_a_job_has_attempts_left_while_it_made_fewer_than_its_limit(used, left):
    assert has_attempts_left(job(used)) is left


@pytest.mark.parametrize("number, state", [(1, JobState.FAILED), (2, JobState.EXHAUSTED), (3, JobState.EXHAUSTED)])
def test_a_failed_attempt_leaves_the_job_failed_until_its_last_then_exhausted(number, state):
    assert failure_state(attempt_number=number, max_attempts=2) == state


def test_a_grant_lets_a_job_with_an_attempt_left_use_it():
    assert limit_after_grant(job(1), always_extra=False) == 2


def test_a_grant_gives_an_exhausted_job_one_more_attempt():
    assert limit_after_grant(job(2), always_extra=False) == 3
    # A job past its limit (attempts given back by outages) gets one past what it used.
    assert limit_after_grant(job(4, limit=3), always_extra=False) == 5


def test_a_grant_that_always_gives_an_extra_attempt_raises_the_limit_by_one():
    assert limit_after_grant(job(1), always_extra=True) == 3
    assert limit_after_grant(job(2), always_extra=True) == 3
