"""Fixtures for the provider tests: a scripted OpenAI-compatible server on a
real socket, the settings that point the engine at it, and one job run end
to end against a reply."""

from __future__ import annotations

import pytest



def run_once_against(reply, server, make_conversation, monkeypatch):
    """One job run end to end against a server that answers ``reply``
    (``(status, body, delay)``, body bytes or JSON); returns the job
    (re-read), the run's outcome and its one attempt."""
    from compaction.bindings.segments import conversation_plan
    from compaction.engine.run import job_run
    from compaction.models import Attempt
    from tests.compaction.providers import openai_server

    monkeypatch.setitem(openai_server.SCRIPTS, "odd", reply)
    (job,) = conversation_plan(conversation=make_conversation(30))
    server.queue("odd")
    outcome = job_run(job_id=job.pk)
    job.refresh_from_db()
    return job, outcome, Attempt.objects.get(job=job)
