"""The rolling trigger and batching (SPEC §7, seed 002 §6.5, §6.6, §12)."""

import math

import pytest

from compaction import tokens
from compaction.handoff import trigger as t
from compaction.handoff.trigger import RollingThresholds, ThresholdError, decide, plan_pass

D = t.DEFAULT_THRESHOLDS


def test_defaults_are_the_seed_002_table():
    assert D.as_dict() == {
        "recent_turns": 6, "min_new_token_count": 20000, "context_window_tokens": 96000, "trigger_ratio": 0.72,
        "min_new_message_count": 8, "min_compact_message_count": 10, "max_compaction_batch_messages": 200,
        "max_rounds_per_request": 30}
    assert D.window_threshold == pytest.approx(69120)
    assert D.batch_pairs == 100


# --- the token rule ---------------------------------------------------------

def test_token_rule_fires_at_exactly_min_new_token_count():
    assert decide(material_messages=10, material_tokens=20000, note_tokens=0, unsummarised_tokens=20000).reason \
        == t.TOKENS


def test_token_rule_does_not_fire_one_token_below():
    decision = decide(material_messages=10, material_tokens=19999, note_tokens=0, unsummarised_tokens=19999)
    assert not decision.planned and decision.reason == t.BELOW_THRESHOLDS


def test_token_rule_needs_no_window_and_no_min_new_messages():
    # 10 messages, far from the window: tokens alone decide.
    assert decide(material_messages=10, material_tokens=25000, note_tokens=0, unsummarised_tokens=25000).planned


# --- the window rule --------------------------------------------------------

def test_window_rule_fires_when_note_plus_unsummarised_reaches_window_times_ratio():
    decision = decide(material_messages=12, material_tokens=5000, note_tokens=1120, unsummarised_tokens=68000)
    assert decision.planned and decision.reason == t.WINDOW and decision.estimate_tokens == 69120


def test_window_rule_does_not_fire_one_token_short():
    decision = decide(material_messages=12, material_tokens=5000, note_tokens=1119, unsummarised_tokens=68000)
    assert not decision.planned and decision.reason == t.BELOW_THRESHOLDS


def test_window_rule_counts_the_last_note():
    # Without the note the estimate is short; with it the window is reached.
    assert not decide(material_messages=12, material_tokens=100, note_tokens=0, unsummarised_tokens=69000).planned
    assert decide(material_messages=12, material_tokens=100, note_tokens=120, unsummarised_tokens=69000).planned


def test_window_rule_needs_min_new_message_count_messages():
    # A minimum compact count below min_new_message_count isolates the window's own minimum.
    th = RollingThresholds(min_compact_message_count=4, min_new_message_count=8)
    short = decide(material_messages=6, material_tokens=100, note_tokens=0, unsummarised_tokens=70000, thresholds=th)
    assert not short.planned and short.reason == t.WINDOW_TOO_FEW_NEW
    assert decide(material_messages=8, material_tokens=100, note_tokens=0, unsummarised_tokens=70000,
                  thresholds=th).reason == t.WINDOW


def test_token_rule_does_not_need_min_new_message_count():
    th = RollingThresholds(min_compact_message_count=4, min_new_message_count=8)
    assert decide(material_messages=6, material_tokens=20000, note_tokens=0, unsummarised_tokens=20000,
                  thresholds=th).reason == t.TOKENS


# --- the minimum ------------------------------------------------------------

def test_never_with_fewer_than_min_compact_message_count_messages():
    decision = decide(material_messages=8, material_tokens=50000, note_tokens=5000, unsummarised_tokens=90000)
    assert not decision.planned and decision.reason == t.TOO_FEW_MESSAGES


def test_min_compact_message_count_itself_is_enough():
    assert decide(material_messages=10, material_tokens=50000, note_tokens=0, unsummarised_tokens=50000).planned


def test_no_material_is_never_planned():
    assert decide(material_messages=0, material_tokens=0, note_tokens=0, unsummarised_tokens=90000).reason \
        == t.NO_MATERIAL


# --- material bounds and planning passes -------------------------------------

def test_material_stops_before_the_newest_recent_turns_pairs():
    assert t.material_bounds(pair_count=20, first_pair=5, recent_turns=6) == (5, 14)
    assert t.material_bounds(pair_count=8, first_pair=5, recent_turns=6) == (5, 5)  # empty


def test_a_pass_plans_nothing_while_the_recent_window_is_all_there_is():
    assert plan_pass([5000] * 6).batches == ()


def test_the_recent_turns_are_not_material_but_count_for_the_window():
    # 5 material pairs (10 messages) of 100 tokens; 6 recent pairs carry the window.
    pair_tokens = [100] * 5 + [11500] * 6
    planned = plan_pass(pair_tokens, note_tokens=120)
    assert [(b.from_pair, b.to_pair, b.reason) for b in planned.batches] == [(0, 4, t.WINDOW)]
    assert planned.batches[0].token_count == 500


