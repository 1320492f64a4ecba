"""Writes for the engine: jobs, claims, attempts, generations, operator actions.

Every function here is a service in the HackSoft sense: keyword-only
arguments, one transaction where it writes.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from .models import CompactionJob, JobState, PromptVersion

# A job in one of these states has not produced anything yet, so a changed
# source simply makes it stale: it will never run against the old binding.
_STALEABLE = (JobState.PENDING, JobState.FAILED, JobState.EXHAUSTED)


def jobs_sources_changed(*, conversation, changes) -> int:
    """Mark stale every unfinished job whose range's digest moved away from
    its binding. Called inside the ingest transaction (SPEC §5)."""
    marked = 0
    with transaction.atomic():
        for change in changes:
            if change.old_digest is None:
                continue
            qs = CompactionJob.objects.filter(
                conversation=conversation, from_pair=change.from_pair, state__in=_STALEABLE
            )
            if change.new_digest is not None:
                qs = qs.exclude(source_digest=change.new_digest)
            marked += qs.update(state=JobState.STALE, updated_at=timezone.now())
    return marked


def prompt_version_current() -> PromptVersion:
    return PromptVersion.objects.get(is_current=True)


def conversation_plan(*, conversation, prompt_version: PromptVersion | None = None,
                      model_id: str | None = None) -> list[CompactionJob]:
    """Create a pending job for every planned segment that has no job for its
    current binding (range, digest, model, prompt version). Idempotent: the
    unique binding constraint makes concurrent planners create each job once.
    Returns the jobs created by this call."""
    from conversations.models import Segment

    from .providers import configured_model_id

    prompt_version = prompt_version or prompt_version_current()
    model_id = model_id or configured_model_id()
    created: list[CompactionJob] = []
    segments = Segment.objects.filter(conversation=conversation).order_by("from_pair")
    existing = set(
        CompactionJob.objects.filter(
            conversation=conversation, prompt_version=prompt_version, model_id=model_id
        ).values_list("from_pair", "source_digest")
    )
    for segment in segments:
        if (segment.from_pair, segment.digest) in existing:
            continue
        with transaction.atomic():
            job, was_created = CompactionJob.objects.get_or_create(
                conversation=conversation,
                from_pair=segment.from_pair,
                to_pair=segment.to_pair,
                prompt_version=prompt_version,
                model_id=model_id,
                source_digest=segment.digest,
                defaults={"scope": conversation.scope, "message_ids": segment.message_ids},
            )
        if was_created:
            created.append(job)
    return created
