"""What a job is bound to (issue 10): one ``Binding`` per kind of job
(``base``), registered here by kind. ``segments`` (SPEC §5) and
``handoff`` (SPEC §7, rolling hand-off notes) are registered when Django
starts (``compaction.apps``), without touching the engine.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import Q

from ..engine.dispatch import jobs_enqueue_after_commit
from ..models import CompactionJob
from .base import Binding

_kinds: dict[str, Binding] = {}


def register(binding: Binding) -> None:
    _kinds[binding.kind] = binding


def unregister(kind: str) -> None:
    _kinds.pop(kind, None)


def binding_for(kind: str) -> Binding:
    try:
        return _kinds[kind]
    except KeyError:
        raise LookupError(f"no binding of kind {kind!r} is registered") from None


def kinds() -> list[Binding]:
    return list(_kinds.values())


def runnable_here() -> Q:
    """Jobs this deployment's providers can claim: each kind's jobs bound to
    the model its provider answers as (another model's would be refused)."""
    condition = Q(pk__in=[])
    for binding in kinds():
        condition |= Q(kind=binding.kind, model_id=binding.model_id())
    return condition


def conversation_plan(*, conversation) -> list[CompactionJob]:
    """The jobs every kind plans for ``conversation`` now."""
    return [job for binding in kinds() for job in binding.plan(conversation=conversation)]


def conversation_plan_and_enqueue(*, conversation) -> list[CompactionJob]:
    """Plan, then enqueue each new job once the planning has committed."""
    with transaction.atomic():
        created = conversation_plan(conversation=conversation)
        jobs_enqueue_after_commit([j.pk for j in created])
    return created


def generation_written_and_enqueue(*, job_id: int) -> list[CompactionJob]:
    """What the job's kind plans once the job wrote its generation (a
    rolling chain's next round), enqueued once that planning commits."""
    job = CompactionJob.objects.filter(pk=job_id).first()
    if job is None:
        return []
    try:
        binding = binding_for(job.kind)
    except LookupError:
        return []
    with transaction.atomic():
        created = binding.after_generation(job=job)
        jobs_enqueue_after_commit([j.pk for j in created])
    return created


def conversations_unplanned(*, limit: int = 100) -> list[int]:
    """Conversations some kind still has to plan jobs for."""
    found: list[int] = []
    for binding in kinds():
        found += [c for c in binding.conversations_unplanned(limit=limit) if c not in found]
    return found[:limit]
