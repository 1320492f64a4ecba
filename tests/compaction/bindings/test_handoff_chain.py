"""A rolling conversation's chain of hand-off notes through the one engine
(SPEC §7): what each request holds, the parent binding and the linear
chain, a changed ancestor breaking the chain and its re-planning, and the
note's contract."""

from __future__ import annotations

import hashlib

import pytest

from compaction.bindings.handoff import HANDOFF, HANDOFF_KIND, handoff_plan
from compaction.context.projection import conversation_projection
from compaction.contract import MALFORMED_NOTE
from compaction.engine.claim import job_claim
from compaction.engine.run import job_run
from compaction.handoff import note as notes
from compaction.models import Attempt, CompactionJob, HandoffPlan, JobState, SummaryGeneration
from compaction.providers.handoff_extractive import HandoffInput
from tests.compaction.bindings.rolling import (ScriptedHandoffModel, answer_text, edit_message, handoff_child,
                                               handoff_jobs, ingest, rolling_document, rolling_scope, run_chain,
                                               scripted_note, user_text)

pytestmark = pytest.mark.django_db

# 46 pairs, the newest 6 raw, 10 pairs a batch: four generations over 0-9,
# 10-19, 20-29, 30-39.
BATCH = 20  # messages


@pytest.fixture
def chain():
    rolling_scope(recent_turns=6, min_new_token_count=0, max_compaction_batch_messages=BATCH)
    conversation = ingest(rolling_document(46))
    model = ScriptedHandoffModel()
    generations = run_chain(conversation, provider=model)
    return conversation, model, generations


def test_a_chain_of_several_generations_each_written_from_its_parent(chain):
    conversation, model, generations = chain
    assert [(g.number, g.from_pair, g.to_pair) for g in generations] == [
        (1, 0, 9), (2, 10, 19), (3, 20, 29), (4, 30, 39)]
    assert [g.parent_id for g in generations] == [None] + [g.pk for g in generations[:-1]]
    for parent, child in zip(generations, generations[1:]):
        assert child.parent_digest == hashlib.sha256(parent.text.encode()).hexdigest()
    assert generations[0].parent_digest == ""
    assert all(g.kind == HANDOFF_KIND and g.prompt_version.name == "handoff@1" for g in generations)
    assert all(g.model_id == "handoff-extractive-v1" for g in generations)


def test_each_request_holds_exactly_the_parents_note_and_the_new_material_and_nothing_older(chain):
    conversation, model, generations = chain
    assert len(model.requests) == 4
    for k, (request, generation) in enumerate(zip(model.requests, generations)):
        given: HandoffInput = request.extra["handoff"]
        parent = generations[k - 1].text if k else None
        assert given.parent_note == parent
        assert [p.index for p in given.material.pairs] == list(range(generation.from_pair, generation.to_pair + 1))
        assert [(p.user_text, p.assistant_text) for p in given.material.pairs] == [
            (user_text(i), answer_text(i)) for i in range(generation.from_pair, generation.to_pair + 1)]
        # The model's prompt: the parent note, the new material with user text, nothing older.
        text = request.system + request.user
        assert request.prompt_version == "handoff@1"
        if parent:
            assert parent in request.user
        else:
            assert "(none: this is the first generation)" in request.user
        for i in range(generation.from_pair, generation.to_pair + 1):
            assert f"User: {user_text(i)}" in request.user and f"Assistant: {answer_text(i)}" in request.user
        for i in list(range(0, generation.from_pair)) + list(range(generation.to_pair + 1, 46)):
            assert user_text(i) not in text and answer_text(i) not in text
        assert request.answers == ()


