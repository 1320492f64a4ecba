"""Message adapters: OpenAI Chat Completions and Anthropic Messages to the
neutral form and back, losslessly (SPEC §9, seed 004 §1 and "厂商语义差异":
"适配层应按 provider 做往返单测").

OpenAI Chat Completions
  - ``{"role": "system" | "developer" | "user" | "assistant" | "tool", ...}``
  - ``content`` is absent, ``null``, a string, or a list of parts
    (``{"type": "text", "text": …}``; other parts such as ``image_url`` or
    ``refusal`` are kept as opaque parts).
  - an assistant message may carry ``tool_calls``: a list of
    ``{"id", "type": "function", "function": {"name", "arguments"}}`` with
    ``arguments`` a JSON string; several calls in one message are parallel
    calls.
  - a result is ``{"role": "tool", "tool_call_id": …, "content": …}``.

Anthropic Messages
  - top-level ``system`` (a string or a list of text blocks), then
    ``{"role": "user" | "assistant", "content": str | [blocks]}``.
  - a call is a ``{"type": "tool_use", "id", "name", "input": {…}}`` block
    of an assistant message; a result is a ``{"type": "tool_result",
    "tool_use_id", "content"?, "is_error"?}`` block of a user message.
  - other blocks (image, document, thinking…) are kept as opaque blocks.

Parsing refuses only what is not the format's shape (a role the format does
not have, a content of the wrong type, a call without a name, OpenAI
arguments that are not a string) with ``RequestFormatError`` naming every
bad field. A missing or empty id is not a shape error: the pairing
validator reports it with the other violations. Keys this module does not
interpret are kept and rendered back as they came.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Iterable, Mapping, Sequence

from .errors import RequestFormatError
from .neutral import (
    ABSENT,
    ANTHROPIC,
    NULL,
    OPENAI,
    PARTS,
    STRING,
    Content,
    Message,
    Opaque,
    Text,
    ToolCall,
    ToolResult,
    Transcript,
    NO_EXTRA,
    make_message,
)

OPENAI_ROLES = ("system", "developer", "user", "assistant", "tool")
_OPENAI_ROLE_SET = frozenset(OPENAI_ROLES)


def _is_mapping(value: Any) -> bool:
    # ``isinstance(x, Mapping)`` goes through the ABC machinery; JSON gives
    # plain dicts, and this runs for every message and part of every request.
    return type(value) is dict or isinstance(value, Mapping)
ANTHROPIC_ROLES = ("user", "assistant")


class _Errors:
    def __init__(self) -> None:
        self.items: list[dict] = []

    def add(self, index: int | None, field: str, message: str) -> None:
        self.items.append({"index": index, "field": field, "message": message})

    def raise_if_any(self) -> None:
        if self.items:
            raise RequestFormatError(self.items)


# ---------------------------------------------------------------- OpenAI


def _openai_content(raw: Mapping, where: str, index: int, errors: _Errors) -> Content:
    if "content" not in raw:
        return Content(ABSENT)
    value = raw["content"]
    if value is None:
        return Content(NULL)
    if isinstance(value, str):
        return Content(STRING, (Text(value, {}),))
    if isinstance(value, list):
        blocks = []
        for n, part in enumerate(value):
            if not _is_mapping(part):
                errors.add(index, f"{where}.content[{n}]", "a content part must be an object")
                continue
            if part.get("type") == "text" and isinstance(part.get("text"), str):
                blocks.append(Text(part["text"], {k: v for k, v in part.items() if k not in ("type", "text")}))
            else:
                blocks.append(Opaque(dict(part)))
        return Content(PARTS, tuple(blocks))
    errors.add(index, f"{where}.content", "must be null, a string or a list of parts")
    return Content(ABSENT)


def _openai_call(raw: Any, i: int, n: int, errors: _Errors) -> ToolCall | None:
    # (``where`` is only spelled out for an error: this runs for every call.)
    if type(raw) is not dict and not isinstance(raw, Mapping):
        errors.add(i, f"messages[{i}].tool_calls[{n}]", "a tool call must be an object")
        return None
    call_id = raw.get("id")
    if call_id is not None and not isinstance(call_id, str):
        errors.add(i, f"messages[{i}].tool_calls[{n}].id", "must be a string")
        return None
    function = raw.get("function")
    if type(function) is not dict and not isinstance(function, Mapping):
        errors.add(i, f"messages[{i}].tool_calls[{n}].function", "must be an object with name and arguments")
        return None
    name, arguments = function.get("name"), function.get("arguments")
    if not isinstance(name, str) or not name:
        errors.add(i, f"messages[{i}].tool_calls[{n}].function.name", "must be a non-empty string")
        return None
    if not isinstance(arguments, str):
        errors.add(i, f"messages[{i}].tool_calls[{n}].function.arguments", "must be a string (JSON text)")
        return None
    # The common call: id, type and function; a function of name and arguments.
    if len(raw) == 3 and "id" in raw and raw.get("type") == "function":
        extra = _TYPE_FUNCTION
    else:
        extra = _extra(raw, _CALL_ENTRY_KEYS)
    return ToolCall(call_id if "id" in raw else None, name, arguments, extra,
                    NO_EXTRA if len(function) == 2 else _extra(function, _FUNCTION_KEYS))


_FUNCTION_KEYS = frozenset(("name", "arguments"))
_CALL_ENTRY_KEYS = frozenset(("id", "function"))
# The ``extra`` of almost every OpenAI call: shared and read-only, like NO_EXTRA.
_TYPE_FUNCTION: Mapping[str, Any] = MappingProxyType({"type": "function"})


_TOOL_KEYS = frozenset(("role", "content", "tool_call_id"))
_PLAIN_KEYS = frozenset(("role", "content"))
_CALL_KEYS = frozenset(("role", "content", "tool_calls"))


def _extra(raw: Mapping, known: frozenset) -> dict:
    # Most messages carry only known keys; skip building a dict for them.
    if raw.keys() <= known:
        return NO_EXTRA
    return {k: v for k, v in raw.items() if k not in known}


def from_openai(messages: Sequence[Any]) -> list[Message]:
    """Parse Chat Completions messages. Raises ``RequestFormatError``."""
    if not isinstance(messages, (list, tuple)):
        raise RequestFormatError([{"index": None, "field": "messages", "message": "must be a list"}])
    errors = _Errors()
    parsed: list[Message] = []
    append = parsed.append
    for i, raw in enumerate(messages):
        if type(raw) is not dict and not isinstance(raw, Mapping):
            errors.add(i, f"messages[{i}]", "a message must be an object")
            continue
        role = raw.get("role")
        if not isinstance(role, str) or role not in _OPENAI_ROLE_SET:
            errors.add(i, f"messages[{i}].role", f"must be one of {', '.join(OPENAI_ROLES)}")
            continue
        value = raw.get("content", _ABSENT)
        # The common shapes first: a string, or null.
        if type(value) is str:
            form, blocks = STRING, (Text(value, NO_EXTRA),)
            content = None
        elif value is None:
            content = _NULL_CONTENT
            form, blocks = NULL, ()
        elif value is _ABSENT:
            content = _ABSENT_CONTENT
            form, blocks = ABSENT, ()
        else:
            content = _openai_content(raw, f"messages[{i}]", i, errors)
            form, blocks = content.form, content.blocks
        if role == "tool":
            if content is None:
                content = Content(form, blocks)
            call_id = raw.get("tool_call_id")
            if call_id is not None and type(call_id) is not str:
                errors.add(i, f"messages[{i}].tool_call_id", "must be a string")
                continue
            has_id = call_id is not None or "tool_call_id" in raw
            result = ToolResult(call_id if has_id else None, content, None, NO_EXTRA)
            # (role, content and tool_call_id only: the common case, no extra to build)
            if value is not _ABSENT and has_id and (len(raw) == 3 or (len(raw) == 4 and "name" in raw)):
                # (and the tool's name, as τ-bench's tool messages carry it)
                extra = NO_EXTRA if len(raw) == 3 else {"name": raw["name"]}
            else:
                extra = _extra(raw, _TOOL_KEYS)
            only = (result,)
            append(Message(role, only, content.form, extra, i, (), only))
            continue
        if len(raw) == 2 and value is not _ABSENT:  # role and content only: the commonest message
            append(Message(role, blocks, form, NO_EXTRA, i, (), ()))
            continue
        raw_calls = raw.get("tool_calls")
        # Only a non-empty list is parsed; ``[]`` or ``null`` stays in extra
        # and is rendered back as it came.
        if raw_calls is None or (type(raw_calls) is list and not raw_calls):
            plain = NO_EXTRA if len(raw) == (1 if value is _ABSENT else 2) else _extra(raw, _PLAIN_KEYS)
            append(Message(role, blocks, form, plain, i, (), ()))
            continue
        if type(raw_calls) is not list:
            errors.add(i, f"messages[{i}].tool_calls", "must be a list")
            continue
        call_list = []
        for n, raw_call in enumerate(raw_calls):
            call = _openai_call(raw_call, i, n, errors)
            if call is not None:
                call_list.append(call)
        found = tuple(call_list)
        extra = NO_EXTRA if len(raw) == 3 and "content" in raw else _extra(raw, _CALL_KEYS)
        append(Message(role, blocks + found, form, extra, i, found, ()))
    errors.raise_if_any()
    return parsed


_ABSENT = object()
# Empty contents carry nothing to differ in; one of each is shared.
_NULL_CONTENT = Content(NULL)
_ABSENT_CONTENT = Content(ABSENT)


def _render_openai_content(form: str, blocks: Iterable) -> Any:
    if form == NULL:
        return None
    if form == STRING:
        texts = [b.text for b in blocks if isinstance(b, Text)]
        return "".join(texts)
    parts = []
    for b in blocks:
        if isinstance(b, Text):
            parts.append({"type": "text", "text": b.text, **b.extra})
        elif isinstance(b, Opaque):
            parts.append(dict(b.data))
    return parts


def _one_string(blocks: tuple) -> str | None:
    """The text of a string content's single text block (the common case,
    which renders as that very string), else None."""
    if len(blocks) == 1:
        only = blocks[0]
        if type(only) is Text and type(only.text) is str:
            return only.text
    return None


def message_to_openai(message: Message) -> dict:
    out: dict[str, Any] = {"role": message.role}
    if message.role == "tool":
        result = message.results[0]
        if result.call_id is not None:
            out["tool_call_id"] = result.call_id
        content = result.content
        if content.form != ABSENT:
            text = _one_string(content.blocks) if content.form == STRING else None
            out["content"] = text if text is not None else _render_openai_content(content.form, content.blocks)
    else:
        if message.form != ABSENT:
            text = _one_string(message.blocks) if message.form == STRING and not message.calls else None
            out["content"] = text if text is not None else _render_openai_content(
                message.form, (b for b in message.blocks if not isinstance(b, ToolCall)))
        if message.calls:
            calls = []
            for call in message.calls:
                rendered: dict[str, Any] = {}
                if call.id is not None:
                    rendered["id"] = call.id
                rendered.update(call.extra)
                rendered["function"] = {"name": call.name, "arguments": call.arguments, **call.function_extra}
                calls.append(rendered)
            out["tool_calls"] = calls
    if message.extra:
        out.update(message.extra)
    return out


def to_openai(messages: Iterable[Message]) -> list[dict]:
    return [message_to_openai(m) for m in messages]


# ------------------------------------------------------------- Anthropic


def _anthropic_inner_content(value: Any, where: str, index: int | None, errors: _Errors) -> Content:
    """A tool_result's content or the system prompt: a string or text/other blocks."""
    if isinstance(value, str):
        return Content(STRING, (Text(value, {}),))
    if isinstance(value, list):
        blocks = []
        for n, block in enumerate(value):
            if not _is_mapping(block):
                errors.add(index, f"{where}[{n}]", "a content block must be an object")
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                blocks.append(Text(block["text"], {k: v for k, v in block.items() if k not in ("type", "text")}))
            else:
                blocks.append(Opaque(dict(block)))
        return Content(PARTS, tuple(blocks))
    errors.add(index, where, "must be a string or a list of content blocks")
    return Content(ABSENT)


