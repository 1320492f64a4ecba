"""When a rolling conversation's next hand-off note is planned, over which
pairs, and how over-long material is batched (SPEC §7 "Trigger", seed 002
§6.5–§6.6) — asked through the planning service, over conversations
ingested for real, with the token counts the service itself uses."""

from __future__ import annotations

import pytest

from compaction.bindings.handoff import conversations_unchecked, handoff_plan
from compaction.handoff.trigger import (BELOW_THRESHOLDS, NO_MATERIAL, ROUND_CAP, TOKENS, TOO_FEW_MESSAGES, WINDOW,
                                        WINDOW_TOO_FEW_NEW, pair_token_count)
from compaction.models import HandoffCheck, HandoffPlan, MessageTokens
from compaction.tokens import count_tokens
from tests.compaction.bindings.rolling import (ScriptedHandoffModel, answer_text, edit_message, handoff_jobs, ingest,
                                               rolling_document, rolling_scope, run_chain, user_text)

NEVER = 10**9  # a threshold no test conversation reaches


def tokens(first: int, last: int) -> int:
    """The tokens of pairs ``first … last`` as the next run would carry them."""
    return sum(pair_token_count(user_text(i), answer_text(i)) for i in range(first, last + 1))


def plan_over(n_pairs: int, **thresholds):
    rolling_scope(**{"recent_turns": 6, "min_new_token_count": NEVER, "context_window_tokens": NEVER,
                     **thresholds})
    conversation = ingest(rolling_document(n_pairs))
    return conversation, handoff_plan(conversation=conversation)


def decision(conversation) -> str:
    return HandoffCheck.objects.get(conversation=conversation).decision


# 20 pairs, the newest 6 stay raw: the material is pairs 0-13, 28 messages.
MATERIAL = (0, 13)


@pytest.mark.django_db
def test_the_token_rule_fires_when_the_material_holds_exactly_the_threshold():
    conversation, planned = plan_over(20, min_new_token_count=tokens(*MATERIAL))
    (job,) = planned
    assert (job.from_pair, job.to_pair, job.parent_generation_id) == (0, 13, None)
    plan = HandoffPlan.objects.get(job=job)
    assert (plan.reason, plan.round, plan.material_messages, plan.material_tokens) == (TOKENS, 1, 28,
                                                                                        tokens(*MATERIAL))
    assert decision(conversation) == TOKENS


@pytest.mark.django_db
def test_the_token_rule_does_not_fire_one_token_short():
    conversation, planned = plan_over(20, min_new_token_count=tokens(*MATERIAL) + 1)
    assert planned == [] and not handoff_jobs(conversation).exists()
    check = HandoffCheck.objects.get(conversation=conversation)
    assert (check.decision, check.material_messages, check.material_tokens) == (BELOW_THRESHOLDS, 28,
                                                                               tokens(*MATERIAL))


@pytest.mark.django_db
def test_the_token_rule_counts_only_the_material_not_the_recent_pairs():
    # The whole conversation holds far more than the material: the recent 6 pairs do not count.
    conversation, planned = plan_over(20, min_new_token_count=tokens(0, 19) - 1)
    assert planned == [] and decision(conversation) == BELOW_THRESHOLDS


@pytest.mark.django_db
def test_the_window_rule_fires_when_the_next_run_estimate_reaches_the_window():
    # No note yet: the estimate is every unsummarised pair, the recent ones included.
    conversation, planned = plan_over(20, context_window_tokens=tokens(0, 19), trigger_ratio=1.0)
    (job,) = planned
    assert (job.from_pair, job.to_pair) == MATERIAL
    plan = HandoffPlan.objects.get(job=job)
    assert (plan.reason, plan.estimate_tokens) == (WINDOW, tokens(0, 19))


@pytest.mark.django_db
def test_the_window_rule_does_not_fire_one_token_below_the_window():
    conversation, planned = plan_over(20, context_window_tokens=tokens(0, 19) + 1, trigger_ratio=1.0)
    assert planned == [] and decision(conversation) == BELOW_THRESHOLDS


