"""SPEC §6: which summary a segment may use, and why not — pure, no database."""

import pytest

from compaction.context.selection import GenerationFacts, JobFacts, choose_summary

DIGEST = "d" * 64
OLD = "0" * 64


def gen(id=1, version=3, accepted=True, digest=DIGEST, state="succeeded", number=None, from_pair=0, to_pair=9):
    return GenerationFacts(
        id=id, from_pair=from_pair, to_pair=to_pair, source_digest=digest,
        prompt_version=f"conversation-compaction@{version}", version=version, accepted=accepted,
        job_state=state, number=number if number is not None else id, text_bytes=100,
    )


def job(id=1, state="pending", version=3, accepted=True, digest=DIGEST):
    return JobFacts(id=id, source_digest=digest, state=state, version=version, accepted=accepted)


def choose(generations=(), jobs=()):
    return choose_summary(from_pair=0, to_pair=9, digest=DIGEST, generations=generations, jobs=jobs)


def test_newest_accepted_prompt_version_wins():
    chosen, reason = choose([gen(id=1, version=2, number=5), gen(id=2, version=3, number=1)])
    assert chosen.id == 2 and reason is None


def test_version_1_is_never_used_even_when_it_matches():
    chosen, reason = choose([gen(id=1, version=1, accepted=False)])
    assert chosen is None and reason == "not_accepted_version"


def test_older_accepted_version_is_used_when_the_newest_is_stale():
    chosen, reason = choose([gen(id=1, version=2), gen(id=2, version=3, digest=OLD)])
    assert chosen.id == 1 and reason is None


def test_summary_of_an_older_source_is_stale():
    assert choose([gen(digest=OLD)]) == (None, "stale_source")


def test_generation_for_another_range_is_not_used():
    assert choose([gen(from_pair=0, to_pair=19)]) == (None, "pending")


def test_generation_whose_job_did_not_succeed_is_not_used():
    chosen, _ = choose([gen(state="failed")])
    assert chosen is None


@pytest.mark.parametrize("state,reason", [
    ("failed", "failed"), ("exhausted", "exhausted"), ("pending", "pending"),
    ("running", "pending"), ("stale", "stale_source"),
])
def test_current_binding_job_state_gives_the_reason(state, reason):
    assert choose(jobs=[job(state=state)]) == (None, reason)


def test_no_job_at_all_is_pending():
    assert choose() == (None, "pending")


def test_failure_of_the_current_source_outranks_a_stale_older_summary():
    assert choose([gen(digest=OLD)], [job(state="failed")]) == (None, "failed")


def test_pending_rerun_does_not_hide_that_the_existing_summary_is_stale():
    assert choose([gen(digest=OLD)], [job(state="pending")]) == (None, "stale_source")


def test_newest_version_job_decides_between_jobs():
    assert choose(jobs=[job(id=1, state="failed", version=2), job(id=2, state="exhausted", version=3)]) == (None, "exhausted")


def test_jobs_for_an_older_source_or_unaccepted_version_do_not_give_the_reason():
    assert choose(jobs=[job(state="failed", digest=OLD), job(id=2, state="failed", version=1, accepted=False)]) == (None, "pending")


def test_an_unaccepted_summary_of_an_older_source_is_not_accepted_version_not_stale():
    # Stale means an accepted summary exists for an older source; a @1
    # summary was never going to be used, whatever its source.
    assert choose([gen(version=1, accepted=False, digest=OLD)]) == (None, "not_accepted_version")


def test_an_accepted_summary_of_the_current_source_whose_job_did_not_succeed_is_not_stale():
    assert choose([gen(state="failed")]) == (None, "pending")
