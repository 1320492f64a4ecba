"""Builders for the assembly tests: small conversations in both formats,
written out so each test reads like the conversation it checks."""

from __future__ import annotations

import json
from typing import Any

from compaction.context.assembly import assemble

BIG = 10**7  # a model window no test conversation comes near


def call(cid: str, name: str, **args: Any) -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def calls(*tool_calls: dict, content: Any = None) -> dict:
    return {"role": "assistant", "content": content, "tool_calls": list(tool_calls)}


def tool(cid: str, content: Any, name: str | None = None) -> dict:
    message = {"role": "tool", "tool_call_id": cid, "content": content if isinstance(content, str) else json.dumps(content)}
    if name:
        message["name"] = name
    return message


def ring(cid: str, name: str, result: Any = "ok", **args: Any) -> list[dict]:
    return [calls(call(cid, name, **args)), tool(cid, result, name)]


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict:
    return {"role": "assistant", "content": text}


def system(text: str) -> dict:
    return {"role": "system", "content": text}


# ------------------------------------------------------------- Anthropic


def use(cid: str, name: str, **args: Any) -> dict:
    return {"type": "tool_use", "id": cid, "name": name, "input": args}


def result(cid: str, content: Any = "ok", is_error: bool | None = None) -> dict:
    block = {"type": "tool_result", "tool_use_id": cid, "content": content if isinstance(content, str) else json.dumps(content)}
    if is_error is not None:
        block["is_error"] = is_error
    return block


def a_assistant(*blocks: dict) -> dict:
    return {"role": "assistant", "content": list(blocks)}


def a_user(*blocks: Any) -> dict:
    if len(blocks) == 1 and isinstance(blocks[0], str):
        return {"role": "user", "content": blocks[0]}
    return {"role": "user", "content": [b if isinstance(b, dict) else {"type": "text", "text": b} for b in blocks]}


def openai_to_anthropic(messages: list[dict]) -> tuple[list[dict], str | None]:
    """The same conversation in Anthropic's shape: system prompts to the
    top-level system, calls to tool_use blocks, each run of tool messages to
    one user message of tool_result blocks."""
    system_text = None
    out: list[dict] = []
    for m in messages:
        role = m["role"]
        if role in ("system", "developer"):
            system_text = m["content"] if system_text is None else system_text + "\n" + m["content"]
            continue
        if role == "tool":
            block = result(m["tool_call_id"], m["content"])
            previous = out[-1] if out else None
            if previous and previous["role"] == "user" and isinstance(previous["content"], list) \
                    and all(b["type"] == "tool_result" for b in previous["content"]) and previous.get("_results"):
                previous["content"].append(block)
            else:
                out.append({"role": "user", "content": [block], "_results": True})
            continue
        if role == "assistant" and m.get("tool_calls"):
            blocks = [{"type": "text", "text": m["content"]}] if m.get("content") else []
            blocks += [use(c["id"], c["function"]["name"], **json.loads(c["function"]["arguments"]))
                       for c in m["tool_calls"]]
            out.append({"role": "assistant", "content": blocks})
            continue
        out.append({"role": role, "content": m["content"] or ""})
    for m in out:
        m.pop("_results", None)
    return out, system_text


def assemble_openai(messages: list[dict], **config: Any):
    config.setdefault("model_input_limit", BIG)
    return assemble(format="openai", messages=messages, config=config)


def full_tokens(format: str, messages: list[dict], system_prompt: Any = None, tools: Any = None) -> int:
    return assemble(format=format, messages=messages, system=system_prompt, tools=tools,
                    config={"model_input_limit": BIG, "loop": None}).report.tokens_before


def limit_for(budget: int, *, reserve: int = 8192, margin: int = 1024) -> int:
    """The model_input_limit that gives ``budget`` with the default reserve and margin."""
    return budget + reserve + margin