@pytest.mark.django_db
def test_the_window_rule_uses_the_ratio():
    window = tokens(0, 19) * 2
    conversation, planned = plan_over(20, context_window_tokens=window, trigger_ratio=0.5)
    assert len(planned) == 1 and HandoffPlan.objects.get(job=planned[0]).reason == WINDOW


@pytest.mark.django_db
def test_the_window_rule_needs_enough_new_messages():
    conversation, planned = plan_over(20, context_window_tokens=tokens(0, 19), trigger_ratio=1.0,
                                      min_new_message_count=29)
    assert planned == [] and decision(conversation) == WINDOW_TOO_FEW_NEW


@pytest.mark.django_db
def test_the_window_rule_fires_with_exactly_enough_new_messages():
    conversation, planned = plan_over(20, context_window_tokens=tokens(0, 19), trigger_ratio=1.0,
                                      min_new_message_count=28)
    assert len(planned) == 1 and HandoffPlan.objects.get(job=planned[0]).reason == WINDOW


@pytest.mark.django_db
def test_nothing_is_planned_with_fewer_messages_than_the_minimum_even_when_a_rule_fires():
    conversation, planned = plan_over(20, min_new_token_count=0, min_compact_message_count=30)
    assert planned == [] and decision(conversation) == TOO_FEW_MESSAGES


@pytest.mark.django_db
def test_the_minimum_message_count_is_inclusive():
    conversation, planned = plan_over(20, min_new_token_count=0, min_compact_message_count=28)
    assert [(j.from_pair, j.to_pair) for j in planned] == [MATERIAL]


@pytest.mark.django_db
def test_the_recent_pairs_are_never_material():
    conversation, planned = plan_over(6, min_new_token_count=0, min_compact_message_count=0)
    assert planned == [] and decision(conversation) == NO_MATERIAL


@pytest.mark.django_db
def test_material_over_200_messages_is_cut_into_consecutive_batches_each_written_from_the_one_before():
    rolling_scope(recent_turns=0, min_new_token_count=0)
    conversation = ingest(rolling_document(130))
    (first,) = handoff_plan(conversation=conversation)
    assert (first.from_pair, first.to_pair) == (0, 99)  # 200 messages: the batch limit
    assert HandoffPlan.objects.get(job=first).material_messages == 200
    generations = run_chain(conversation, provider=ScriptedHandoffModel())
    assert [(g.from_pair, g.to_pair) for g in generations] == [(0, 99), (100, 129)]
    assert generations[1].parent_id == generations[0].pk
    assert [HandoffPlan.objects.get(job_id=g.job_id).round for g in generations] == [1, 2]


@pytest.mark.django_db
def test_material_of_exactly_200_messages_is_one_batch():
    rolling_scope(recent_turns=0, min_new_token_count=0)
    conversation = ingest(rolling_document(100))
    generations = run_chain(conversation, provider=ScriptedHandoffModel())
    assert [(g.from_pair, g.to_pair) for g in generations] == [(0, 99)]
    assert decision(conversation) == NO_MATERIAL


@pytest.mark.django_db
def test_a_planning_pass_stops_after_30_rounds_and_the_next_ingest_starts_another():
    rolling_scope(recent_turns=0, min_new_token_count=0, min_compact_message_count=2,
                  max_compaction_batch_messages=2)
    conversation = ingest(rolling_document(40))
    generations = run_chain(conversation, provider=ScriptedHandoffModel())
    assert [(g.from_pair, g.to_pair) for g in generations] == [(i, i) for i in range(30)]
    assert [HandoffPlan.objects.get(job_id=g.job_id).round for g in generations] == list(range(1, 31))
    check = HandoffCheck.objects.get(conversation=conversation)
    assert (check.decision, check.parent_id) == (ROUND_CAP, generations[-1].pk)
    assert not handoff_jobs(conversation).filter(state="pending").exists()
    # The scan does not start another pass by itself (nothing changed since)...
    assert conversation.pk not in conversations_unchecked(limit=100)
    # ...the next ingest does.
    ingest(rolling_document(1, start=40))
    assert conversation.pk in conversations_unchecked(limit=100)
    (job,) = handoff_plan(conversation=conversation)
    assert (job.from_pair, job.parent_generation_id, HandoffPlan.objects.get(job=job).round) == (
        30, generations[-1].pk, 1)


