"""The assembly config: SPEC §9 keys and defaults, strict validation (seed 004 §6, seed 002 §12)."""

from __future__ import annotations

import pytest

from compaction.context.assembly import AssemblyConfig, ConfigError, LoopConfig, assemble

from .helpers import user


def test_defaults_are_the_seed_values():
    config = AssemblyConfig.from_dict({"model_input_limit": 128_000})
    assert (config.output_reserve_tokens, config.safety_margin_tokens) == (8192, 1024)
    assert (config.recent_tool_rings, config.recent_user_turns) == (3, 2)
    assert config.summarize is False and config.summary_max_tokens == 1024
    assert config.on_pairing_error == "fail_closed"
    assert config.side_effect_tools is None
    assert config.pin == ("first_user_message", "side_effect_ledger", "security_system_prompt")
    assert config.loop == LoopConfig(trigger_tool_rounds=5, trigger_tokens=96_000, recent_tool_rounds=5)
    assert config.work_summary is None


def test_budget_is_the_limit_less_reserve_and_margin():
    assert AssemblyConfig.from_dict({"model_input_limit": 128_000}).budget == 128_000 - 8192 - 1024
    assert AssemblyConfig.from_dict({"model_input_limit": 1000, "output_reserve_tokens": 100,
                                     "safety_margin_tokens": 0}).budget == 900


def test_unknown_keys_are_refused_by_name():
    with pytest.raises(ConfigError) as caught:
        AssemblyConfig.from_dict({"model_input_limit": 1000, "summarize_trigger_ratio": 0.8, "loop": {"enabled": True}})
    assert caught.value.fields == ["summarize_trigger_ratio", "loop.enabled"]
    assert caught.value.as_dict()["code"] == "invalid_config"


def test_every_bad_field_is_named_at_once():
    with pytest.raises(ConfigError) as caught:
        AssemblyConfig.from_dict({
            "output_reserve_tokens": True, "recent_tool_rings": -1, "recent_user_turns": 0,
            "summarize": "yes", "summary_max_tokens": 3.0, "on_pairing_error": "guess",
            "side_effect_tools": ["send", ""], "pin": ["first_user_message", "everything"],
            "loop": {"trigger_tool_rounds": 0}, "work_summary": 5,
        })
    assert sorted(caught.value.errors) == sorted([
        "model_input_limit", "output_reserve_tokens", "recent_tool_rings", "recent_user_turns", "summarize",
        "summary_max_tokens", "on_pairing_error", "side_effect_tools[1]", "pin[1]", "loop.trigger_tool_rounds",
        "work_summary"])
    assert caught.value.errors["model_input_limit"] == "is required"
    assert caught.value.errors["output_reserve_tokens"] == "must be an integer"


def test_a_limit_that_leaves_no_budget_is_refused():
    with pytest.raises(ConfigError) as caught:
        AssemblyConfig.from_dict({"model_input_limit": 9216})
    assert list(caught.value.errors) == ["model_input_limit"]
    assert "no input budget" in caught.value.errors["model_input_limit"]


def test_side_effect_tools_is_a_list_or_per_tool_flags():
    assert AssemblyConfig.from_dict({"model_input_limit": 10**5, "side_effect_tools": ["a", "b", "a"]}
                                    ).side_effect_tools == ("a", "b")
    assert AssemblyConfig.from_dict({"model_input_limit": 10**5, "side_effect_tools": {"a": True, "b": False}}
                                    ).side_effect_tools == {"a": True, "b": False}
    with pytest.raises(ConfigError) as caught:
        AssemblyConfig.from_dict({"model_input_limit": 10**5, "side_effect_tools": {"a": "yes"}})
    assert list(caught.value.errors) == ["side_effect_tools.a"]


def test_loop_null_switches_loop_compaction_off_and_partial_loop_keeps_defaults():
    assert AssemblyConfig.from_dict({"model_input_limit": 10**5, "loop": None}).loop is None
    assert AssemblyConfig.from_dict({"model_input_limit": 10**5, "loop": {"recent_tool_rounds": 2}}).loop == \
        LoopConfig(recent_tool_rounds=2)


def test_assemble_validates_a_json_config_before_anything_else():
    with pytest.raises(ConfigError):
        assemble(format="openai", messages=[user("hi")], config={"model_input_limit": 10**5, "typo": 1})


def test_config_round_trips_through_its_dict():
    config = AssemblyConfig.from_dict({"model_input_limit": 10**5, "pin": ["first_user_message"],
                                       "side_effect_tools": ["send"], "loop": {"trigger_tokens": 500}})
    again = dict(config.as_dict())
    assert AssemblyConfig.from_dict(again) == config
