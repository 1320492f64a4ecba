"""The neutral message form that context assembly works on (SPEC §9, seed 004 §1, "厂商语义差异").

OpenAI Chat Completions and Anthropic Messages say the same things in
different shapes: a tool call is an entry of an assistant message's
``tool_calls`` in one and a ``tool_use`` content block in the other; a
result is a ``role: "tool"`` message in one and a ``tool_result`` block of
the next user message in the other. The rules (pairing, rings, budgets,
the ledger) are written once, over this form; ``adapters`` converts to it
and back.

One neutral ``Message`` stands for exactly one message of the request, in
the same position, so every index the validator or the report gives is an
index into what the caller sent. Nothing is normalised away: each block
keeps the keys this module does not interpret in ``extra``, and a content
remembers whether it was absent, ``null``, a string or a list of parts, so
rendering a parsed message gives back the message that came in (the
round-trip tests hold the adapters to that).

These are plain slotted classes, not frozen ones: a request of 5,000
messages is parsed on every assembly, and frozen dataclasses cost a
``object.__setattr__`` per field. Treat them as values; nothing in the
package mutates one after it is built.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

OPENAI = "openai"
ANTHROPIC = "anthropic"
FORMATS = (OPENAI, ANTHROPIC)

# How a content was spelled, so it can be spelled the same way again.
ABSENT = "absent"  # the key was not there
NULL = "null"  # JSON null (OpenAI assistant messages with tool calls)
STRING = "string"  # a plain string
PARTS = "parts"  # a list of content parts / blocks

# The ``extra`` of the many parts and messages that have none: one shared,
# read-only empty mapping instead of a new dict each.
NO_EXTRA: Mapping[str, Any] = MappingProxyType({})


@dataclass(slots=True)
class Text:
    """A text part. ``extra`` holds the part's other keys (e.g. ``cache_control``)."""

    text: str
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Opaque:
    """A part this package does not interpret (image, document, thinking,
    refusal…), kept exactly as given. It is counted, never read."""

    data: Mapping[str, Any]


@dataclass(slots=True)
class ToolCall:
    """One tool call.

    ``arguments`` is what the format carries: a JSON string for OpenAI, an
    object for Anthropic. ``id`` is ``None`` only when the key was absent.
    ``extra`` holds the call's other keys (OpenAI ``type``, Anthropic
    ``cache_control``); ``function_extra`` the other keys of OpenAI's
    ``function`` object.
    """

    id: str | None
    name: str
    arguments: Any
    extra: Mapping[str, Any] = field(default_factory=dict)
    function_extra: Mapping[str, Any] = field(default_factory=dict)

    def arguments_text(self) -> str:
        """The arguments as text: OpenAI's string as sent, Anthropic's object as compact JSON."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False, separators=(",", ":"))

    def parsed_arguments(self) -> Any:
        """The arguments as a JSON value, or ``None`` when they are not valid JSON."""
        if not isinstance(self.arguments, str):
            return self.arguments
        try:
            return json.loads(self.arguments)
        except ValueError:
            return None


@dataclass(slots=True)
class Content:
    """A content value: how it was spelled (``form``) and its parts."""

    form: str
    blocks: tuple = ()

    def text(self) -> str:
        return _text_of(self.blocks)


def _text_of(blocks: tuple) -> str:
    """The text parts of ``blocks``, one per line."""
    if len(blocks) == 1 and type(blocks[0]) is Text and type(blocks[0].text) is str:
        return blocks[0].text  # the common single text part, as "\n".join would give it
    return "\n".join(b.text for b in blocks if isinstance(b, Text))


@dataclass(slots=True)
class ToolResult:
    """One tool result: the OpenAI ``tool`` message's payload or an Anthropic
    ``tool_result`` block. ``is_error`` is ``None`` when the format or the
    message did not say."""

    call_id: str | None
    content: Content
    is_error: bool | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def text(self) -> str:
        return self.content.text()


@dataclass(slots=True)
class Message:
    """One message of the request, at input position ``index``.

    ``blocks`` are in the order the message carried them. For OpenAI the
    content parts come first and the calls after them (the format keeps them
    apart); a ``tool`` message holds a single ``ToolResult``. ``form`` is how
    the message's own content was spelled (for an OpenAI ``tool`` message
    the result's content carries its own form). ``index`` is ``None`` for
    messages assembly wrote itself (notes, placeholders). ``origin`` names
    those: ``"ledger_note"``, ``"summary_note"``, ``"work_summary"``,
    ``"placeholder_result"``.
    """

    role: str
    blocks: tuple
    form: str
    extra: Mapping[str, Any]
    index: int | None
    calls: tuple  # the ToolCall blocks, in order (a cached view of ``blocks``)
    results: tuple  # the ToolResult blocks, in order
    origin: str | None = None

    def text(self) -> str:
        return _text_of(self.blocks)

    @property
    def is_user_turn(self) -> bool:
        """A message in which the user speaks: role ``user`` with something
        other than tool results (an Anthropic user message that only carries
        ``tool_result`` blocks is the tool answering, not the user)."""
        if self.role != "user":
            return False
        if not self.results:
            return True
        return any(not isinstance(b, ToolResult) for b in self.blocks)

    @property
    def is_system(self) -> bool:
        return self.role in ("system", "developer")


def make_message(role: str, blocks: tuple, form: str, extra: Mapping[str, Any] | None = None,
                 index: int | None = None, origin: str | None = None) -> Message:
    calls = tuple(b for b in blocks if type(b) is ToolCall)
    results = tuple(b for b in blocks if type(b) is ToolResult)
    return Message(role=role, blocks=blocks, form=form, extra=extra if extra is not None else {},
                   index=index, calls=calls, results=results, origin=origin)


@dataclass(slots=True)
class Transcript:
    """A parsed request: its format, messages, Anthropic's top-level system
    prompt (``None`` when absent; OpenAI keeps system prompts as messages)
    and the tool schemas as given (``None`` when absent)."""

    format: str
    messages: list
    system: Content | None = None
    tools: Any = None