def test_the_tool_results_of_the_materials_runs_ride_along(db):
    rolling_scope(recent_turns=0, min_new_token_count=0)
    document = rolling_document(6)
    run = document["runs"][2]["id"]
    document["messages"][4:4] = [
        {"id": "call-msg", "run_id": run, "role": "assistant", "content": "", "status": "completed",
         "created_at": "2026-11-01T10:04:10Z",
         "tool_calls": [{"id": "call-1", "name": "submit_ticket", "arguments": "{\"order\": \"1002\"}"}]},
        {"id": "tool-msg", "run_id": run, "role": "tool", "tool_call_id": "call-1", "status": "completed",
         "content": "{\"ok\": true, \"ticket_id\": \"RMA-7781\"}", "created_at": "2026-11-01T10:04:20Z"},
    ]
    conversation = ingest(document)
    model = ScriptedHandoffModel()
    run_chain(conversation, provider=model)
    (result,) = model.requests[0].extra["handoff"].material.tool_results
    assert (result.pair_index, result.message_id, result.call_id, result.tool, result.ok) == (
        2, "tool-msg", "call-1", "submit_ticket", True)
    assert "RMA-7781" not in model.requests[0].user  # tool results are not material


def test_the_offline_builder_writes_the_chain_in_the_materials_language(db):
    rolling_scope(recent_turns=0, min_new_token_count=0, max_compaction_batch_messages=10)
    chinese = lambda i: (f"第{i}个问题：订单{1000 + i}只要蓝色，预算{50 + i}元以内。", f"好的，订单{1000 + i}记下了。")  # noqa: E731
    conversation = ingest(rolling_document(10, texts=chinese))
    generations = run_chain(conversation)  # the configured provider: extractive means handoff-extractive
    assert len(generations) == 2
    assert all(notes.parse(g.text).language == notes.ZH for g in generations)
    assert generations[0].model_id == "handoff-extractive-v1"


def test_an_edit_inside_generation_2s_material_turns_2_onward_stale_and_replans_from_1(chain):
    conversation, model, generations = chain
    g1, g2, g3, g4 = generations
    edit_message(conversation, "a-13", "Answer 13: corrected — order #1013 is now under 70 EUR.")
    jobs = {g.number: CompactionJob.objects.get(pk=g.job_id) for g in generations}
    assert jobs[1].source_changed_at is None
    assert all(jobs[n].source_changed_at is not None for n in (2, 3, 4))
    assert all(jobs[n].state == JobState.SUCCEEDED for n in (2, 3, 4))  # the generations stay, immutable
    for n in (2, 3, 4):
        plan = HandoffPlan.objects.get(job=jobs[n])
        assert (plan.break_generation_id, plan.break_pair) == (g2.pk, 13)
    assert HandoffPlan.objects.get(job=jobs[2]).current_digest != g2.source_digest
    assert HandoffPlan.objects.get(job=jobs[3]).current_digest == g3.source_digest  # its own material is unchanged
    # The projection falls back to generation 1's note.
    body = conversation_projection(conversation=conversation, budget_bytes=10**6)
    assert body["blocks"][0]["kind"] == "handoff" and body["blocks"][0]["generation"] == g1.pk
    assert {p["reason"] for p in body["pairs"] if 10 <= p["index"] <= 39} == {"stale_source"}
    # Re-planned from generation 1, over the edited material.
    (job,) = handoff_plan(conversation=conversation)
    assert (job.parent_generation_id, job.from_pair, job.to_pair) == (g1.pk, 10, 19)
    assert job.source_digest != g2.source_digest
    again = run_chain(conversation, provider=model)
    valid = [g for g in again if CompactionJob.objects.get(pk=g.job_id).source_changed_at is None]
    assert [(g.from_pair, g.to_pair) for g in valid] == [(0, 9), (10, 19), (20, 29), (30, 39)]
    assert valid[0].pk == g1.pk and valid[1].parent_id == g1.pk
    assert "corrected — order #1013" in model.requests[4].user