def _anthropic_block(block: Any, where: str, index: int, errors: _Errors):
    if not _is_mapping(block):
        errors.add(index, where, "a content block must be an object")
        return None
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return Text(block["text"], {k: v for k, v in block.items() if k not in ("type", "text")})
    if kind == "tool_use":
        call_id, name = block.get("id"), block.get("name")
        if call_id is not None and not isinstance(call_id, str):
            errors.add(index, f"{where}.id", "must be a string")
            return None
        if not isinstance(name, str) or not name:
            errors.add(index, f"{where}.name", "must be a non-empty string")
            return None
        if "input" not in block:
            errors.add(index, f"{where}.input", "is required")
            return None
        return ToolCall(id=call_id if "id" in block else None, name=name, arguments=block["input"],
                        extra={k: v for k, v in block.items() if k not in ("type", "id", "name", "input")})
    if kind == "tool_result":
        call_id = block.get("tool_use_id")
        if call_id is not None and not isinstance(call_id, str):
            errors.add(index, f"{where}.tool_use_id", "must be a string")
            return None
        is_error = block.get("is_error")
        if "is_error" in block and not isinstance(is_error, bool):
            errors.add(index, f"{where}.is_error", "must be true or false")
            return None
        content = (_anthropic_inner_content(block["content"], f"{where}.content", index, errors)
                   if "content" in block else Content(ABSENT))
        return ToolResult(call_id=call_id if "tool_use_id" in block else None, content=content,
                          is_error=is_error if "is_error" in block else None,
                          extra={k: v for k, v in block.items()
                                 if k not in ("type", "tool_use_id", "content", "is_error")})
    return Opaque(dict(block))


