"""Helpers for the rolling hand-off tests (SPEC §7): a rolling scope, its
conversations ingested through the real ingest service, a scripted model
that writes six-section notes and keeps what it was asked, and running a
chain through the one engine the way the worker does (``job_run``, then
the binding's ``after_generation``)."""

from __future__ import annotations

from compaction.actions import do_scope_policy_set
from compaction.bindings.handoff import HANDOFF, HANDOFF_KIND, handoff_plan, note_digest
from compaction.contract import ProviderResult
from compaction.engine.run import job_run
from compaction.handoff import note as notes
from compaction.models import CompactionJob, HandoffPlan, JobState, Policy, SummaryGeneration
from compaction.providers.base import Provider
from compaction.providers.handoff_extractive import HANDOFF_EXTRACTIVE_MODEL_ID
from conversations.documents import validate_document
from conversations.services.ingest import conversation_ingest
from tests.factories import pair_messages

SCOPE = "rolling"


def rolling_scope(scope: str = SCOPE, **thresholds):
    """The scope set to the rolling policy, the rest of the thresholds at
    their defaults."""
    return do_scope_policy_set(scope=scope, actor="tests", reason="tests", policy=Policy.ROLLING, **thresholds)


def user_text(i: int) -> str:
    return f"Request {i}: please keep order #{1000 + i} under {50 + i} EUR, only in blue."


def answer_text(i: int) -> str:
    return f"Answer {i}: noted, order #{1000 + i} stays under {50 + i} EUR and blue; nothing else changed."


def rolling_document(n_pairs: int, *, scope: str = SCOPE, external_id: str = "chain-1", start: int = 0,
                     texts=None) -> dict:
    """Pairs ``start … start + n_pairs - 1``, each a user request and its answer
    (``texts(i)`` may give other ``(user, answer)``); sending a later range
    appends to the same conversation."""
    runs, messages = [], []
    for i in range(start, start + n_pairs):
        user, answer = texts(i) if texts else (user_text(i), answer_text(i))
        run, msgs = pair_messages(i, user_text=user, assistant_text=answer)
        runs.append(run)
        messages.extend(msgs)
    return {"scope": scope, "id": external_id, "title": "A rolling conversation", "metadata": {}, "runs": runs,
            "messages": messages}


def ingest(document: dict):
    return conversation_ingest(document=validate_document(document), actor="tests").conversation


def edit_message(conversation, message_id: str, content: str):
    """Send one message again with other content (a revision)."""
    from conversations.models import Message

    m = Message.objects.get(conversation=conversation, external_id=message_id)
    document = {"scope": conversation.scope, "id": conversation.external_id, "messages": [{
        "id": m.external_id, "run_id": m.run.external_id, "role": m.role, "content": content, "status": m.status,
        "created_at": m.created_at.isoformat().replace("+00:00", "Z")}]}
    return conversation_ingest(document=validate_document(document), actor="tests")


def scripted_note(generation: int, *, language: str = notes.EN) -> str:
    return notes.render({
        notes.REQUESTS: [f"Matter of generation {generation} (quote: \"keep it under 60 EUR\")"],
        notes.TODOS: [f"Follow up generation {generation}"],
        notes.NEXT_STEP: [], notes.PROGRESS: [], notes.DEAD_ENDS: [], notes.DONE: [],
    }, language=language)


class ScriptedHandoffModel(Provider):
    """Answers each hand-off request with a six-section note naming its
    generation (or what ``results`` scripts, in order), and keeps every
    request it was given — what a model endpoint would see."""

    name = "scripted-handoff"
    model_id = HANDOFF_EXTRACTIVE_MODEL_ID

    def __init__(self, results=None):
        self.requests = []
        self.results = list(results or [])

    def summarise(self, request):
        self.requests.append(request)
        if self.results:
            scripted = self.results.pop(0)
            return ProviderResult(**{"finish_reason": "stop", "model": self.model_id, **scripted})
        text = scripted_note(len(self.requests))
        return ProviderResult(text=text, finish_reason="stop", model=self.model_id, raw=text)


def run_chain(conversation, *, provider=None, limit: int = 100) -> list[SummaryGeneration]:
    """Plan, then run every pending hand-off job of the conversation as the
    worker would — the attempt, then what follows its generation — until
    none is left; the chain's generations in the order written."""
    handoff_plan(conversation=conversation)
    for _ in range(limit):
        pending = list(CompactionJob.objects.filter(conversation=conversation, kind=HANDOFF_KIND,
                                                    state=JobState.PENDING).order_by("pk"))
        if not pending:
            break
        for job in pending:
            outcome = job_run(job_id=job.pk, provider=provider)
            if outcome.generation_id is not None:
                # What the worker's task asks next (``bindings.generation_written_and_enqueue``),
                # without sending anything to a broker.
                HANDOFF.after_generation(job=CompactionJob.objects.get(pk=job.pk))
    return list(SummaryGeneration.objects.filter(conversation=conversation, kind=HANDOFF_KIND).order_by("number"))


def handoff_jobs(conversation):
    return CompactionJob.objects.filter(conversation=conversation, kind=HANDOFF_KIND).order_by("pk")


def three_note_chain(scope: str = "default"):
    """A rolling conversation of 34 pairs in ``scope`` (a note every 20
    messages, the newest 4 turns kept raw) and the chain of three notes the
    engine writes over it: ``(conversation, generations)``."""
    rolling_scope(scope=scope, recent_turns=4, min_new_token_count=0, max_compaction_batch_messages=20)
    conversation = ingest(rolling_document(34, scope=scope))
    return conversation, run_chain(conversation, provider=ScriptedHandoffModel())


def handoff_child(conversation, *, parent, from_pair: int, to_pair: int, message_ids: list, source_digest: str,
                  model_id: str = "other-model", parent_digest: str | None = None) -> CompactionJob:
    """A hand-off job written by hand, not planned: a child of ``parent``
    (bound to its note's digest unless ``parent_digest`` says otherwise)
    over ``from_pair … to_pair``, with the plan row a planned one has."""
    job = CompactionJob.objects.create(
        kind=HANDOFF_KIND, scope=conversation.scope, conversation=conversation, from_pair=from_pair, to_pair=to_pair,
        message_ids=message_ids, source_digest=source_digest, model_id=model_id,
        prompt_version=parent.prompt_version, parent_generation=parent,
        parent_digest=note_digest(parent.text) if parent_digest is None else parent_digest)
    HandoffPlan.objects.create(job=job, reason="tokens", current_digest=job.source_digest)
    return job