def test_an_edit_undone_before_the_replan_runs_revives_the_old_chain(chain):
    conversation, model, generations = chain
    edit_message(conversation, "u-25", "Request 25: something else entirely.")
    assert CompactionJob.objects.get(pk=generations[2].job_id).source_changed_at is not None
    assert CompactionJob.objects.get(pk=generations[1].job_id).source_changed_at is None
    edit_message(conversation, "u-25", user_text(25))
    assert handoff_plan(conversation=conversation) == []  # nothing to run: the old generations are valid again
    assert all(CompactionJob.objects.get(pk=g.job_id).source_changed_at is None for g in generations)
    assert not handoff_jobs(conversation).filter(state=JobState.PENDING).exists()
    assert SummaryGeneration.objects.filter(conversation=conversation).count() == 4


def test_an_open_job_over_changed_material_turns_stale(db):
    rolling_scope(recent_turns=0, min_new_token_count=0)
    conversation = ingest(rolling_document(12))
    (job,) = handoff_plan(conversation=conversation)
    edit_message(conversation, "u-4", "Request 4: changed.")
    job.refresh_from_db()
    assert job.state == JobState.STALE and job.source_changed_at is not None
    (again,) = handoff_plan(conversation=conversation)
    assert again.pk != job.pk and again.state == JobState.PENDING


def test_a_job_whose_parent_is_not_the_newest_generation_cannot_be_claimed(chain):
    conversation, model, generations = chain
    g3, g4 = generations[2], generations[3]
    # A second child of generation 3 (as if planned twice): its parent is no longer the tip.
    late = handoff_child(conversation, parent=g3, from_pair=30, to_pair=39, message_ids=g4.message_ids,
                         source_digest=g4.source_digest)
    claim = job_claim(job=late, worker="w", model_id="other-model")
    assert (claim.attempt, claim.refused) == (None, "source_changed")
    late.refresh_from_db()
    assert late.state == JobState.STALE and not Attempt.objects.filter(job=late).exists()
    # The claim statement alone refuses it (no check in Python before it).
    assert not CompactionJob.objects.filter(pk=late.pk).filter(HANDOFF.current()).exists()


def test_a_first_generation_cannot_be_claimed_once_the_chain_has_one(chain):
    conversation, model, generations = chain
    g1 = generations[0]
    orphan = CompactionJob.objects.create(
        kind=HANDOFF_KIND, scope=conversation.scope, conversation=conversation, from_pair=0, to_pair=9,
        message_ids=g1.message_ids, source_digest=g1.source_digest, model_id="other-model",
        prompt_version=g1.prompt_version)
    HandoffPlan.objects.create(job=orphan, reason="tokens", current_digest=g1.source_digest)
    assert job_claim(job=orphan, worker="w", model_id="other-model").refused == "source_changed"


@pytest.mark.parametrize("change, problem", [
    ({"from_pair": 41, "to_pair": 45}, "right after the parent's cut"),
    ({"from_pair": 40, "to_pair": 39}, "holds no pair"),
    ({"parent_digest": "0" * 64}, "parent digest"),
])
def test_a_binding_of_the_wrong_shape_is_refused_before_and_inside_the_claim(chain, monkeypatch, change, problem):
    conversation, model, generations = chain
    tip = generations[-1]
    fields = {"from_pair": 40, "to_pair": 44, **change}
    message_ids = [f"x-{i}" for i in range(2 * max(0, fields["to_pair"] - fields["from_pair"] + 1))]
    job = handoff_child(conversation, parent=tip, message_ids=message_ids, source_digest="d" * 64, **fields)
    assert problem in HANDOFF.shape_problem(job)
    assert job_claim(job=job, worker="w", model_id=job.model_id).refused == "invalid_binding"
    if "parent_digest" in change:
        return  # checked in Python only: SQLite has no SHA-256, and the parent's text never changes
    # Everything else of the claim holds (the parent is the tip, the digest current): the
    # statement alone must refuse the shape.
    other = handoff_child(conversation, parent=tip, message_ids=message_ids, source_digest="d" * 64,
                          model_id="third-model", **fields)
    assert CompactionJob.objects.filter(pk=other.pk).filter(HANDOFF.current()).exists()
    monkeypatch.setattr(HANDOFF, "shape_problem", lambda job: "")
    assert job_claim(job=other, worker="w", model_id=other.model_id).attempt is None
    assert not Attempt.objects.filter(job=other).exists()


