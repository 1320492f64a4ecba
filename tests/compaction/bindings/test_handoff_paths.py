"""The rolling policy end to end: ingest plans it once the ingest commits,
the periodic scan and ``compact`` run it, one provider setting serves both
policies (each with its own prompt), and the whole path runs on SQLite too."""

from __future__ import annotations

import pytest

from compaction import providers
from compaction.bindings.handoff import HANDOFF, HANDOFF_KIND
from compaction.engine import dispatch
from compaction.engine.run import job_run
from compaction.handoff import prompt
from compaction.models import CompactionJob, JobState, SummaryGeneration
from compaction.providers.handoff_extractive import HandoffExtractiveProvider
from tests.compaction.bindings.rolling import (handoff_jobs, ingest, rolling_document, rolling_scope, scripted_note)
from tests.compaction.conftest import run_on_sqlite
from tests.compaction.providers.openai_server import SCRIPTS, ScriptedServer, completion
from tests.factories import run_command

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(monkeypatch):
    """What would go to the broker, sent at once instead of after commit."""
    sent = []
    monkeypatch.setattr(dispatch, "after_commit", lambda send: send())
    monkeypatch.setattr(dispatch, "send", lambda name, *args: sent.append((name, args)))
    return sent


def test_every_ingest_of_a_rolling_conversation_asks_for_planning_once_it_commits(settings, sent):
    settings.COMPACTION_AUTO_PLAN = True
    rolling_scope()
    conversation = ingest(rolling_document(3))
    ingest(rolling_document(1, start=3))  # no new segment: a segment scope would ask for nothing
    assert sent == [(dispatch.PLAN_CONVERSATIONS, ([conversation.pk],))] * 2


def test_an_ingest_of_a_segment_scope_without_new_segments_asks_for_nothing(settings, sent):
    settings.COMPACTION_AUTO_PLAN = True
    ingest(rolling_document(3, scope="segments-scope"))
    ingest(rolling_document(1, scope="segments-scope", start=3))
    assert sent == []


def test_the_planning_task_plans_the_chain_and_enqueues_its_first_job(sent):
    from compaction.tasks import plan_conversation

    rolling_scope(recent_turns=0, min_new_token_count=0)
    conversation = ingest(rolling_document(12))
    (job_id,) = plan_conversation(conversation.pk)
    assert CompactionJob.objects.get(pk=job_id).kind == HANDOFF_KIND
    assert sent == [(dispatch.RUN_JOB, (job_id, 0))]


def test_the_periodic_scan_plans_rolling_conversations_nobody_planned(sent):
    from compaction.tasks import reap_and_scan

    rolling_scope(recent_turns=0, min_new_token_count=0)
    conversation = ingest(rolling_document(12))
    result = reap_and_scan()
    assert conversation.pk in result["planned"]
    assert (dispatch.PLAN_CONVERSATIONS, ([conversation.pk],)) in sent


def test_compact_inline_runs_a_whole_chain_round_after_round():
    rolling_scope(recent_turns=0, min_new_token_count=0, max_compaction_batch_messages=10)
    conversation = ingest(rolling_document(20))
    out, err, failed = run_command("compact", "--inline", "--conversation", conversation.external_id)
    assert failed is None, err
    generations = SummaryGeneration.objects.filter(conversation=conversation).order_by("number")
    assert [(g.from_pair, g.to_pair) for g in generations] == [(0, 4), (5, 9), (10, 14), (15, 19)]
    assert out.count("succeeded generation #") == 4
    assert "bound to another model" not in err


def test_extractive_means_the_offline_hand_off_builder_for_rolling_scopes(settings):
    settings.COMPACTION_PROVIDER = "extractive"
    assert isinstance(HANDOFF.provider(), HandoffExtractiveProvider)
    assert HANDOFF.model_id() == "handoff-extractive-v1"
    assert providers.provider_get().model_id == "extractive-v2"  # segments keep theirs


def test_openai_serves_rolling_scopes_with_the_handoff_prompt(settings, monkeypatch):
    server = ScriptedServer()
    try:
        settings.COMPACTION_PROVIDER = "openai"
        settings.COMPACTION_MODEL = "test-model"
        settings.OPENAI_BASE_URL = server.base_url
        settings.OPENAI_API_KEY = "sk-test"
        settings.OPENAI_TIMEOUT_SECONDS = 5
        note = scripted_note(1)
        monkeypatch.setitem(SCRIPTS, "note", (200, completion(f"<summary>\n{note}\n</summary>"), 0))
        server.default = "note"
        rolling_scope(recent_turns=0, min_new_token_count=0)
        conversation = ingest(rolling_document(12))
        from compaction.bindings.handoff import handoff_plan

        (job,) = handoff_plan(conversation=conversation)
        assert job.model_id == "test-model"
        outcome = job_run(job_id=job.pk)
        assert outcome.status == "succeeded", outcome
        assert SummaryGeneration.objects.get(job=job).text == note
        (request,) = server.requests
        system, user = request["body"]["messages"]
        assert system == {"role": "system", "content": prompt.render_system("en")}
        assert "Request 0: please keep order #1000" in user["content"]  # user text is material
        assert request["body"]["model"] == "test-model"
    finally:
        server.close()


