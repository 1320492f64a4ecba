"""The engine's per-job hot path reads and writes without the ORM's query
compiler (issue 3 "Measured": orchestration overhead per job), and must
still give exactly what the ORM would."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from compaction import services
from compaction.models import CompactionJob, JobState


def plan(conv):
    return services.conversation_plan(conversation=conv)


def test_job_load_gives_the_same_job_and_prompt_version_as_the_orm(make_conversation):
    (planned,) = plan(make_conversation(30))
    services.job_claim(job_id=planned.pk, worker="w1", model_id=planned.model_id)  # sets a lease time
    loaded = services.job_load(planned.pk)
    orm = CompactionJob.objects.select_related("prompt_version").get(pk=planned.pk)
    for field in CompactionJob._meta.concrete_fields:
        assert getattr(loaded, field.attname) == getattr(orm, field.attname), field.name
    assert isinstance(loaded.message_ids, list) and len(loaded.message_ids) == 20
    assert loaded.lease_expires_at is not None and loaded.lease_expires_at.tzinfo is not None
    for field in type(orm.prompt_version)._meta.concrete_fields:
        assert getattr(loaded.prompt_version, field.attname) == getattr(orm.prompt_version, field.attname)
    assert loaded.prompt_version.frozen_at is not None
    assert not loaded._state.adding and loaded.state == JobState.RUNNING


def test_job_load_of_a_missing_job_is_none(db):
    assert services.job_load(987654321) is None