def from_anthropic(messages: Sequence[Any], system: Any = None) -> tuple[list[Message], Content | None]:
    """Parse Messages API ``messages`` and the top-level ``system``.
    Raises ``RequestFormatError``."""
    errors = _Errors()
    system_content = None
    if system is not None:
        system_content = _anthropic_inner_content(system, "system", None, errors)
    if not isinstance(messages, (list, tuple)):
        raise RequestFormatError([{"index": None, "field": "messages", "message": "must be a list"}])
    parsed: list[Message] = []
    for i, raw in enumerate(messages):
        where = f"messages[{i}]"
        if not _is_mapping(raw):
            errors.add(i, where, "a message must be an object")
            continue
        role = raw.get("role")
        if role not in ANTHROPIC_ROLES:
            hint = " (the system prompt goes in the top-level system field)" if role == "system" else ""
            errors.add(i, f"{where}.role", f"must be user or assistant{hint}")
            continue
        value = raw.get("content")
        if isinstance(value, str):
            form, blocks = STRING, (Text(value, {}),)
        elif isinstance(value, list):
            form = PARTS
            blocks = tuple(b for b in (_anthropic_block(block, f"{where}.content[{n}]", i, errors)
                                       for n, block in enumerate(value)) if b is not None)
        else:
            errors.add(i, f"{where}.content", "must be a string or a list of content blocks")
            continue
        extra = {k: v for k, v in raw.items() if k not in ("role", "content")}
        parsed.append(make_message(role, blocks, form, extra, i))
    errors.raise_if_any()
    return parsed, system_content


