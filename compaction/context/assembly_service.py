"""Context assembly as a service (SPEC §9, §10; seed 004 §5, seed 002 §11): the
one place the REST endpoint and the desk inspector call the pure library
through.

``context_assemble`` takes a request body as JSON data (the REST shape:
``format``, ``messages``, ``system``, ``tools``, ``config``), checks the
limits the endpoint holds (``CONTEXT_ASSEMBLE_MAX_MESSAGES``,
``CONTEXT_ASSEMBLE_MAX_MESSAGE_BYTES``, ``CONTEXT_ASSEMBLE_MAX_INPUT_LIMIT``;
text must be valid Unicode, without lone surrogates; JSON inside a message
at most ``MAX_DEPTH`` levels deep), assembles with the
configured work-summary writer (``providers.loop``), records the seed 004
metrics and logs each tool-loop compaction as an event (``compacting``,
then ``compacted`` or ``compaction_failed``, on ``compaction.events`` with
the engine's ``event key=value`` form and ``layer="tool_loop"``).

Nothing is written: assembly is stateless and the work summary belongs to
the caller's run (seed 002 §7.10).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Mapping

from django.conf import settings

from ..engine.metrics import emit
from ..providers.loop import loop_summariser_get
from . import assembly_metrics
from .assembly import AssemblyError, AssemblyResult, RequestFormatError, assemble_request, default_counter


class BodyLimitExceeded(RequestFormatError):
    """A limit of the endpoint (not of the format): too many messages, a
    message too large, an absurd ``model_input_limit``."""

    code = "request_too_large"


@dataclass
class Assembled:
    result: AssemblyResult
    seconds: float


MAX_DEPTH = 64  # JSON nesting inside one message (or the tools, system, config)


class _TooDeep(Exception):
    pass


def _message_bytes(value: Any, depth: int = 0) -> int:
    """The UTF-8 size of every string in a message (keys included), the way
    ingest limits a message's content; raises ``UnicodeEncodeError`` on a
    lone surrogate and ``_TooDeep`` past ``MAX_DEPTH`` levels."""
    if isinstance(value, str):
        return len(value) if value.isascii() else len(value.encode("utf-8"))
    if depth >= MAX_DEPTH and isinstance(value, (Mapping, list)):
        raise _TooDeep
    if isinstance(value, Mapping):
        return sum(_message_bytes(k, depth + 1) + _message_bytes(v, depth + 1) for k, v in value.items())
    if isinstance(value, list):
        return sum(_message_bytes(v, depth + 1) for v in value)
    return 0


def check_limits(body: Any) -> None:
    """Refuse what exceeds the endpoint's limits, naming each field."""
    if not isinstance(body, Mapping):
        return  # the library names the shape error
    errors: list[dict] = []
    messages = body.get("messages")
    limit = settings.CONTEXT_ASSEMBLE_MAX_MESSAGES
    if isinstance(messages, list):
        if len(messages) > limit:
            errors.append({"index": None, "field": "messages",
                           "message": f"{len(messages)} messages; at most {limit} allowed"})
        else:
            cap = settings.CONTEXT_ASSEMBLE_MAX_MESSAGE_BYTES
            for i, message in enumerate(messages):
                try:
                    size = _message_bytes(message)
                except UnicodeEncodeError:
                    errors.append({"index": i, "field": f"messages[{i}]",
                                   "message": "is not valid UTF-8 text (contains an unpaired surrogate)"})
                    continue
                except _TooDeep:
                    errors.append({"index": i, "field": f"messages[{i}]",
                                   "message": f"is nested more than {MAX_DEPTH} levels deep"})
                    continue
                if size > cap:
                    errors.append({"index": i, "field": f"messages[{i}]",
                                   "message": f"is {size} bytes of text; the limit is {cap} bytes"})
    for key in ("system", "tools", "config"):
        try:
            _message_bytes(body.get(key))
        except UnicodeEncodeError:
            errors.append({"index": None, "field": key,
                           "message": "is not valid UTF-8 text (contains an unpaired surrogate)"})
        except _TooDeep:
            errors.append({"index": None, "field": key, "message": f"is nested more than {MAX_DEPTH} levels deep"})
    config = body.get("config")
    if isinstance(config, Mapping):
        value = config.get("model_input_limit")
        cap = settings.CONTEXT_ASSEMBLE_MAX_INPUT_LIMIT
        if isinstance(value, int) and not isinstance(value, bool) and value > cap:
            errors.append({"index": None, "field": "config.model_input_limit",
                           "message": f"must be at most {cap}"})
    if errors:
        raise BodyLimitExceeded(errors)


def _emit_events(result: AssemblyResult) -> None:
    report = result.report
    for event in report.events:
        fields = {"layer": "tool_loop", "format": result.format, "remaining_messages": report.messages_after,
                  **{k: v for k, v in event.items() if k != "event"}}
        emit(event["event"], **fields)


def context_assemble(*, body: Any, summariser=None) -> Assembled:
    """Assemble one request body (SPEC §9): an ``Assembled`` on success; an
    ``AssemblyError`` (with ``code`` and ``as_dict()``) raised otherwise.
    Fail-closed refusals are counted; shape errors are the caller's."""
    check_limits(body)
    count = default_counter()
    if summariser is None:
        summariser = loop_summariser_get(count)
    format = body.get("format") if isinstance(body, Mapping) else None
    started = time.perf_counter()
    try:
        result = assemble_request(body, counter=count, summariser=summariser)
    except AssemblyError as error:
        if not isinstance(error, RequestFormatError) and error.code != "invalid_config":
            assembly_metrics.observe(error, format=format, seconds=time.perf_counter() - started)
        raise
    seconds = time.perf_counter() - started
    assembly_metrics.observe(result, format=result.format, seconds=seconds)
    _emit_events(result)
    return Assembled(result=result, seconds=seconds)
