"""The projection of a rolling conversation (SPEC §7 "Projection", §6): the
newest usable hand-off note as one block, then the raw pairs after its
cut; if the note does not fit, raw pairs newest first — with the exact
account, reasons, ``complete``, byte and token budgets and ``format=openai``."""

from __future__ import annotations

import pytest

from compaction.bindings.handoff import handoff_plan
from compaction.context.handoff import OPENAI_HANDOFF_PREAMBLE, omitted_sentence, openai_note_header
from compaction.context.projection import conversation_projection
from compaction.engine.run import job_run
from compaction.models import CompactionJob, JobState, PromptVersion
from compaction.tokens import count_tokens
from tests.compaction.bindings.rolling import (ScriptedHandoffModel, answer_text, edit_message, ingest,
                                               rolling_document, rolling_scope, run_chain, user_text)

pytestmark = pytest.mark.django_db


def raw_bytes(i: int) -> int:
    return len(user_text(i).encode()) + len(answer_text(i).encode())


@pytest.fixture
def rolling():
    """24 pairs; notes over 0-9 and 10-19 (the newest 4 raw): the cut is 19."""
    rolling_scope(recent_turns=4, min_new_token_count=0, max_compaction_batch_messages=20)
    conversation = ingest(rolling_document(24))
    generations = run_chain(conversation, provider=ScriptedHandoffModel())
    assert [(g.from_pair, g.to_pair) for g in generations] == [(0, 9), (10, 19)]
    return conversation, generations


def project(conversation, budget, **kw):
    return conversation_projection(conversation=conversation, budget_bytes=budget, **kw)


def account(body):
    return [(p["index"], p["as"], p["reason"]) for p in body["pairs"]]


def test_a_generous_budget_gives_the_newest_note_then_the_raw_pairs_after_its_cut(rolling):
    conversation, (g1, g2) = rolling
    body = project(conversation, 10**6)
    note, *raws = body["blocks"]
    assert note == {"kind": "handoff", "from_pair": 0, "to_pair": 19, "generation": g2.pk, "number": 2,
                    "parent": g1.pk, "prompt_version": "handoff@1", "source_digest": g2.source_digest,
                    "parent_digest": g2.parent_digest, "note": g2.text}
    assert [b["pair"] for b in raws] == [20, 21, 22, 23]
    assert raws[0] == {"kind": "raw", "pair": 20, "user": {"id": "u-20", "text": user_text(20)},
                       "assistant": {"id": "a-20", "text": answer_text(20)}}
    assert account(body) == [(i, "summary", None) for i in range(20)] + [(i, "raw", None) for i in range(20, 24)]
    assert body["complete"] is True
    assert body["used"]["bytes"] == len(g2.text.encode()) + sum(raw_bytes(i) for i in range(20, 24))


def test_a_budget_that_fits_the_tail_but_not_the_note_gives_raw_pairs_newest_first(rolling):
    conversation, (g1, g2) = rolling
    tail = sum(raw_bytes(i) for i in range(20, 24))
    budget = tail + raw_bytes(19) + 20  # room for one more pair, not for the note
    assert raw_bytes(19) + 20 < len(g2.text.encode()) and raw_bytes(18) > 20
    body = project(conversation, budget)
    assert [b["kind"] for b in body["blocks"]] == ["raw"] * 5
    assert account(body) == ([(i, "omitted", "over_budget") for i in range(19)]
                             + [(19, "raw", None)]  # its note is usable; over_budget is for omitted pairs
                             + [(i, "raw", None) for i in range(20, 24)])
    assert body["complete"] is False and body["used"]["bytes"] == budget - 20


def test_a_budget_one_byte_short_of_the_note_omits_it(rolling):
    conversation, (g1, g2) = rolling
    exact = len(g2.text.encode()) + sum(raw_bytes(i) for i in range(20, 24))
    assert project(conversation, exact)["complete"] is True
    body = project(conversation, exact - 1)
    assert "handoff" not in [b["kind"] for b in body["blocks"]]
    assert body["used"]["bytes"] <= exact - 1


def test_a_budget_too_small_for_the_newest_pair_omits_everything(rolling):
    conversation, _ = rolling
    body = project(conversation, raw_bytes(23) - 1)
    assert body["blocks"] == [] and body["used"]["bytes"] == 0 and body["complete"] is False
    assert account(body) == [(i, "omitted", "over_budget") for i in range(24)]