def _render_anthropic_block(block) -> dict:
    if isinstance(block, Text):
        return {"type": "text", "text": block.text, **block.extra}
    if isinstance(block, ToolCall):
        out = {"type": "tool_use"}
        if block.id is not None:
            out["id"] = block.id
        out["name"] = block.name
        out["input"] = block.arguments
        out.update(block.extra)
        return out
    if isinstance(block, ToolResult):
        out = {"type": "tool_result"}
        if block.call_id is not None:
            out["tool_use_id"] = block.call_id
        if block.content.form != ABSENT:
            out["content"] = render_anthropic_content(block.content)
        if block.is_error is not None:
            out["is_error"] = block.is_error
        out.update(block.extra)
        return out
    return dict(block.data)


def render_anthropic_content(content: Content) -> Any:
    if content.form == STRING:
        return "".join(b.text for b in content.blocks if isinstance(b, Text))
    return [_render_anthropic_block(b) for b in content.blocks]


def message_to_anthropic(message: Message) -> dict:
    out: dict[str, Any] = {"role": message.role,
                           "content": render_anthropic_content(Content(message.form, message.blocks))}
    out.update(message.extra)
    return out


def to_anthropic(messages: Iterable[Message]) -> list[dict]:
    return [message_to_anthropic(m) for m in messages]


# ------------------------------------------------------------ either one


def parse(format: str, messages: Sequence[Any], *, system: Any = None, tools: Any = None) -> Transcript:
    """Parse a request in ``format`` (``"openai"`` or ``"anthropic"``)."""
    if format == OPENAI:
        if system is not None:
            raise RequestFormatError([{"index": None, "field": "system",
                                       "message": "OpenAI requests carry system prompts as messages"}])
        return Transcript(OPENAI, from_openai(messages), None, tools)
    if format == ANTHROPIC:
        parsed, system_content = from_anthropic(messages, system)
        return Transcript(ANTHROPIC, parsed, system_content, tools)
    raise RequestFormatError([{"index": None, "field": "format", "message": "must be openai or anthropic"}])


def render_messages(format: str, messages: Iterable[Message]) -> list[dict]:
    return to_openai(messages) if format == OPENAI else to_anthropic(messages)


def render_system(system: Content | None) -> Any:
    """Anthropic's top-level system as it came (``None`` when absent)."""
    return None if system is None else render_anthropic_content(system)
