"""What a tool result says: whether it succeeded and which id it proves
(SPEC §8 ``done_without_proof``; seed 001 "交接单该装什么": 已完成 holds
only what a tool result confirmed, with the id it returned).

Pure. One rule for the builder's done lines and the drift check that reads
them:

- **Outcome**: the result's own ``ok`` flag when it has one, else its
  wording — failure words (失败, 拒绝, error, declined …) make it a failure,
  success words (成功, 已提交, created, confirmed …) a success, neither
  says nothing.
- **Proof**: a successful result proves an id it returned — one the call
  was not given, or one it echoes while reporting the change (``cancelled``,
  ``已取消``). A look-up that echoes the order number proves nothing was done.
- ``result_id``: the id a result proves, from its JSON id fields first
  (``ticket_id``, ``order_id``, ``单号`` …), else the first identifier of its
  text (``compaction.handoff.reading.identifiers``).
"""

from __future__ import annotations

import json

from . import vocabulary as v
from .material import ToolResult
from .reader import Reader
from .reading import identifiers, is_identifier

_ID_KEYS = ("ticket_id", "ticket", "rma", "rma_id", "order_id", "booking_id", "reservation_id", "claim_id",
            "refund_id", "confirmation", "confirmation_number", "confirmation_id", "reference", "reference_id",
            "ref", "id", "number", "单号", "工单号", "编号", "订单号")


def outcome(result: ToolResult, reader: Reader) -> bool | None:
    """True for a success, False for a failure, None when the result says neither."""
    if result.ok is not None:
        return result.ok
    if reader.matches(v.FAILURE, result.text):
        return False
    if reader.matches(v.SUCCESS, result.text):
        return True
    return None


def proves(result: ToolResult, ident: str, reader: Reader) -> bool:
    """Whether ``result`` proves that something was done with ``ident``."""
    if not outcome(result, reader) or ident not in result.text:
        return False
    return ident not in result.arguments or reader.matches(v.SUCCESS, result.text)


def payload(text: str):
    """The result's JSON, or None when it is not JSON."""
    try:
        return json.loads(text)
    except (ValueError, TypeError):
        return None


def _candidates(result: ToolResult) -> list[str]:
    found = []
    data = payload(result.text)
    if isinstance(data, dict):
        layers = [data] + [value for value in data.values() if isinstance(value, dict)]
        for key in _ID_KEYS:
            for layer in layers:
                for k, value in layer.items():
                    if str(k).lower() == key and isinstance(value, (str, int)) and not isinstance(value, bool):
                        found.append(str(value).strip())
    return found + list(identifiers(result.text))


def result_id(result: ToolResult, vocabulary: v.Vocabulary | Reader = v.DEFAULT) -> str | None:
    """The id a successful result returned and proves; None when there is
    none (the action is then progress, not a done line)."""
    reader = vocabulary if isinstance(vocabulary, Reader) else Reader(vocabulary)
    if not outcome(result, reader):
        return None
    for ident in _candidates(result):
        if is_identifier(ident) and proves(result, ident, reader):
            return ident
    return None
