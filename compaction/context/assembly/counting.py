"""How a request is counted in tokens (SPEC §9 "Budget", seed 004 §2 and
"Token 估计误差", seed 002 §10).

The budget is ``model_input_limit − output_reserve_tokens −
safety_margin_tokens``; what is counted against it is the whole request:
messages, Anthropic's top-level system prompt and the tool schemas. Text is
counted by a *text counter* — by default tiktoken's offline ``cl100k_base``
through ``compaction.tokens.count_tokens`` (which falls back to a named
character estimate when the encoding cannot load), or any
``Callable[[str], int]`` the caller gives. Around the text, this module adds
the fixed overheads of the OpenAI cookbook's ``num_tokens_from_messages``
rule, applied the same way to both formats:

=================================  ==========================================
the request                        3 (the reply is primed with the assistant header)
each message                       4 (3 for the message frame + 1 for the role)
a text part                        its text
an opaque part (image, thinking…)  its canonical JSON (coarse: an image is billed
                                   by size, not by its base64 text)
a tool call                        3 + its name + its arguments as text (OpenAI's
                                   string as sent, Anthropic's input as compact JSON)
an Anthropic ``tool_result``       3 + its content; an OpenAI ``tool`` message is
                                   counted as a message with its content
a message's ``name``               1 + the name
any other message-level value      its text (strings) or canonical JSON (lists,
                                   objects); null and booleans count nothing
Anthropic's top-level ``system``   4 + its text, like a message
the tool schemas                   the canonical JSON of the ``tools`` list
=================================  ==========================================

Ids, ``type`` keys and ``cache_control`` marks are not counted; that is what
the safety margin (1,024 tokens by default) is for: the local count is a
stable estimate, not the provider's bill.

Every text is counted once per process at most: ``CachedCounter`` keeps
counts keyed by the text (by its BLAKE2b digest past 256 characters, so the
cache never holds long texts), because an agent resends the same history
every turn and only the newest messages are new.

Within one assembly a message is counted exactly once at most, and only
when something needs its exact size (``MessageTokens``): what is sent, the
protected buckets, the tool loop's working region, and the middle from the
newest unit back until the budget is full (``trim``) — older units are
dropped whatever their size, so a cold run costs what its budget holds, not
what the run holds. For what is not counted, ``message_floor`` is a
provable lower bound (the fixed overheads above; every text counts ≥ 0),
used only in the figures the report marks as lower bounds. A text counter
must return a non-negative count: that is what makes the bound, and the
shortcut, sound.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Callable, Iterable, Sequence

from .neutral import Content, Message, Opaque, Text, ToolCall, ToolResult

TextCounter = Callable[[str], int]

REQUEST_OVERHEAD = 3
MESSAGE_OVERHEAD = 4
CALL_OVERHEAD = 3
RESULT_OVERHEAD = 3
NAME_OVERHEAD = 1


# One encoder for every call (``json.dumps`` with options builds a new one
# each time), and its C part built once too: ``JSONEncoder.encode`` makes a
# new one, with a fresh table of the containers seen, on every call (about
# 1 µs of the 2.7 µs a τ-bench call's arguments take).
_CANONICAL = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"))
_C_CANONICAL = (json.encoder.c_make_encoder(None, _CANONICAL.default, json.encoder.c_encode_basestring, None, ":",
                                            ",", True, False, True)
                if json.encoder.c_make_encoder is not None and json.encoder.c_encode_basestring is not None else None)


def canonical_json(value: Any) -> str:
    if _C_CANONICAL is not None:
        try:
            return "".join(_C_CANONICAL(value, 0))
        except RecursionError:
            pass  # (no table of containers seen: let the full encoder name a circular value)
    return _CANONICAL.encode(value)


class CachedCounter:
    """A text counter with a bounded cache of counts. Deterministic: the
    cache only ever returns what the wrapped counter returned for that text."""

    _DIGEST_FROM = 256

    def __init__(self, count: TextCounter, *, name: str | None = None, maxsize: int = 200_000,
                 splits_at_newlines: bool = False):
        self._count = count
        self._cache: dict[Any, int] = {}
        self._maxsize = maxsize
        self.name = name or getattr(count, "__name__", "counter")
        # Whether the wrapped counter counts newline-joined text piece by
        # piece (``count_joined``); only a counter that says so is trusted.
        self.splits_at_newlines = splits_at_newlines

    def __call__(self, text: str) -> int:
        if not text:
            return 0
        key = text if len(text) <= self._DIGEST_FROM else hashlib.blake2b(
            text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        cached = self._cache.get(key)
        if cached is None:
            cached = self._count(text)
            if len(self._cache) >= self._maxsize:
                # Bounded, and simple: a full cache starts over.
                self._cache.clear()
            self._cache[key] = cached
        return cached

    def clear(self) -> None:
        self._cache.clear()


_DEFAULT: CachedCounter | None = None


def default_counter() -> CachedCounter:
    """tiktoken (offline cl100k_base) through ``compaction.tokens``, cached."""
    global _DEFAULT
    if _DEFAULT is None:
        from compaction.tokens import count_tokens, splits_at_newlines, token_estimator_name

        _DEFAULT = CachedCounter(count_tokens, name=token_estimator_name(), splits_at_newlines=splits_at_newlines())
    return _DEFAULT


def clear_caches() -> None:
    """Forget every memoised count and ledger fact, and the token counts of
    text pieces (the benchmark's cold runs)."""
    from compaction.tokens import forget_pieces

    from .ledger import FACTS

    default_counter().clear()
    forget_pieces()
    FACTS.clear()


def counter_name(count: TextCounter) -> str:
    return getattr(count, "name", None) or getattr(count, "__name__", None) or "caller"


def _content_tokens(blocks: Iterable, count: TextCounter) -> int:
    total = 0
    for b in blocks:
        kind = type(b)
        if kind is Text:
            total += count(b.text)
        elif kind is ToolCall:
            total += CALL_OVERHEAD + count(b.name) + count(b.arguments_text())
        elif kind is ToolResult:
            total += _content_tokens(b.content.blocks, count)
        elif kind is Opaque:
            total += count(canonical_json(b.data))
    return total


def count_message(message: Message, count: TextCounter) -> int:
    blocks = message.blocks
    extra = message.extra
    # The two commonest shapes, a plain text message and an OpenAI tool
    # message, without the general loop.
    if len(blocks) == 1 and not extra:
        only = blocks[0]
        if type(only) is Text:
            return MESSAGE_OVERHEAD + count(only.text)
        if type(only) is ToolResult and message.role == "tool":
            inner = only.content.blocks
            if len(inner) == 1 and type(inner[0]) is Text:
                return MESSAGE_OVERHEAD + count(inner[0].text)
    elif len(blocks) == 1 and message.role == "tool" and type(blocks[0]) is ToolResult and len(extra) == 1 \
            and type(extra.get("name")) is str:
        # An OpenAI tool message that also names its tool (as τ-bench's do).
        inner = blocks[0].content.blocks
        if len(inner) == 1 and type(inner[0]) is Text:
            return MESSAGE_OVERHEAD + count(inner[0].text) + NAME_OVERHEAD + count(extra["name"])
    total = MESSAGE_OVERHEAD + _content_tokens(blocks, count)
    if message.role != "tool":
        # A tool result inside another role's message is framed on its own.
        total += RESULT_OVERHEAD * len(message.results)
    if not extra:
        return total
    for key, value in extra.items():
        if value is None or isinstance(value, bool):
            continue
        if key == "name" and isinstance(value, str):
            total += NAME_OVERHEAD + count(value)
        elif isinstance(value, str):
            total += count(value)
        elif isinstance(value, (list, dict, int, float)):
            total += count(canonical_json(value))
    return total


_ASCII_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def count_joined(texts: Sequence[str], count: TextCounter) -> int:
    """``count("\n".join(texts))``. With a counter that splits at newlines
    (``compaction.tokens.splits_at_newlines``, said by the counter's
    ``splits_at_newlines``) it is the sum of each text's own count, plus one
    per newline after a text ending with an ASCII letter or digit (the
    others are counted with their newline), when no text after the first
    starts with whitespace: the texts' counts are reused from the cache and
    the joined text is never encoded. Otherwise the joined text is counted."""
    if not getattr(count, "splits_at_newlines", False) \
            or any(not t or t[0].isspace() for t in texts[1:]):
        return count("\n".join(texts))
    total = count(texts[-1]) if texts else 0
    for text in texts[:-1]:
        total += count(text) + 1 if text and text[-1] in _ASCII_ALNUM else count(text + "\n")
    return total


def count_note(texts: Sequence[str], count: TextCounter) -> int:
    """``count_message`` of a note whose one text is ``"\n".join(texts)``:
    a plain text message, its overhead and its text (``count_joined``)."""
    return MESSAGE_OVERHEAD + count_joined(texts, count)


def count_system(system: Content | None, count: TextCounter) -> int:
    if system is None:
        return 0
    return MESSAGE_OVERHEAD + _content_tokens(system.blocks, count)


def count_tools(tools: Any, count: TextCounter) -> int:
    if not tools:
        return 0
    return count(canonical_json(tools))


def count_request(messages: Iterable[Message], count: TextCounter, *, system: Content | None = None,
                  tools: Any = None) -> int:
    """The whole request: overhead, tools, system and every message."""
    return (REQUEST_OVERHEAD + count_tools(tools, count) + count_system(system, count)
            + sum(count_message(m, count) for m in messages))


def message_floor(message: Message) -> int:
    """A lower bound of ``count_message(message, count)`` for any counter
    that returns non-negative counts, without counting a text: the message's
    fixed overheads (a call's, and an Anthropic result block's)."""
    floor = MESSAGE_OVERHEAD + CALL_OVERHEAD * len(message.calls)
    if message.role != "tool":
        floor += RESULT_OVERHEAD * len(message.results)
    return floor


class MessageTokens:
    """The exact counts of one assembly's messages, memoised by identity:
    each message is counted at most once, and only when asked for. The memo
    keeps each counted message alive too (``_alive``), so no id is reused
    by another message while it lives."""

    __slots__ = ("count", "_known", "_alive")

    def __init__(self, count: TextCounter):
        self.count = count
        self._known: dict[int, int] = {}
        self._alive: list[Message] = []

    def __call__(self, message: Message) -> int:
        value = self._known.get(id(message))
        if value is None:
            value = self._known[id(message)] = count_message(message, self.count)
            self._alive.append(message)
        return value

    def known(self, message: Message) -> bool:
        return id(message) in self._known