def scripted(**result):
    return ScriptedHandoffModel(results=[result])


GOOD = scripted_note(1)


@pytest.mark.parametrize("result, code", [
    ({"text": GOOD.replace("## To-dos", "## Todo list")}, MALFORMED_NOTE),  # a heading missing
    ({"text": GOOD.replace("## Done\n- none", "") + "\n## Done\n- none\n## Done\n- none"}, MALFORMED_NOTE),
    ({"text": "\n".join(reversed(GOOD.splitlines()))}, MALFORMED_NOTE),  # out of order
    ({"text": "Here is the note, in prose, without headings."}, MALFORMED_NOTE),
    ({"text": GOOD, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "x", "arguments": "{}"}}],
      "finish_reason": "tool_calls"}, "tool_calls"),
    ({"text": GOOD, "finish_reason": "length"}, "finish_reason"),
    ({"text": "   "}, "empty"),
    ({"text": "<summary>  </summary> and then some text outside"}, "empty"),
    ({"text": GOOD + "\x07"}, "not_plain_text"),
    ({"text": GOOD + "\n- " + "x" * 6000}, "too_long"),
    ({"error": "provider_error", "error_detail": "HTTP 500"}, "provider_error"),
    ({"error": "timeout", "error_detail": "no answer"}, "timeout"),
])
def test_every_contract_failure_is_its_own_code_and_writes_no_generation(db, result, code):
    rolling_scope(recent_turns=0, min_new_token_count=0)
    conversation = ingest(rolling_document(12))
    (job,) = handoff_plan(conversation=conversation)
    outcome = job_run(job_id=job.pk, provider=scripted(**result))
    assert (outcome.status, outcome.failure_code) == ("failed", code)
    assert not SummaryGeneration.objects.filter(job=job).exists()
    assert Attempt.objects.get(job=job).failure_code == code


def test_a_malformed_note_names_the_heading_problem(db):
    rolling_scope(recent_turns=0, min_new_token_count=0)
    conversation = ingest(rolling_document(12))
    (job,) = handoff_plan(conversation=conversation)
    job_run(job_id=job.pk, provider=scripted(text=GOOD.replace("## Next step\n- none\n", "")))
    assert "missing heading 'Next step'" in Attempt.objects.get(job=job).failure_detail


def test_the_text_inside_summary_tags_is_the_note(db):
    rolling_scope(recent_turns=0, min_new_token_count=0)
    conversation = ingest(rolling_document(12))
    (job,) = handoff_plan(conversation=conversation)
    wrapped = f"Sure — the updated hand-off note:\n<summary>\n{GOOD}\n</summary>\nAnything else?"
    outcome = job_run(job_id=job.pk, provider=scripted(text=wrapped))
    assert outcome.status == "succeeded"
    assert SummaryGeneration.objects.get(job=job).text == GOOD
    assert Attempt.objects.get(job=job).raw_output == wrapped  # what the model returned is kept as it was


def test_a_note_over_6000_characters_inside_the_tags_is_too_long_even_if_the_rest_is_short(db):
    rolling_scope(recent_turns=0, min_new_token_count=0)
    conversation = ingest(rolling_document(12))
    (job,) = handoff_plan(conversation=conversation)
    long_note = GOOD.replace("## To-dos", "- " + "y" * 6000 + "\n## To-dos")
    outcome = job_run(job_id=job.pk, provider=scripted(text=f"<summary>{long_note}</summary>"))
    assert outcome.failure_code == "too_long"