def test_ranges_are_absolute_pair_indices_after_the_cut():
    planned = plan_pass([2100] * 16, first_pair=40)
    assert [(b.from_pair, b.to_pair) for b in planned.batches] == [(40, 49)]
    assert planned.batches[0].message_count == 20


def test_material_of_exactly_200_messages_is_one_batch():
    planned = plan_pass([300] * (100 + 6))
    assert [(b.from_pair, b.to_pair, b.message_count) for b in planned.batches] == [(0, 99, 200)]


def test_material_over_200_messages_is_cut_into_consecutive_batches_of_at_most_200():
    planned = plan_pass([300] * (250 + 6))
    # 100 + 100 pairs trigger on tokens (30,000 each); the last 50 pairs
    # (15,000 tokens, window far away) do not, and wait for more material.
    assert [(b.from_pair, b.to_pair) for b in planned.batches] == [(0, 99), (100, 199)]
    assert all(b.message_count <= 200 for b in planned.batches)
    assert planned.stopped == t.BELOW_THRESHOLDS


def test_each_batch_is_judged_again_so_the_tail_batch_triggers_if_large_enough():
    planned = plan_pass([300] * 200 + [400] * 60 + [10] * 6)
    assert [(b.from_pair, b.to_pair, b.reason) for b in planned.batches] == [
        (0, 99, t.TOKENS), (100, 199, t.TOKENS), (200, 259, t.TOKENS)]
    assert planned.stopped == t.NO_MATERIAL


def test_a_pass_stops_after_max_rounds_per_request_batches():
    planned = plan_pass([300] * (100 * 31 + 6))
    assert len(planned.batches) == 30 and planned.stopped == t.ROUND_CAP
    assert planned.batches[-1].to_pair == 2999
    # The next pass starts after the cut and plans the 31st.
    following = plan_pass([300] * (100 + 6), first_pair=3000)
    assert [(b.from_pair, b.to_pair) for b in following.batches] == [(3000, 3099)]


def test_an_odd_batch_limit_takes_whole_pairs():
    th = RollingThresholds(max_compaction_batch_messages=21, min_compact_message_count=10)
    planned = plan_pass([3000] * 30, thresholds=th)
    assert [b.message_count for b in planned.batches] == [20, 20]
    assert planned.batches[0].to_pair == 9


def test_pair_tokens_are_counted_with_the_token_module():
    assert t.pair_token_count("你好", "hello world") == tokens.count_tokens("你好") + tokens.count_tokens("hello world")
    assert t.note_token_count(None) == 0


# --- validation ---------------------------------------------------------------

@pytest.mark.parametrize("kwargs, field", [
    ({"trigger_ratio": 0}, "trigger_ratio"),
    ({"trigger_ratio": 1.01}, "trigger_ratio"),
    ({"trigger_ratio": -0.5}, "trigger_ratio"),
    ({"trigger_ratio": math.nan}, "trigger_ratio"),
    ({"trigger_ratio": "0.7"}, "trigger_ratio"),
    ({"recent_turns": -1}, "recent_turns"),
    ({"min_new_token_count": -5}, "min_new_token_count"),
    ({"min_new_token_count": 2.5}, "min_new_token_count"),
    ({"context_window_tokens": 0}, "context_window_tokens"),
    ({"min_new_message_count": True}, "min_new_message_count"),
    ({"min_compact_message_count": -1}, "min_compact_message_count"),
    ({"max_compaction_batch_messages": 1}, "max_compaction_batch_messages"),
    ({"max_compaction_batch_messages": 8}, "max_compaction_batch_messages"),  # under min_compact (10)
    ({"max_rounds_per_request": 0}, "max_rounds_per_request"),
    ({"max_rounds_per_request": "30"}, "max_rounds_per_request"),
])
def test_a_bad_threshold_is_refused_naming_its_field(kwargs, field):
    with pytest.raises(ThresholdError) as caught:
        RollingThresholds(**kwargs)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{field}: ")


def test_ratio_of_exactly_one_is_allowed():
    assert RollingThresholds(trigger_ratio=1).window_threshold == 96000


def test_from_mapping_takes_defaults_and_refuses_unknown_keys_by_name():
    assert RollingThresholds.from_mapping({"recent_turns": 3}).recent_turns == 3
    assert RollingThresholds.from_mapping({}).as_dict() == D.as_dict()
    with pytest.raises(ThresholdError) as caught:
        RollingThresholds.from_mapping({"recent_turn": 3})
    assert caught.value.field == "recent_turn"


def test_negative_inputs_to_the_rule_are_refused():
    with pytest.raises(ValueError, match="note_tokens"):
        decide(material_messages=10, material_tokens=10, note_tokens=-1, unsummarised_tokens=10)
    with pytest.raises(ValueError):
        plan_pass([1, -1])