def test_a_token_budget_counts_the_same_texts(rolling):
    conversation, (g1, g2) = rolling
    tail_tokens = sum(count_tokens(user_text(i)) + count_tokens(answer_text(i)) for i in range(20, 24))
    full = tail_tokens + count_tokens(g2.text)
    body = project(conversation, 10**6, budget_tokens=full)
    assert body["complete"] is True and body["used"]["tokens"] == full and body["tokenizer"]
    body = project(conversation, 10**6, budget_tokens=full - 1)
    assert body["complete"] is False and body["used"]["tokens"] <= full - 1
    assert [p["as"] for p in body["pairs"] if p["index"] >= 20] == ["raw"] * 4


def test_format_openai_is_one_system_message_with_the_note_then_the_raw_pairs(rolling):
    conversation, (g1, g2) = rolling
    body = project(conversation, 10**6, format="openai")
    system, *rest = body["messages"]
    header = openai_note_header(to_pair=19, generation=g2.pk, prompt_version="handoff@1")
    assert system == {"role": "system", "content": OPENAI_HANDOFF_PREAMBLE + header + g2.text}
    assert rest[:2] == [{"role": "user", "content": user_text(20)}, {"role": "assistant", "content": answer_text(20)}]
    assert len(rest) == 8
    assert body["used"]["bytes"] == sum(len(m["content"].encode()) for m in body["messages"])
    assert account(body) == account(project(conversation, 10**6))


def test_format_openai_says_how_many_older_pairs_were_left_out(rolling):
    conversation, _ = rolling
    budget = sum(raw_bytes(i) for i in range(20, 24)) + len(omitted_sentence(20).encode())
    body = project(conversation, budget, format="openai")
    assert body["messages"][0] == {"role": "system", "content": omitted_sentence(20)}
    assert len(body["messages"]) == 9 and body["complete"] is False
    assert body["used"]["bytes"] == budget
    # One byte less: the oldest raw pair makes room for the sentence.
    body = project(conversation, budget - 1, format="openai")
    assert body["messages"][0] == {"role": "system", "content": omitted_sentence(21)}
    assert [p["as"] for p in body["pairs"]].count("omitted") == 21


def test_without_a_note_the_pairs_under_an_open_job_name_its_state(db):
    rolling_scope(recent_turns=2, min_new_token_count=0, max_compaction_batch_messages=20)
    conversation = ingest(rolling_document(12))
    (job,) = handoff_plan(conversation=conversation)
    body = project(conversation, 10**6)
    assert account(body) == [(i, "raw", "pending") for i in range(10)] + [(10, "raw", None), (11, "raw", None)]
    job_run(job_id=job.pk, provider=ScriptedHandoffModel(results=[{"text": "no headings"}]))
    assert {p["reason"] for p in project(conversation, 10**6)["pairs"] if p["index"] < 10} == {"failed"}
    CompactionJob.objects.filter(pk=job.pk).update(state=JobState.EXHAUSTED)
    assert {p["reason"] for p in project(conversation, 10**6)["pairs"] if p["index"] < 10} == {"exhausted"}


def test_a_broken_chain_falls_back_to_the_last_valid_note_and_names_the_stale_pairs(rolling):
    conversation, (g1, g2) = rolling
    edit_message(conversation, "u-15", "Request 15: corrected.")
    body = project(conversation, 10**6)
    assert body["blocks"][0]["generation"] == g1.pk and body["blocks"][0]["to_pair"] == 9
    assert account(body) == ([(i, "summary", None) for i in range(10)]
                             + [(i, "raw", "stale_source") for i in range(10, 20)]
                             + [(i, "raw", None) for i in range(20, 24)])
    assert body["blocks"][6]["user"]["text"] == "Request 15: corrected."


def test_a_note_under_a_version_not_accepted_for_projection_is_not_given(rolling):
    conversation, (g1, g2) = rolling
    PromptVersion.objects.filter(name="handoff@1").update(accepted_for_projection=False)
    body = project(conversation, 10**6)
    assert [b["kind"] for b in body["blocks"]] == ["raw"] * 24
    assert {p["reason"] for p in body["pairs"] if p["index"] < 20} == {"not_accepted_version"}


def test_the_projection_of_a_segment_scope_is_unchanged(db):
    conversation = ingest(rolling_document(34, scope="segments-scope"))
    body = project(conversation, 10**6)
    assert {b["kind"] for b in body["blocks"]} == {"raw"}
    assert {p["reason"] for p in body["pairs"] if p["index"] < 10} == {"pending"}
