"""The side-effect ledger (SPEC §9 "side-effect ledger", seed 004 §4 摘要压缩：可替换中段，不可抹掉副作用
and "摘要幻觉与副作用重复").

A trimmed or summarised history must not let the agent forget that it
already sent the e-mail or booked the flight: the ledger says, for every
tool call that changed something, which tool ran, its idempotency key, the
resource it touched and how it ended. It is taken from the calls and
results themselves — never from a model — so it cannot be hallucinated
away; it is pinned, so it survives every trim.

Which calls have side effects
  1. Declared by the caller: ``side_effect_tools`` as a list names exactly
     the tools that have side effects (every other tool has none); as an
     object it flags tools one by one (``{"lookup": false, "notify": true}``)
     and a tool it does not name falls back to rule 2.
  2. Otherwise by name. The name is split into words (on ``_ - . /`` and
     camelCase); the call has side effects when one of its words is a write
     verb in ``WRITE_VERBS`` —
     add apply approve archive assign book buy cancel change charge close
     commit confirm create decline delete deploy edit email enroll exchange
     execute grant insert invite issue merge modify move notify patch pay
     post publish purchase push put refund register reject remove rename
     reserve reset restore revoke save schedule send set share submit
     subscribe transfer unsubscribe update upload upsert write —
     unless its first word is a read verb in ``READ_VERBS`` (calculate check
     compute count describe estimate fetch find get list lookup preview
     query read search show think validate verify view), so ``get_post``
     reads and ``send_email`` writes. A name the rule gets wrong is fixed by
     declaring it (rule 1).

What an entry says
  - ``call_id``, ``tool``, and ``index`` (the input message of the call);
  - ``idempotency_key``: the value of an argument named like one
    (``idempotency_key``, ``idempotencyKey``, ``request_id``,
    ``client_token``, ``dedup_key``… see ``IDEMPOTENCY_ARGUMENTS``; top-level
    arguments, compared without case, ``_`` or ``-``), else
    ``sha256:<16 hex>`` of the canonical JSON of the arguments (sorted
    keys, compact; the raw text when it is not JSON), so the same call made
    twice has the same key;
  - ``resource_id``: named by the result when it is a JSON object — its
    ``id``, else ``<noun>_id`` / ``<noun>Id`` for a word of the tool's name
    (``book_reservation`` → ``reservation_id``), else ``<noun>.id``, else
    its first top-level ``*_id`` / ``*Id``; failing that, ``id``,
    ``<noun>_id`` or ``<noun>.id`` in the call's arguments (an argument such as
    ``user_id`` of ``book_reservation`` names who asked, not what was made,
    so no other key); ``resource_id_source`` says which; else null;
  - ``status``: ``missing`` when no result answers it (or only the fixed
    placeholder of ``synthesize_error_results``), ``error`` when the result
    says so (Anthropic ``is_error: true``; a JSON object with a truthy
    ``error``, ``isError``/``is_error`` true, ``success``/``ok`` false or
    ``status`` error/failed/failure; text starting with Error, Exception,
    Traceback or Failed), else ``ok``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from .counting import canonical_json
from .neutral import Message, ToolCall, ToolResult

WRITE_VERBS = frozenset("""
add apply approve archive assign book buy cancel change charge close commit confirm create decline
delete deploy edit email enroll exchange execute grant insert invite issue merge modify move notify
patch pay post publish purchase push put refund register reject remove rename reserve reset restore
revoke save schedule send set share submit subscribe transfer unsubscribe update upload upsert write
""".split())
READ_VERBS = frozenset("""
calculate check compute count describe estimate fetch find get list lookup preview query read search
show think validate verify view
""".split())
IDEMPOTENCY_ARGUMENTS = frozenset("""
idempotencykey idempotencytoken idempotencyid idempotency requestid clientrequestid clienttoken
dedupkey dedupekey dedupid dedupeid deduplicationkey deduplicationid operationid
""".split())

OK, ERROR, MISSING = "ok", "error", "missing"
PLACEHOLDER_ORIGIN = "placeholder_result"

_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_ERROR_TEXT = re.compile(r"^\s*(error|exception|traceback|failed|failure)\b", re.IGNORECASE)


@functools.lru_cache(maxsize=4096)
def tool_words(name: str) -> tuple[str, ...]:
    words = []
    for chunk in _WORD_SPLIT.split(name):
        if chunk:
            words.extend(w.lower() for w in _CAMEL.split(chunk) if w)
    return tuple(words)


@functools.lru_cache(maxsize=4096)
def default_has_side_effects(name: str) -> bool:
    words = tool_words(name)
    if not words or words[0] in READ_VERBS:
        return False
    return any(w in WRITE_VERBS for w in words)


def has_side_effects(name: str, declared: Any = None) -> bool:
    """Rule 1 (a declaration) then rule 2 (the name's verbs)."""
    if declared is None:
        return default_has_side_effects(name)
    if isinstance(declared, (tuple, list, frozenset, set)):
        return name in declared
    if isinstance(declared, Mapping) and name in declared:
        return bool(declared[name])
    return default_has_side_effects(name)


@dataclass(slots=True)
class LedgerEntry:
    """One side-effecting call. A plain slotted class, not a frozen one (as
    ``neutral``'s): a frozen dataclass sets each of its nine fields with
    ``object.__setattr__``, 1.0–1.7 µs an entry against 0.3 µs, and a long run
    has hundreds. Treat it as a value; nothing changes one once built."""

    call_id: str
    tool: str
    idempotency_key: str
    idempotency_key_source: str
    resource_id: str | None
    resource_id_source: str | None
    status: str
    index: int | None
    result_index: int | None

    def as_dict(self) -> dict:
        return {
            "call_id": self.call_id,
            "tool": self.tool,
            "idempotency_key": self.idempotency_key,
            "resource_id": self.resource_id,
            "status": self.status,
            "index": self.index,
            "result_index": self.result_index,
            "idempotency_key_source": self.idempotency_key_source,
            "resource_id_source": self.resource_id_source,
        }

    def line(self) -> str:
        return (f"- {self.tool} call={self.call_id} key={self.idempotency_key} "
                f"resource={self.resource_id if self.resource_id is not None else 'none'} status={self.status}")


@functools.lru_cache(maxsize=4096)
def _normal(key: str) -> str:
    return re.sub(r"[^a-z0-9]", "", key.lower())


_UNSET = object()


def _is_mapping(value: Any) -> bool:
    # JSON gives plain dicts; ``isinstance(x, Mapping)`` goes through the ABC
    # machinery, and this runs several times for every side-effecting call.
    return type(value) is dict or (value is not None and isinstance(value, Mapping))


def idempotency_key(call: ToolCall, args: Any = _UNSET) -> tuple[str, str]:
    if args is _UNSET:
        args = call.parsed_arguments()
    if _is_mapping(args):
        for key, value in args.items():
            if isinstance(key, str) and _normal(key) in IDEMPOTENCY_ARGUMENTS and isinstance(value, (str, int)) \
                    and not isinstance(value, bool) and str(value):
                return str(value), f"argument:{key}"
        material = canonical_json(args)
    elif args is not None:
        material = canonical_json(args)
    else:
        material = call.arguments_text()
    return "sha256:" + hashlib.sha256(material.encode("utf-8")).hexdigest()[:16], "arguments_hash"


@functools.lru_cache(maxsize=4096)
def _nouns(name: str) -> tuple[str, ...]:
    """The words of a tool's name that are neither write nor read verbs."""
    return tuple(w for w in tool_words(name) if w not in WRITE_VERBS and w not in READ_VERBS)


def _scalar(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (str, int)) and str(value):
        return str(value)
    return None


def _find_id(obj: Mapping, nouns: tuple[str, ...], generic: bool) -> tuple[str, str] | None:
    if _scalar(obj.get("id")):
        return _scalar(obj["id"]), "id"
    for noun in nouns:
        for key in (f"{noun}_id", f"{noun}Id", f"{noun}ID"):
            if _scalar(obj.get(key)):
                return _scalar(obj[key]), key
    for noun in nouns:
        inner = obj.get(noun)
        if _is_mapping(inner) and _scalar(inner.get("id")):
            return _scalar(inner["id"]), f"{noun}.id"
    if generic:
        for key, value in obj.items():
            if isinstance(key, str) and (key.endswith("_id") or key.endswith("Id")) and _scalar(value):
                return _scalar(value), key
    return None


def _json_object(text: str) -> Mapping | None:
    text = text.strip()
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if _is_mapping(value) else None


def resource_id(call: ToolCall, result_text: str | None, *, args: Any = _UNSET,
                obj: Any = _UNSET) -> tuple[str | None, str | None]:
    nouns = _nouns(call.name)
    if result_text:
        if obj is _UNSET:
            obj = _json_object(result_text)
        if obj is not None:
            found = _find_id(obj, nouns, generic=True)
            if found:
                return found[0], f"result:{found[1]}"
    if args is _UNSET:
        args = call.parsed_arguments()
    if _is_mapping(args):
        found = _find_id(args, nouns, generic=False)
        if found:
            return found[0], f"arguments:{found[1]}"
    return None, None


def result_status(result: ToolResult | None, message: Message | None, placeholder: bool = False, *,
                  text: str | None = None, obj: Any = _UNSET) -> str:
    if result is None or placeholder or (message is not None and message.origin == PLACEHOLDER_ORIGIN):
        return MISSING
    if result.is_error is True:
        return ERROR
    if result.is_error is False:
        return OK
    if text is None:
        text = result.text()
    if obj is _UNSET:
        obj = _json_object(text)
    if obj is not None:
        if obj.get("error") or obj.get("isError") is True or obj.get("is_error") is True \
                or obj.get("success") is False or obj.get("ok") is False \
                or (isinstance(obj.get("status"), str) and obj["status"].lower() in ("error", "failed", "failure")):
            return ERROR
        return OK
    return ERROR if _ERROR_TEXT.match(text) else OK


class _Facts:
    """What a call and its result say, memoised per process: an agent
    resends the same history every turn, and a long JSON result need not be
    parsed again each time. Bounded; keyed by content (a digest past 256
    characters), so it can only ever return what the rules computed for
    that very text."""

    def __init__(self, maxsize: int = 50_000):
        self.maxsize = maxsize
        self.memo: dict = {}

    @staticmethod
    def _key(text: str):
        return text if len(text) <= 256 else hashlib.blake2b(text.encode("utf-8", "surrogatepass"),
                                                             digest_size=16).digest()

    def call(self, call: ToolCall, result: ToolResult | None, message: Message | None, placeholder: bool):
        arguments = call.arguments_text()
        text = result.text() if result is not None else None
        is_error = result.is_error if result is not None else None
        missing = result is None or placeholder or (message is not None and message.origin == PLACEHOLDER_ORIGIN)
        key = (call.name, self._key(arguments), None if missing or text is None else self._key(text),
               None if missing else is_error, missing)
        value = self.memo.get(key)
        if value is None:
            args = call.parsed_arguments()
            obj = _json_object(text) if text and not missing else None
            status = result_status(result, message, placeholder, text=text, obj=obj) if not missing else MISSING
            rid, rid_source = resource_id(call, text if not missing else None, args=args, obj=obj)
            value = idempotency_key(call, args) + (rid, rid_source, status)
            if len(self.memo) >= self.maxsize:
                self.memo.clear()
            self.memo[key] = value
        return value

    def clear(self) -> None:
        self.memo.clear()


FACTS = _Facts()


def build_ledger(messages: Sequence[Message], declared: Any = None, *, format: str,
                 placeholders: frozenset[int] = frozenset(), pairs: dict | None = None) -> list[LedgerEntry]:
    """One entry per side-effecting call of a VALID ``messages``, in call
    order. ``placeholders``: the ``id()`` of the repair's placeholder results
    (their calls are ``missing``); ``pairs``: ``validator.pair_results`` of
    ``messages`` when the caller has it (its validation found them)."""
    from .validator import pair_results

    results = pairs if pairs is not None else pair_results(messages, format)
    entries: list[LedgerEntry] = []
    # (rule 2 alone when nothing is declared: its memo, without the dispatch)
    effects = default_has_side_effects if declared is None else lambda name: has_side_effects(name, declared)
    for pos, m in enumerate(messages):
        if not m.calls:
            continue
        for call in m.calls:
            if not call.id or not effects(call.name):
                continue
            found = results.get((pos, call.id))
            result, result_message = (found[0], found[1]) if found else (None, None)
            key, key_source, rid, rid_source, status = FACTS.call(
                call, result, result_message, result is not None and id(result) in placeholders)
            entries.append(LedgerEntry(call.id, call.name, key, key_source, rid, rid_source, status, m.index,
                                       result_message.index if result_message is not None else None))
    return entries


LEDGER_HEADING = "Tools already executed (side effects) — do not repeat them without a new request from the user:"


def ledger_lines(entries: Iterable[LedgerEntry]) -> list[str]:
    return [entry.line() for entry in entries]
