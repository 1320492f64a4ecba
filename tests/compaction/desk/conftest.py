"""A small world for the desk tests: two scopes, jobs in every state, and
one user per role. Built through the real ingest and planning services;
job outcomes are written as the engine would record them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from compaction.models import Attempt, AttemptOutcome, CompactionJob, JobState, SummaryGeneration
from compaction.bindings.segments import conversation_plan
from conversations.documents import validate_document
from conversations.services.ingest import conversation_ingest
from tests.compaction.bindings.rolling import three_note_chain
from tests.factories import conversation_document, make_user

XSS = '<script>alert("x")</script><img src=x onerror="alert(1)">'


def ingest(doc):
    return conversation_ingest(document=validate_document(doc), actor="tests").conversation


def record_attempt(job, *, outcome, failure_code="", raw_output="", number=None, tool_calls=None):
    number = number or job.attempts_used + 1
    now = timezone.now()
    attempt = Attempt.objects.create(
        job=job, number=number, worker="worker-1", started_at=now - timedelta(seconds=3), finished_at=now,
        outcome=outcome, failure_code=failure_code, model=job.model_id,
        finish_reason="stop" if outcome == AttemptOutcome.SUCCEEDED else ("tool_calls" if tool_calls else "length"),
        input_tokens=812, output_tokens=143, latency_ms=2310, raw_output=raw_output, tool_calls=tool_calls,
    )
    job.attempts_used = number
    if outcome == AttemptOutcome.FAILED:
        job.last_failure_code = failure_code
    job.save()
    return attempt


def make_succeeded(job, *, text="Summary of the ten answers: fees were 0.00 to 9.09 EUR [a-0].", number=1):
    record_attempt(job, outcome=AttemptOutcome.SUCCEEDED, raw_output=text)
    job.state = JobState.SUCCEEDED
    job.save()
    return SummaryGeneration.objects.create(
        job=job, conversation=job.conversation, number=number, text=text, text_bytes=len(text.encode()),
        scope=job.scope, from_pair=job.from_pair, to_pair=job.to_pair, message_ids=job.message_ids,
        source_digest=job.source_digest, model_id=job.model_id, prompt_version=job.prompt_version,
    )


def make_failed(job, *, code="tool_calls", raw_output="I will call a tool now.", exhausted=False):
    record_attempt(job, outcome=AttemptOutcome.FAILED, failure_code=code, raw_output=raw_output,
                   tool_calls=[{"id": "c1", "name": "lookup", "arguments": "{}"}] if code == "tool_calls" else None)
    if exhausted:
        record_attempt(job, outcome=AttemptOutcome.FAILED, failure_code=code, raw_output=raw_output)
    job.state = JobState.EXHAUSTED if exhausted else JobState.FAILED
    job.save()
    return job


@dataclass
class World:
    conversation: object
    other_conversation: object
    succeeded: CompactionJob
    failed: CompactionJob
    exhausted: CompactionJob
    other_failed: CompactionJob
    support: object
    operator: object
    staff: object
    outsider: object


@pytest.fixture
def world(db):
    conversation = ingest(conversation_document(50, scope="default", external_id="conv-a", title="Refund for order 88232"))
    jobs = conversation_plan(conversation=conversation)
    assert [j.from_pair for j in jobs] == [0, 10, 20]
    make_succeeded(jobs[0])
    make_failed(jobs[1], code="tool_calls", raw_output="Let me look that up " + XSS)
    make_failed(jobs[2], code="too_long", exhausted=True)
    other = ingest(conversation_document(35, scope="other", external_id="conv-secret", title="Other tenant secret"))
    (other_job,) = conversation_plan(conversation=other)
    make_failed(other_job, code="empty", raw_output="other-scope-model-output")
    return World(
        conversation=conversation, other_conversation=other,
        succeeded=CompactionJob.objects.get(pk=jobs[0].pk), failed=CompactionJob.objects.get(pk=jobs[1].pk),
        exhausted=CompactionJob.objects.get(pk=jobs[2].pk), other_failed=CompactionJob.objects.get(pk=other_job.pk),
        support=make_user("sue", role="support"), operator=make_user("olga", role="operator"),
        staff=make_user("admin", staff=True, scopes=()), outsider=make_user("nobody", role=None),
    )


@pytest.fixture
def as_user(client):
    def login(user):
        client.force_login(user)
        return client

    return login


def page_urls(world):
    return {
        "conversations": reverse("desk-conversations"),
        "conversation": reverse("desk-conversation", args=[world.conversation.pk]),
        "job": reverse("desk-job", args=[world.failed.pk]),
        "queue": reverse("desk-queue"),
        "activity": reverse("desk-activity"),
    }


def rerun_post(client, job, *, reason="provider hiccup, retry", confirm="on", htmx=False, action="desk-job-rerun",
               prefix="rerun"):
    data = {f"{prefix}-reason": reason}
    if confirm:
        data[f"{prefix}-confirm"] = confirm
    extra = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    return client.post(reverse(action, args=[job.pk]), data, **extra)


@pytest.fixture
def chain(db):
    """A rolling conversation and its chain of three notes (``three_note_chain``)."""
    return three_note_chain()
