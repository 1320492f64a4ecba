"""Fixtures for the REST API tests: one user per role, and jobs with a
history (attempts, a generation, verdicts) written straight through the ORM,
as the engine would leave them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone
from rest_framework.test import APIClient

from compaction.models import Attempt, AttemptOutcome, CompactionJob, JobState, Review, SummaryGeneration
from compaction.bindings.segments import conversation_plan
from conversations.documents import validate_document
from conversations.services.ingest import conversation_ingest
from tests.compaction.bindings.rolling import ingest as ingest_document, rolling_document, three_note_chain
from tests.factories import conversation_document, make_user, token_for


@pytest.fixture(autouse=True)
def _fresh_throttle_counts(settings, request):
    # Throttle counters live in the shared cache (the database's cache table
    # unless CACHE_URL names a Redis); every test starts from zero. A test
    # that reaches the database only through a fixture gets it first.
    settings.COMPACTION_API_WRITE_RATE = "1000/minute"
    uses_db = request.node.get_closest_marker("django_db") is not None
    if not uses_db and {"db", "transactional_db"} & set(request.fixturenames):
        request.getfixturevalue("transactional_db" if "transactional_db" in request.fixturenames else "db")
        uses_db = True
    if uses_db:
        cache.clear()
    yield
    if uses_db:
        cache.clear()


def client_for(user=None, *, token: str | None = None) -> APIClient:
    client = APIClient()
    if user is not None or token is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Token {token or token_for(user)}")
    return client


@pytest.fixture
def users(db):
    return {
        "staff": make_user("root", staff=True, scopes=()),
        "operator": make_user("olga", role="operator", scopes=("default", "other")),
        "support": make_user("sam", role="support"),
        "integrator": make_user("ivan", role="integrator"),
        "norole": make_user("nobody"),
    }


@pytest.fixture
def clients(users):
    clients = {name: client_for(user) for name, user in users.items()}
    clients["anonymous"] = APIClient()
    return clients


def ingest(n_pairs: int, *, scope: str = "default", external_id: str = "conv-1"):
    doc = conversation_document(n_pairs, scope=scope, external_id=external_id)
    return conversation_ingest(document=validate_document(doc), actor="tests").conversation


def attempt(job: CompactionJob, number: int, *, outcome: str, failure_code: str = "", finish_reason: str = "stop",
            detail: str = "") -> Attempt:
    started = timezone.now() - timedelta(minutes=10 - number)
    return Attempt.objects.create(
        job=job, number=number, worker="worker-1", started_at=started, finished_at=started + timedelta(seconds=3),
        outcome=outcome, failure_code=failure_code, failure_detail=detail, model=job.model_id,
        finish_reason=finish_reason, input_tokens=1200, output_tokens=300, latency_ms=2900,
    )


def succeed(job: CompactionJob, *, text: str = "Fees were 1.01 to 9.09 EUR (a-0 .. a-9).") -> SummaryGeneration:
    attempt(job, job.attempts_used + 1, outcome=AttemptOutcome.SUCCEEDED)
    job.attempts_used += 1
    job.state = JobState.SUCCEEDED
    job.save()
    number = SummaryGeneration.objects.filter(conversation=job.conversation).count() + 1
    return SummaryGeneration.objects.create(
        job=job, conversation=job.conversation, number=number, text=text, text_bytes=len(text.encode()),
        scope=job.scope, from_pair=job.from_pair, to_pair=job.to_pair, message_ids=job.message_ids,
        source_digest=job.source_digest, model_id=job.model_id, prompt_version=job.prompt_version,
    )


def exhaust(job: CompactionJob, *, code: str = "tool_calls") -> CompactionJob:
    for number in (1, 2):
        attempt(job, number, outcome=AttemptOutcome.FAILED, failure_code=code, finish_reason="tool_calls",
                detail=f"attempt {number}: the model called a tool")
    job.attempts_used = 2
    job.state = JobState.EXHAUSTED
    job.last_failure_code = code
    job.save()
    return job


@pytest.fixture
def history(users):
    """conv-1 (45 pairs, 2 jobs): job 0-9 succeeded and approved, job 10-19
    exhausted (tool_calls); conv-2 in scope `other` (35 pairs, 1 pending job)."""
    conv = ingest(45)
    done, failed = conversation_plan(conversation=conv)
    generation = succeed(done)
    Review.objects.create(job=done, generation=generation, reviewer=users["support"], verdict="needs_work", note="thin")
    Review.objects.create(job=done, generation=generation, reviewer=users["support"], verdict="approved", note="ok now")
    exhaust(failed)
    other = ingest(35, scope="other", external_id="conv-2")
    (pending,) = conversation_plan(conversation=other)
    return {"conv": conv, "other": other, "done": done, "failed": failed, "pending": pending,
            "generation": generation}


def rolling_world() -> dict:
    """A chain of three hand-off notes in scope ``default``
    (``three_note_chain``), a segment conversation in scope ``other`` with
    its first job succeeded, and an operator of both scopes."""
    conversation, generations = three_note_chain()
    segments = ingest_document(rolling_document(34, scope="other", external_id="seg-1"))
    (segment_job, *_) = conversation_plan(conversation=segments)
    succeed(segment_job)
    user = make_user("olga", role="operator", scopes=("default", "other"))
    return {"conversation": conversation, "generations": generations, "segments": segments,
            "segment_job": segment_job, "client": client_for(user)}