@pytest.mark.django_db
def test_the_next_generation_is_planned_over_the_pairs_after_the_parents_cut_only():
    rolling_scope(recent_turns=2, min_new_token_count=0, max_compaction_batch_messages=20)
    conversation = ingest(rolling_document(12))
    generations = run_chain(conversation, provider=ScriptedHandoffModel())
    assert [(g.from_pair, g.to_pair) for g in generations] == [(0, 9)]
    ingest(rolling_document(10, start=12))
    (job,) = handoff_plan(conversation=conversation)
    assert (job.from_pair, job.to_pair, job.parent_generation_id) == (10, 19, generations[0].pk)
    assert HandoffPlan.objects.get(job=job).material_tokens == tokens(10, 19)


@pytest.mark.django_db
def test_an_open_job_holds_the_chain_and_planning_again_creates_nothing():
    conversation, planned = plan_over(20, min_new_token_count=0)
    assert len(planned) == 1
    ingest(rolling_document(20, start=20))
    assert handoff_plan(conversation=conversation) == []
    assert decision(conversation) == "open_job"
    assert handoff_jobs(conversation).count() == 1


@pytest.mark.django_db
def test_a_segment_scope_plans_no_hand_off_job_and_a_rolling_scope_no_segment_job():
    from compaction.bindings import conversation_plan

    segments = ingest(rolling_document(40, scope="segments-scope"))
    assert {j.kind for j in conversation_plan(conversation=segments)} == {"segment"}
    rolling_scope(min_new_token_count=0)
    rolling = ingest(rolling_document(40))
    assert {j.kind for j in conversation_plan(conversation=rolling)} == {"handoff"}


@pytest.mark.django_db
def test_each_message_is_counted_once_however_often_the_trigger_is_asked(monkeypatch):
    import compaction.bindings.handoff_material as material

    conversation, _ = plan_over(20)
    kept = dict(MessageTokens.objects.filter(message__conversation=conversation).values_list("message_id", "tokens"))
    assert len(kept) == 40
    counted = []
    monkeypatch.setattr(material, "count_tokens", lambda text: counted.append(text) or count_tokens(text))
    ingest(rolling_document(2, start=20))
    handoff_plan(conversation=conversation)
    handoff_plan(conversation=conversation)
    assert sorted(counted) == sorted([user_text(20), answer_text(20), user_text(21), answer_text(21)])
    assert MessageTokens.objects.get(message__external_id="u-0").tokens == count_tokens(user_text(0))


@pytest.mark.django_db
def test_an_edited_message_is_counted_again():
    conversation, _ = plan_over(20)
    longer = "Request 3: changed, and now a much longer request. " * 5
    edit_message(conversation, "u-3", longer)
    handoff_plan(conversation=conversation)
    kept = MessageTokens.objects.get(message__external_id="u-3")
    assert (kept.revision, kept.tokens) == (1, count_tokens(longer))


@pytest.mark.django_db
def test_the_scan_asks_rolling_conversations_that_changed_since_their_last_decision():
    rolling_scope()
    conversation = ingest(rolling_document(20))
    other = ingest(rolling_document(20, scope="segments-scope"))
    unchecked = conversations_unchecked(limit=100)
    assert conversation.pk in unchecked and other.pk not in unchecked
    handoff_plan(conversation=conversation)
    assert conversation.pk not in conversations_unchecked(limit=100)
    ingest(rolling_document(1, start=20))
    assert conversation.pk in conversations_unchecked(limit=100)