def test_a_job_of_another_model_is_not_claimed_by_this_deployment(settings):
    rolling_scope(recent_turns=0, min_new_token_count=0)
    conversation = ingest(rolling_document(12))
    from compaction.bindings.handoff import handoff_plan

    (job,) = handoff_plan(conversation=conversation)
    CompactionJob.objects.filter(pk=job.pk).update(model_id="someone-else")
    outcome = job_run(job_id=job.pk)
    assert (outcome.status, outcome.detail) == ("skipped", "model_mismatch")
    assert handoff_jobs(conversation).get().state == JobState.PENDING


SQLITE_SCRIPT = r"""
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
call_command("scope_policy", "rolling", "--policy", "rolling", "--recent-turns", "2", "--min-new-token-count", "0",
             "--max-compaction-batch-messages", "10")
from compaction.bindings.handoff import HANDOFF, handoff_plan
from compaction.context.projection import conversation_projection
from compaction.engine.run import job_run
from compaction.models import CompactionJob, SummaryGeneration
from tests.compaction.bindings.rolling import edit_message, ingest, rolling_document

conv = ingest(rolling_document(17))

def run_all():
    handoff_plan(conversation=conv)
    while True:
        pending = list(CompactionJob.objects.filter(conversation=conv, state="pending"))
        if not pending:
            return
        for job in pending:
            assert job_run(job_id=job.pk).status == "succeeded"
            HANDOFF.after_generation(job=CompactionJob.objects.get(pk=job.pk))

run_all()
gens = list(SummaryGeneration.objects.filter(conversation=conv).order_by("number"))
assert [(g.from_pair, g.to_pair) for g in gens] == [(0, 4), (5, 9), (10, 14)], gens
assert [g.parent_id for g in gens] == [None, gens[0].pk, gens[1].pk]
body = conversation_projection(conversation=conv, budget_bytes=10**6)
assert body["blocks"][0]["kind"] == "handoff" and body["blocks"][0]["generation"] == gens[2].pk
edit_message(conv, "a-7", "Answer 7: corrected.")
stale = [CompactionJob.objects.get(pk=g.job_id).source_changed_at is not None for g in gens]
assert stale == [False, True, True], stale
assert conversation_projection(conversation=conv, budget_bytes=10**6)["blocks"][0]["generation"] == gens[0].pk
run_all()
valid = [g for g in SummaryGeneration.objects.filter(conversation=conv).order_by("number")
         if CompactionJob.objects.get(pk=g.job_id).source_changed_at is None]
assert [(g.from_pair, g.to_pair) for g in valid] == [(0, 4), (5, 9), (10, 14)]
assert valid[1].parent_id == gens[0].pk and valid[1].pk != gens[1].pk
print("sqlite-rolling-ok", SummaryGeneration.objects.count())
"""


def test_the_whole_rolling_path_runs_on_sqlite_too(tmp_path):
    assert "sqlite-rolling-ok 5" in run_on_sqlite(SQLITE_SCRIPT, tmp_path)


def test_verify_sources_recomputes_hand_off_bindings_and_names_a_broken_chain():
    from tests.compaction.bindings.rolling import ScriptedHandoffModel, edit_message, run_chain

    rolling_scope(recent_turns=0, min_new_token_count=0, max_compaction_batch_messages=10)
    conversation = ingest(rolling_document(15))
    generations = run_chain(conversation, provider=ScriptedHandoffModel())
    out, _, _ = run_command("verify_sources")
    assert "3 binding(s) checked, 0 stale" in out and "3 of them rolling hand-off job(s), 0 stored" in out
    edit_message(conversation, "u-6", "Request 6: changed.")
    out, _, _ = run_command("verify_sources")
    assert f"STALE job {generations[1].job_id} " in out and "digest differs" in out
    assert f"STALE job {generations[2].job_id} " in out and "its chain broke above it" in out
    assert f"STALE job {generations[0].job_id} " not in out
    assert "3 binding(s) checked, 2 stale" in out and "0 stored material digest(s) out of date" in out


def test_compact_wait_knows_when_the_chain_has_been_asked_what_follows():
    from django.utils import timezone

    from compaction.bindings.handoff import chain_caught_up, handoff_plan
    from tests.compaction.bindings.rolling import ScriptedHandoffModel

    rolling_scope(recent_turns=0, min_new_token_count=0, max_compaction_batch_messages=10)
    conversation = ingest(rolling_document(10))
    since = timezone.now()
    (job,) = handoff_plan(conversation=conversation)
    jobs = CompactionJob.objects.filter(conversation=conversation)
    assert chain_caught_up(jobs, since=since)
    job_run(job_id=job.pk, provider=ScriptedHandoffModel())
    assert not chain_caught_up(jobs, since=since)  # written, nobody asked the trigger since
    HANDOFF.after_generation(job=CompactionJob.objects.get(pk=job.pk))
    assert chain_caught_up(jobs, since=since)
