"""The claim is one atomic conditional write (SPEC §5), proved at the
database: the claim statement itself runs against job rows that each break
exactly one clause of the claim condition, and refuses each of them alone —
no Python pre-check, no refusal lookup, only the statement the engine runs.

Every row is built directly (a conversation, the ``Segment`` row that says
what its range's digest is now, and the job), so that each differs from a
claimable row in one field only; the control rows show the same statement
does claim a row that holds every clause.
"""

from __future__ import annotations

from datetime import timedelta
from itertools import count

import pytest
from django.db import connection
from django.utils import timezone

from compaction.bindings.segments import SEGMENTS
from compaction.engine.claim import Claimant, _statement
from compaction.models import Attempt, CompactionJob, JobState, PromptVersion
from conversations.models import Conversation, Segment

pytestmark = pytest.mark.django_db

MODEL = "model-a"
DIGEST = "d" * 64
_numbers = count()


def ids(n: int) -> list[str]:
    return [f"m-{i}" for i in range(n)]


def row(*, segment: dict | None = None, other_conversation_segment: bool = False, **job) -> CompactionJob:
    """A job in a conversation of its own; by default claimable in every
    respect (pending, 0 of 2 attempts, the claimant's model and prompt
    version, range 0-9, 20 distinct ids, the digest its range has now).
    ``segment`` overrides the ``Segment`` row's fields (``None`` values:
    no row)."""
    n = next(_numbers)
    conversation = Conversation.objects.create(scope="default", external_id=f"claim-{n}")
    fields = {"from_pair": 0, "to_pair": 9, "message_ids": ids(20), "source_digest": DIGEST, "model_id": MODEL,
              "prompt_version": current_version(), "state": JobState.PENDING, "attempts_used": 0,
              "max_attempts": 2, **job}
    seg = {"from_pair": fields["from_pair"], "to_pair": fields["to_pair"], "digest": DIGEST, **(segment or {})}
    if all(v is not None for v in seg.values()):
        owner = conversation
        if other_conversation_segment:
            owner = Conversation.objects.create(scope="default", external_id=f"claim-{n}-other")
        Segment.objects.create(conversation=owner, number=seg["from_pair"] // 10, message_ids=ids(20), **seg)
    return CompactionJob.objects.create(kind=SEGMENTS.kind, scope="default", conversation=conversation, **fields)


def current_version() -> PromptVersion:
    return PromptVersion.objects.get(name="conversation-compaction@3")


def run_claim_statement(job: CompactionJob, *, expected_attempts_used: int | None = None,
                        model_id: str = MODEL, prompt_version: PromptVersion | None = None):
    """Run the engine's claim statement for ``job`` exactly as ``job_claim``
    does, and return the row it returned (None: refused)."""
    claimant = Claimant("worker-1", model_id, (prompt_version or current_version()).pk, expected_attempts_used)
    sql, params = _statement(SEGMENTS)
    now = timezone.now()
    where = [job.pk, *params(claimant)]
    args = [claimant.worker, now + timedelta(seconds=60), now, *where]
    if connection.vendor == "postgresql":
        args += [claimant.worker, now, model_id]
    with connection.cursor() as cursor:
        cursor.execute(sql, args)
        return cursor.fetchone()


def assert_refused(job: CompactionJob, **claimant):
    before = CompactionJob.objects.values("state", "attempts_used", "lease_owner").get(pk=job.pk)
    assert run_claim_statement(job, **claimant) is None
    assert CompactionJob.objects.values("state", "attempts_used", "lease_owner").get(pk=job.pk) == before
    assert not Attempt.objects.filter(job=job).exists()


@pytest.mark.parametrize("fields", [
    {},
    {"state": JobState.FAILED, "attempts_used": 1},
    {"from_pair": 10, "to_pair": 19},
])
def test_the_claim_statement_claims_a_row_that_holds_every_clause(fields):
    job = row(**fields)
    returned = run_claim_statement(job)
    assert returned is not None
    job.refresh_from_db()
    assert (job.state, job.attempts_used, job.lease_owner) == (JobState.RUNNING, fields.get("attempts_used", 0) + 1,
                                                               "worker-1")
    if connection.vendor == "postgresql":
        # The attempt row is written by the same statement, which returns its id and number.
        attempt = Attempt.objects.get(job=job)
        assert (attempt.number, attempt.worker, attempt.outcome) == (job.attempts_used, "worker-1", "running")
        assert returned == (attempt.pk, attempt.number)
    else:
        # SQLite: the statement returns the attempt's number; job_claim writes the row in the same transaction.
        assert returned == (job.attempts_used,)


def test_the_claim_statement_claims_when_the_expected_attempt_is_the_one_made():
    job = row(state=JobState.FAILED, attempts_used=1)
    assert run_claim_statement(job, expected_attempts_used=1) is not None


@pytest.mark.parametrize("state", [JobState.RUNNING, JobState.SUCCEEDED, JobState.EXHAUSTED, JobState.STALE])
def test_the_claim_statement_refuses_a_job_that_is_not_pending_or_failed(state):
    assert_refused(row(state=state, lease_owner="w0" if state == JobState.RUNNING else "",
                       lease_expires_at=timezone.now() + timedelta(minutes=5) if state == JobState.RUNNING else None))


def test_the_claim_statement_refuses_a_running_job_even_after_its_lease_expired():
    # An expired lease is the reaper's to end (as lease_expired), never a claim's to take over.
    assert_refused(row(state=JobState.RUNNING, lease_owner="w0",
                       lease_expires_at=timezone.now() - timedelta(minutes=5)))


def test_the_claim_statement_refuses_an_attempt_already_made():
    assert_refused(row(state=JobState.FAILED, attempts_used=1), expected_attempts_used=0)


def test_the_claim_statement_refuses_a_job_without_attempts_left():
    assert_refused(row(state=JobState.FAILED, attempts_used=2, max_attempts=2))


def test_the_claim_statement_refuses_a_job_past_its_attempts():
    assert_refused(row(state=JobState.FAILED, attempts_used=3, max_attempts=2))


def test_the_claim_statement_refuses_another_model():
    assert_refused(row(), model_id="model-b")


def test_the_claim_statement_refuses_another_prompt_version():
    assert_refused(row(prompt_version=PromptVersion.objects.get(name="conversation-compaction@2")))


def test_the_claim_statement_refuses_a_range_not_starting_on_a_multiple_of_ten():
    assert_refused(row(from_pair=5, to_pair=14))


@pytest.mark.parametrize("to_pair, n_ids", [(10, 22), (8, 18)])
def test_the_claim_statement_refuses_a_range_that_is_not_ten_pairs(to_pair, n_ids):
    # The id list has the length the range implies, so only the range is wrong.
    assert_refused(row(to_pair=to_pair, message_ids=ids(n_ids)))


@pytest.mark.parametrize("message_ids", [
    ids(19),  # too few
    ids(20) + ["m-0"],  # 21 ids, 20 distinct: only the length is wrong
    ids(19) + ["m-0"],  # 20 ids, a duplicate
    ids(19) + [""],  # 20 ids, an empty one
], ids=["19-ids", "21-ids", "duplicate", "empty"])
def test_the_claim_statement_refuses_a_binding_without_twenty_distinct_non_empty_ids(message_ids):
    assert_refused(row(message_ids=message_ids))


def test_the_claim_statement_refuses_a_source_whose_digest_moved():
    assert_refused(row(segment={"digest": "e" * 64}))


def test_the_claim_statement_refuses_a_range_that_is_no_longer_planned():
    assert_refused(row(segment={"digest": None}))


def test_the_claim_statement_refuses_a_digest_that_only_another_conversation_has():
    assert_refused(row(other_conversation_segment=True))


@pytest.mark.parametrize("segment", [{"from_pair": 10}, {"to_pair": 19}], ids=["from_pair", "to_pair"])
def test_the_claim_statement_refuses_a_digest_that_only_another_range_has(segment):
    assert_refused(row(segment=segment))


def test_the_claim_statement_refuses_a_job_other_than_the_one_named():
    job, other = row(), row()
    claimant = Claimant("worker-1", MODEL, current_version().pk, None)
    sql, params = _statement(SEGMENTS)
    now = timezone.now()
    args = [claimant.worker, now + timedelta(seconds=60), now, other.pk + 1000, *params(claimant)]
    if connection.vendor == "postgresql":
        args += [claimant.worker, now, MODEL]
    with connection.cursor() as cursor:
        cursor.execute(sql, args)
        assert cursor.fetchone() is None
    assert CompactionJob.objects.filter(pk__in=[job.pk, other.pk], state=JobState.PENDING).count() == 2


def test_each_binding_kind_is_claimed_by_a_statement_with_its_own_condition():
    from compaction.bindings.handoff import HANDOFF

    segments_sql, _ = _statement(SEGMENTS)
    handoff_sql, _ = _statement(HANDOFF)
    assert SEGMENTS.current_sql(job="j")[0] in segments_sql and SEGMENTS.current_sql(job="j")[0] not in handoff_sql
    assert HANDOFF.current_sql(job="j")[0] in handoff_sql
    assert _statement(SEGMENTS)[0] == segments_sql  # built once per kind, then reused
