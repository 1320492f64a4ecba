"""The ingest document and its validation (SPEC §3).

A document is validated whole before anything is written: every problem is
collected under the path of the field it concerns (``messages[3].role``), so
an integrator can fix them all in one round. Pure: no database. Whether a
``run_id`` names a run already stored for the conversation is checked by the
ingest service, which knows what is stored.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils.dateparse import parse_datetime
from datetime import timezone as dt_timezone

from django.utils import timezone

from .models import MessageRole, MessageStatus, RunStatus

RUN_STATUSES = frozenset(RunStatus.values)
MESSAGE_ROLES = frozenset(MessageRole.values)
MESSAGE_STATUSES = frozenset(MessageStatus.values)
MAX_SCOPE = 100
MAX_ID = 200
MAX_TITLE = 500
# What a document, a run, a message and a tool call of an assistant message
# hold (SPEC §3); anything else is refused.
DOCUMENT_KEYS = frozenset({"scope", "id", "title", "metadata", "runs", "messages"})
RUN_KEYS = frozenset({"id", "status", "created_at"})
MESSAGE_KEYS = frozenset({"id", "run_id", "role", "content", "status", "created_at", "tool_calls", "tool_call_id"})
TOOL_CALL_KEYS = frozenset({"id", "name", "arguments"})


class DocumentInvalid(Exception):
    """The document cannot be ingested; ``errors`` maps field paths to messages."""

    def __init__(self, errors: dict[str, list[str]]):
        self.errors = errors
        first = next(iter(errors.items()))
        super().__init__(f"{first[0]}: {first[1][0]}" + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""))


@dataclass(frozen=True)
class RunDoc:
    id: str
    status: str
    created_at: datetime | None


@dataclass(frozen=True)
class ToolCallDoc:
    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class MessageDoc:
    id: str
    run_id: str | None
    role: str
    content: str
    status: str
    created_at: datetime
    tool_calls: tuple[ToolCallDoc, ...] | None
    tool_call_id: str

    def tool_calls_json(self) -> list[dict] | None:
        if self.tool_calls is None:
            return None
        return [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in self.tool_calls]


@dataclass(frozen=True)
class Document:
    scope: str
    id: str
    title: str | None
    metadata: dict | None
    runs: tuple[RunDoc, ...]
    messages: tuple[MessageDoc, ...]
    size_bytes: int = 0


@dataclass
class _Errors:
    found: dict[str, list[str]] = field(default_factory=dict)

    def add(self, path: str | tuple[str, ...], message: str) -> None:
        # A path may come in parts, joined only here: building every field's
        # path up front costs more than validating it.
        if not isinstance(path, str):
            path = "".join(path)
        self.found.setdefault(path, []).append(message)

    def __bool__(self) -> bool:
        return bool(self.found)


def parse_document_bytes(raw: bytes) -> Document:
    """Decode, parse and validate one document given as bytes."""
    limit = settings.INGEST_MAX_DOCUMENT_BYTES
    if len(raw) > limit:
        raise DocumentInvalid({"document": [f"document is {len(raw)} bytes; the limit is {limit} bytes"]})
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentInvalid(
            {"document": [f"not valid UTF-8: byte {exc.start} ({raw[exc.start:exc.start + 1]!r}) cannot be decoded"]}
        ) from None
    return parse_document_text(text, size_bytes=len(raw))


def parse_document_text(text: str, *, size_bytes: int | None = None) -> Document:
    if size_bytes is None:
        size_bytes = len(text.encode("utf-8", "surrogatepass"))
        limit = settings.INGEST_MAX_DOCUMENT_BYTES
        if size_bytes > limit:
            raise DocumentInvalid({"document": [f"document is {size_bytes} bytes; the limit is {limit} bytes"]})
    repeated: list = []
    try:
        data = json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_objects(repeated))
    except json.JSONDecodeError as exc:
        raise DocumentInvalid(
            {"document": [f"malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"]}
        ) from None
    except ValueError as exc:  # NaN/Infinity, or an integer too long to read
        raise DocumentInvalid({"document": [f"malformed JSON: {str(exc)[:120]}"]}) from None
    except RecursionError:
        raise DocumentInvalid({"document": ["malformed JSON: nested too deeply"]}) from None
    if repeated:
        raise DocumentInvalid(_duplicate_keys(data))
    return validate_document(data, size_bytes=size_bytes)


class _Repeated(dict):
    """A JSON object that named a key more than once (``repeated``)."""

    repeated: list[str]


def _objects(met: list):
    """The parse's object hook: every object of the document passes here.
    A repeated key is refused, never "last one wins": a proxy or a log
    reading the first one would disagree with what we store (a document's
    ``scope`` above all). ``met`` gets an entry when one is found."""

    def build(pairs: list) -> dict:
        obj = dict(pairs)
        if len(obj) == len(pairs):
            return obj
        repeated = _Repeated(obj)
        seen: set = set()
        repeated.repeated = list(dict.fromkeys(k for k, _ in pairs if k in seen or seen.add(k)))
        met.append(True)
        return repeated

    return build


def _duplicate_keys(value, path: str = "") -> dict[str, list[str]]:
    """Every repeated key of the document, under its field path (walked only
    when the parse met one; an object's repeated key is reported at the key's
    own path, ``messages[3].role``)."""
    found: dict[str, list[str]] = {}
    stack = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, dict):
            for key in getattr(item, "repeated", ()):
                found.setdefault(f"{where}.{key}" if where else key, []).append(
                    f"the key {key!r} is given more than once")
            stack.extend((v, f"{where}.{k}" if where else k) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((v, f"{where}[{i}]") for i, v in enumerate(item))
    return dict(sorted(found.items()))


def _refuse_constant(name: str):
    # Python reads NaN, Infinity and -Infinity; JSON (and PostgreSQL) do not.
    raise ValueError(f"{name} is not a JSON value")


def _object(errors: _Errors, path: str, value: Any, keys: frozenset[str]) -> bool:
    """Whether ``value`` is an object; every key of it outside ``keys`` is
    refused as an unknown field (SPEC §3: nothing is silently dropped)."""
    if not isinstance(value, dict):
        errors.add(path, f"must be an object, got {type(value).__name__}")
        return False
    for key in value:
        if key not in keys:
            errors.add((path, ".", key), "unknown field")
    return True


def _list(errors: _Errors, path: str | tuple[str, ...], value: Any) -> bool:
    if not isinstance(value, list):
        errors.add(path, f"must be a list, got {type(value).__name__}")
        return False
    return True


def _choice(errors: _Errors, path: tuple[str, ...], value: Any, allowed: frozenset[str], what: str, *,
            required: bool = False) -> bool:
    """Whether ``value`` is one of ``allowed`` (a run status, a role...);
    a missing required one is refused as such."""
    if value is None and required:
        errors.add(path, "this field is required")
        return False
    if not isinstance(value, str) or value not in allowed:
        errors.add(path, f"unknown {what} {value!r}; expected one of {sorted(allowed)}")
        return False
    return True


def _unique(errors: _Errors, path: tuple[str, ...], value: str | None, seen: set[str], what: str) -> None:
    """An id given twice in one document is refused at its second place."""
    if value is not None:
        if value in seen:
            errors.add(path, f"duplicate {what} id {value!r}")
        seen.add(value)


def _not_given(errors: _Errors, path: str | tuple[str, ...], value: Any, *, required: bool, kind: str) -> None:
    """A string field that is not a string: a missing one is refused when it
    is required, one of another JSON type always. (Called only then: the
    check itself stays inline, since every field of every message makes it.)"""
    if value is None:
        if required:
            errors.add(path, "this field is required")
        return
    errors.add(path, f"must be {kind}, got {type(value).__name__}")


def _text(errors: _Errors, path: str | tuple[str, ...], value: Any, *, required: bool, max_chars: int | None = None,
          allow_blank: bool = False, max_bytes: int | None = None, what: str = "content") -> str | None:
    if not isinstance(value, str):
        _not_given(errors, path, value, required=required, kind="a string")
        return None
    if "\x00" in value:
        errors.add(path, "must not contain NUL characters")
        return None
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        errors.add(path, "is not valid UTF-8 text (contains an unpaired surrogate)")
        return None
    if not allow_blank and not value.strip():
        errors.add(path, "must not be blank")
        return None
    if max_chars is not None and len(value) > max_chars:
        errors.add(path, f"is {len(value)} characters; at most {max_chars} allowed")
        return None
    if max_bytes is not None and size > max_bytes:
        errors.add(path, f"{what} is {size} bytes; the limit is {max_bytes} bytes")
        return None
    return value


def _check_json_text(errors: _Errors, path: str, value: Any) -> None:
    """Strings anywhere in free-form JSON must be storable text too."""
    if isinstance(value, str):
        _text(errors, path, value, required=True, allow_blank=True)
    elif isinstance(value, float) and not math.isfinite(value):
        errors.add(path, "number is out of range")  # 1e400 reads as inf, which JSON cannot carry
    elif isinstance(value, dict):
        for key, item in value.items():
            if _text(errors, f"{path}.{key!r}", key, required=True, allow_blank=True) is not None:
                _check_json_text(errors, f"{path}.{key}", item)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_json_text(errors, f"{path}[{i}]", item)


def _timestamp(errors: _Errors, path: str | tuple[str, ...], value: Any, *, required: bool) -> datetime | None:
    if not isinstance(value, str):
        _not_given(errors, path, value, required=required, kind="an ISO 8601 timestamp string")
        return None
    try:
        parsed = parse_datetime(value)
    except ValueError:
        parsed = None
    if parsed is None:
        errors.add(path, f"{value[:40]!r} is not an ISO 8601 timestamp")
        return None
    if parsed.tzinfo is dt_timezone.utc:
        return parsed  # already UTC: nothing to convert or range-check
    if timezone.is_naive(parsed):
        parsed = timezone.make_aware(parsed, dt_timezone.utc)
    # Stored in UTC: databases refuse some offsets Python accepts, and a time
    # that falls before year 1 in UTC cannot be stored or read back.
    try:
        return parsed.astimezone(dt_timezone.utc)
    except OverflowError:
        errors.add(path, f"{value[:40]!r} is out of range")
        return None


def validate_document(data: Any, *, size_bytes: int = 0) -> Document:
    errors = _Errors()
    if not isinstance(data, dict):
        raise DocumentInvalid({"document": [f"must be a JSON object, got {type(data).__name__}"]})
    for key in data:
        if key not in DOCUMENT_KEYS:
            errors.add(key, "unknown field")

    scope = _text(errors, "scope", data.get("scope"), required=True, max_chars=MAX_SCOPE)
    conv_id = _text(errors, "id", data.get("id"), required=True, max_chars=MAX_ID)
    title = _text(errors, "title", data.get("title"), required=False, max_chars=MAX_TITLE, allow_blank=True)
    metadata = data.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        errors.add("metadata", f"must be an object, got {type(metadata).__name__}")
        metadata = None
    elif metadata is not None:
        try:
            _check_json_text(errors, "metadata", metadata)
            size = len(json.dumps(metadata, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))
        except (RecursionError, ValueError):
            errors.add("metadata", "is nested too deeply")
        else:
            limit = settings.INGEST_MAX_METADATA_BYTES
            if size > limit:
                errors.add("metadata", f"metadata is {size} bytes as JSON; the limit is {limit} bytes")

    runs_raw = data.get("runs", [])
    if not _list(errors, "runs", runs_raw):
        runs_raw = []
    messages_raw = data.get("messages", [])
    if not _list(errors, "messages", messages_raw):
        messages_raw = []
    max_messages = settings.INGEST_MAX_MESSAGES
    if len(messages_raw) > max_messages:
        raise DocumentInvalid(
            {"messages": [f"document has {len(messages_raw)} messages; the limit is {max_messages}"]}
        )

    runs = _runs(errors, runs_raw)
    messages = _messages(errors, messages_raw)
    if errors:
        raise DocumentInvalid(errors.found)
    return Document(
        scope=scope,
        id=conv_id,
        title=title,
        metadata=metadata,
        runs=tuple(runs),
        messages=tuple(messages),
        size_bytes=size_bytes,
    )


def _runs(errors: _Errors, runs_raw: list) -> list[RunDoc]:
    runs: list[RunDoc] = []
    run_ids: set[str] = set()
    for i, raw in enumerate(runs_raw):
        path = f"runs[{i}]"
        if not _object(errors, path, raw, RUN_KEYS):
            continue
        run_id = _text(errors, (path, ".id"), raw.get("id"), required=True, max_chars=MAX_ID)
        status = raw.get("status")
        if not _choice(errors, (path, ".status"), status, RUN_STATUSES, "run status", required=True):
            status = None
        created_at = _timestamp(errors, (path, ".created_at"), raw.get("created_at"), required=False)
        _unique(errors, (path, ".id"), run_id, run_ids, "run")
        if run_id is not None and status is not None:
            runs.append(RunDoc(id=run_id, status=status, created_at=created_at))
    return runs


def _messages(errors: _Errors, messages_raw: list) -> list[MessageDoc]:
    content_limit = settings.INGEST_MAX_CONTENT_BYTES
    arguments_limit = settings.INGEST_MAX_TOOL_ARGUMENTS_BYTES
    messages: list[MessageDoc] = []
    message_ids: set[str] = set()
    for i, raw in enumerate(messages_raw):
        path = f"messages[{i}]"
        if not _object(errors, path, raw, MESSAGE_KEYS):
            continue
        before = len(errors.found)
        message_id = _text(errors, (path, ".id"), raw.get("id"), required=True, max_chars=MAX_ID)
        _unique(errors, (path, ".id"), message_id, message_ids, "message")
        run_id = _text(errors, (path, ".run_id"), raw.get("run_id"), required=False, max_chars=MAX_ID)
        role = raw.get("role")
        _choice(errors, (path, ".role"), role, MESSAGE_ROLES, "role", required=True)
        status = raw.get("status", "completed")
        _choice(errors, (path, ".status"), status, MESSAGE_STATUSES, "message status")
        content = _text(errors, (path, ".content"), raw.get("content", ""), required=True, allow_blank=True,
                        max_bytes=content_limit)
        created_at = _timestamp(errors, (path, ".created_at"), raw.get("created_at"), required=True)
        raw_calls = raw.get("tool_calls")
        tool_calls = None if raw_calls is None else _tool_calls(errors, path, raw_calls, role, arguments_limit)
        tool_call_id = raw.get("tool_call_id")
        if role == "tool":
            tool_call_id = _text(errors, (path, ".tool_call_id"), tool_call_id, required=True, max_chars=MAX_ID)
        elif tool_call_id is not None:
            tool_call_id = _text(errors, (path, ".tool_call_id"), tool_call_id, required=False, max_chars=MAX_ID)
        if len(errors.found) == before:
            messages.append(
                MessageDoc(
                    id=message_id,
                    run_id=run_id,
                    role=role,
                    content=content,
                    status=status,
                    created_at=created_at,
                    tool_calls=tool_calls,
                    tool_call_id=tool_call_id or "",
                )
            )
    return messages


def _tool_calls(errors: _Errors, path: str, raw_calls: Any, role: Any,
                arguments_limit: int) -> tuple[ToolCallDoc, ...] | None:
    """An assistant message's tool calls (SPEC §3); ``None`` when it has none."""
    if not _list(errors, (path, ".tool_calls"), raw_calls):
        return None
    if role != "assistant" and raw_calls:
        errors.add((path, ".tool_calls"), "only assistant messages may carry tool calls")
        return None
    calls = []
    for j, call in enumerate(raw_calls):
        cpath = f"{path}.tool_calls[{j}]"
        if not _object(errors, cpath, call, TOOL_CALL_KEYS):
            continue
        cid = _text(errors, (cpath, ".id"), call.get("id"), required=True, max_chars=MAX_ID)
        name = _text(errors, (cpath, ".name"), call.get("name"), required=True, max_chars=MAX_ID)
        args = call.get("arguments", "")
        if isinstance(args, (dict, list)):
            try:
                args = json.dumps(args, ensure_ascii=False, sort_keys=True)
            except (RecursionError, ValueError):
                errors.add((cpath, ".arguments"), "is nested too deeply")
                continue
        args = _text(errors, (cpath, ".arguments"), args, required=False, allow_blank=True,
                     max_bytes=arguments_limit, what="arguments")
        if cid is not None and name is not None:
            calls.append(ToolCallDoc(id=cid, name=name, arguments=args or ""))
    return tuple(calls) if calls else None
