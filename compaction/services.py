"""Writes for the engine: jobs, claims, attempts, generations, operator actions.

Every function here is a service in the HackSoft sense: keyword-only
arguments, one transaction where it writes.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from .models import CompactionJob, JobState

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
