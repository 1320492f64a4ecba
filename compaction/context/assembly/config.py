"""The assembly config (SPEC §9 "Config", seed 004 §6 配置示例, seed 002 §7.5–§7.6 and §12).

Keys and defaults:

=========================  ===============  ==================================================
key                        default          meaning
=========================  ===============  ==================================================
``model_input_limit``      required         the model's input window, tokens
``output_reserve_tokens``  8192             kept free for the answer
``safety_margin_tokens``   1024             kept free for the counting error
``recent_tool_rings``      3                newest complete tool rings kept whole (suffix)
``recent_user_turns``      2                newest user messages kept (suffix); at least 1,
                                            so the latest user message is always kept
``summarize``              false            may the trimmed middle be replaced by one note
``summary_max_tokens``     1024             cap of that note and of the loop work summary
``on_pairing_error``       ``fail_closed``  or ``synthesize_error_results``
``side_effect_tools``      null             a list of tool names (exactly these have side
                                            effects) or an object of per-tool flags
                                            (``{"name": true|false}``; tools not named fall
                                            back to the default write verbs); null: the
                                            default verbs (``ledger``)
``pin``                    all three        any of ``first_user_message``,
                                            ``side_effect_ledger``, ``security_system_prompt``
``loop``                   enabled          §10: ``trigger_tool_rounds`` 5,
                                            ``trigger_tokens`` 96000, ``recent_tool_rounds``
                                            5; ``null`` switches loop compaction off
``work_summary``           null             the run's previous work summary (§10)
=========================  ===============  ==================================================

The budget is ``model_input_limit − output_reserve_tokens −
safety_margin_tokens`` and must be positive. Validation is strict, like the
rest of the API: an unknown key is refused by its name, a value of the
wrong type is refused (``true`` is not a number, ``3.0`` is not an
integer), and every bad field is reported at once in ``ConfigError.errors``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, Mapping

from .errors import ConfigError

FIRST_USER_MESSAGE = "first_user_message"
SIDE_EFFECT_LEDGER = "side_effect_ledger"
SECURITY_SYSTEM_PROMPT = "security_system_prompt"
PINS = (FIRST_USER_MESSAGE, SIDE_EFFECT_LEDGER, SECURITY_SYSTEM_PROMPT)

FAIL_CLOSED = "fail_closed"
SYNTHESIZE_ERROR_RESULTS = "synthesize_error_results"
ON_PAIRING_ERROR = (FAIL_CLOSED, SYNTHESIZE_ERROR_RESULTS)


@dataclass(frozen=True)
class LoopConfig:
    trigger_tool_rounds: int = 5
    trigger_tokens: int = 96_000
    recent_tool_rounds: int = 5


_LOOP_MINIMUM = {"trigger_tool_rounds": 1, "trigger_tokens": 1, "recent_tool_rounds": 0}


@dataclass(frozen=True)
class AssemblyConfig:
    model_input_limit: int
    output_reserve_tokens: int = 8192
    safety_margin_tokens: int = 1024
    recent_tool_rings: int = 3
    recent_user_turns: int = 2
    summarize: bool = False
    summary_max_tokens: int = 1024
    on_pairing_error: str = FAIL_CLOSED
    side_effect_tools: tuple[str, ...] | Mapping[str, bool] | None = None
    pin: tuple[str, ...] = PINS
    loop: LoopConfig | None = field(default_factory=LoopConfig)
    work_summary: str | None = None

    @property
    def budget(self) -> int:
        return self.model_input_limit - self.output_reserve_tokens - self.safety_margin_tokens

    def pins(self, name: str) -> bool:
        return name in self.pin

    def replace(self, **changes: Any) -> "AssemblyConfig":
        return replace(self, **changes)

    def as_dict(self) -> dict:
        data = asdict(self)
        data["pin"] = list(self.pin)
        if isinstance(self.side_effect_tools, tuple):
            data["side_effect_tools"] = list(self.side_effect_tools)
        elif self.side_effect_tools is not None:
            data["side_effect_tools"] = dict(self.side_effect_tools)
        return data

    @classmethod
    def from_dict(cls, data: Any) -> "AssemblyConfig":
        """Validate a JSON config; raise ``ConfigError`` naming every bad field."""
        return _parse(data)

    @classmethod
    def coerce(cls, value: "AssemblyConfig | Mapping[str, Any]") -> "AssemblyConfig":
        return value if isinstance(value, AssemblyConfig) else _parse(value)


_MINIMUM = {
    "model_input_limit": 1,
    "output_reserve_tokens": 0,
    "safety_margin_tokens": 0,
    "recent_tool_rings": 0,
    "recent_user_turns": 1,
    "summary_max_tokens": 1,
}
KEYS = ("model_input_limit", "output_reserve_tokens", "safety_margin_tokens", "recent_tool_rings",
        "recent_user_turns", "summarize", "summary_max_tokens", "on_pairing_error", "side_effect_tools",
        "pin", "loop", "work_summary")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _parse(data: Any) -> AssemblyConfig:
    if not isinstance(data, Mapping):
        raise ConfigError({"config": "must be an object"})
    errors: dict[str, str] = {}
    values: dict[str, Any] = {}
    for key in data:
        if key not in KEYS:
            errors[str(key)] = "unknown key"
    if "model_input_limit" not in data:
        errors["model_input_limit"] = "is required"
    for key, minimum in _MINIMUM.items():
        if key not in data:
            continue
        value = data[key]
        if not _is_int(value):
            errors[key] = "must be an integer"
        elif value < minimum:
            errors[key] = f"must be at least {minimum}"
        else:
            values[key] = value
    if "summarize" in data:
        if isinstance(data["summarize"], bool):
            values["summarize"] = data["summarize"]
        else:
            errors["summarize"] = "must be true or false"
    if "on_pairing_error" in data:
        if data["on_pairing_error"] in ON_PAIRING_ERROR:
            values["on_pairing_error"] = data["on_pairing_error"]
        else:
            errors["on_pairing_error"] = f"must be one of {', '.join(ON_PAIRING_ERROR)}"
    if "side_effect_tools" in data:
        value = data["side_effect_tools"]
        if value is None:
            values["side_effect_tools"] = None
        elif isinstance(value, list):
            bad = [n for n, name in enumerate(value) if not isinstance(name, str) or not name]
            for n in bad:
                errors[f"side_effect_tools[{n}]"] = "must be a non-empty tool name"
            if not bad:
                values["side_effect_tools"] = tuple(dict.fromkeys(value))
        elif isinstance(value, Mapping):
            bad_keys = [k for k, flag in value.items() if not isinstance(k, str) or not k or not isinstance(flag, bool)]
            for k in bad_keys:
                errors[f"side_effect_tools.{k}"] = "must map a tool name to true or false"
            if not bad_keys:
                values["side_effect_tools"] = dict(value)
        else:
            errors["side_effect_tools"] = "must be a list of tool names or an object of per-tool true/false flags"
    if "pin" in data:
        value = data["pin"]
        if not isinstance(value, list):
            errors["pin"] = f"must be a list of any of {', '.join(PINS)}"
        else:
            bad = [n for n, item in enumerate(value) if item not in PINS]
            for n in bad:
                errors[f"pin[{n}]"] = f"must be one of {', '.join(PINS)}"
            if not bad:
                values["pin"] = tuple(dict.fromkeys(value))
    if "loop" in data:
        value = data["loop"]
        if value is None:
            values["loop"] = None
        elif not isinstance(value, Mapping):
            errors["loop"] = "must be an object or null"
        else:
            loop: dict[str, int] = {}
            for key in value:
                if key not in _LOOP_MINIMUM:
                    errors[f"loop.{key}"] = "unknown key"
            for key, minimum in _LOOP_MINIMUM.items():
                if key not in value:
                    continue
                if not _is_int(value[key]):
                    errors[f"loop.{key}"] = "must be an integer"
                elif value[key] < minimum:
                    errors[f"loop.{key}"] = f"must be at least {minimum}"
                else:
                    loop[key] = value[key]
            values["loop"] = LoopConfig(**loop)
    if "work_summary" in data:
        value = data["work_summary"]
        if value is None or isinstance(value, str):
            values["work_summary"] = value or None
        else:
            errors["work_summary"] = "must be a string or null"
    if not errors:
        config = AssemblyConfig(**values)
        if config.budget <= 0:
            errors["model_input_limit"] = (
                f"leaves no input budget: {config.model_input_limit} − {config.output_reserve_tokens} "
                f"(output_reserve_tokens) − {config.safety_margin_tokens} (safety_margin_tokens) "
                f"= {config.budget}")
        else:
            return config
    raise ConfigError(errors)