def test_a_failed_generation_stays_the_chains_next_and_runs_again(db):
    rolling_scope(recent_turns=0, min_new_token_count=0, max_compaction_batch_messages=12)
    conversation = ingest(rolling_document(12))
    (job,) = handoff_plan(conversation=conversation)
    assert job_run(job_id=job.pk, provider=scripted(text="no headings")).status == "failed"
    assert handoff_plan(conversation=conversation) == []  # the chain waits for this job
    outcome = job_run(job_id=job.pk, provider=ScriptedHandoffModel())
    assert outcome.status == "succeeded" and outcome.attempt == 2


def test_the_request_refuses_a_parent_note_that_is_not_the_bound_one(chain):
    conversation, model, generations = chain
    g4 = generations[3]
    job = CompactionJob.objects.get(pk=g4.job_id)
    request, why = HANDOFF.request(job=CompactionJob.objects.select_related("prompt_version").get(pk=job.pk),
                                   attempt=Attempt(number=9),
                                   stored={**{i: "" for i in job.message_ids}})
    assert request is None and "bound digest" in why
    bad = CompactionJob(pk=job.pk, kind=HANDOFF_KIND, conversation=conversation, from_pair=job.from_pair,
                        to_pair=job.to_pair, message_ids=job.message_ids, source_digest=job.source_digest,
                        parent_generation_id=job.parent_generation_id, parent_digest="f" * 64,
                        prompt_version=job.prompt_version)
    stored = {i: t for p in range(30, 40) for i, t in ((f"u-{p}", user_text(p)), (f"a-{p}", answer_text(p)))}
    request, why = HANDOFF.request(job=bad, attempt=Attempt(number=1), stored=stored)
    assert request is None and "parent note" in why


def test_a_succeeded_generation_is_immutable_and_the_material_digest_is_spec_5s(chain):
    from compaction.digest import digest_input, source_digest
    from compaction.models import ImmutableGenerationError

    conversation, model, generations = chain
    g2 = generations[1]
    assert g2.source_digest == source_digest(
        digest_input(i, f"u-{i}", user_text(i), f"a-{i}", answer_text(i)) for i in range(10, 20))
    assert g2.message_ids == [x for i in range(10, 20) for x in (f"u-{i}", f"a-{i}")]
    g2.text = "changed"
    with pytest.raises(ImmutableGenerationError):
        g2.save()


def test_material_is_not_rendered_from_before_the_parents_cut_even_when_it_is_long(db):
    rolling_scope(recent_turns=0, min_new_token_count=0, min_compact_message_count=4,
                  max_compaction_batch_messages=4)
    long_text = lambda i: ("U" * 3000 + f" request {i}", f"answer {i}")  # noqa: E731
    conversation = ingest(rolling_document(4, texts=long_text))
    model = ScriptedHandoffModel()
    run_chain(conversation, provider=model)
    request = model.requests[1]
    assert "[1010 characters omitted]" in request.user  # cut in the middle (seed 002 §6.7)
    assert "request 0" not in request.user and "request 2" in request.user


def test_a_chain_goes_through_the_worker_task_which_plans_the_next_round(db, monkeypatch):
    from compaction.engine import dispatch
    from compaction.tasks import run_job

    rolling_scope(recent_turns=0, min_new_token_count=0, max_compaction_batch_messages=10)
    conversation = ingest(rolling_document(10))
    (job,) = handoff_plan(conversation=conversation)
    sent = []
    monkeypatch.setattr(dispatch, "after_commit", lambda send: send())
    monkeypatch.setattr(dispatch, "send", lambda name, *args: sent.append((name, args)))
    result = run_job(job.pk, 0)
    assert result["status"] == "succeeded"
    (nxt,) = handoff_jobs(conversation).exclude(pk=job.pk)
    assert nxt.parent_generation_id == result["generation"] and nxt.from_pair == 5
    assert sent == [(dispatch.RUN_JOB, (nxt.pk, 0))]
