"""Fault injection: wrap any provider with a chosen rate and kind of contract
violation, to rehearse operations and to make the demo show real failures.

Deterministic: whether attempt ``n`` of job ``j`` is faulted, and how, depends
only on ``(j, n)`` and the rate, so a demo replays the same way every time.
The engine never special-cases a fault; it only sees a provider result that
breaks the contract, exactly as a misbehaving model would produce.

Kinds: ``tool_calls``, ``finish_reason`` (a ``length`` stop), ``empty``,
``too_long`` (6,001+ characters), ``provider_error`` (a simulated HTTP 500),
``timeout``, or ``mixed`` (one of those, chosen per attempt).
"""

from __future__ import annotations

import hashlib

from ..contract import (EMPTY, FINISH_REASON, MAX_SUMMARY_CHARS, PROVIDER_ERROR, TIMEOUT, TOO_LONG, TOOL_CALLS,
                        ProviderResult)
from .base import Provider, SummaryRequest

KINDS = (TOOL_CALLS, FINISH_REASON, EMPTY, TOO_LONG, PROVIDER_ERROR, TIMEOUT)
MIXED = "mixed"


def _fraction(*parts) -> float:
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def fault_for(job_id: int, attempt: int, *, rate: float, kind: str) -> str | None:
    """The fault (a failure code) attempt ``attempt`` of job ``job_id`` gets, or None."""
    if rate <= 0 or _fraction("fault", job_id, attempt) >= rate:
        return None
    if kind == MIXED:
        return KINDS[int(_fraction("kind", job_id, attempt) * len(KINDS))]
    return kind


class FaultInjectingProvider(Provider):
    name = "faults"

    def __init__(self, inner: Provider, *, rate: float, kind: str):
        if kind not in KINDS + (MIXED,):
            raise ValueError(f"COMPACTION_FAULT_KIND must be one of {', '.join(KINDS + (MIXED,))}; got {kind!r}")
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"COMPACTION_FAULT_RATE must be between 0 and 1; got {rate}")
        self.inner = inner
        self.rate = rate
        self.kind = kind
        # Faults rehearse failures of the same model: the binding does not change.
        self.model_id = inner.model_id
        self.name = f"{inner.name}+faults"

    def summarise(self, request: SummaryRequest) -> ProviderResult:
        fault = fault_for(request.job_id, request.attempt, rate=self.rate, kind=self.kind)
        if fault == TIMEOUT:
            return ProviderResult(model=self.model_id, error=TIMEOUT, latency_ms=0,
                                  error_detail="injected fault: no answer within the timeout")
        if fault == PROVIDER_ERROR:
            return ProviderResult(model=self.model_id, error=PROVIDER_ERROR, latency_ms=0,
                                  error_detail="injected fault: HTTP 500", raw='{"error": "injected"}')
        result = self.inner.summarise(request)
        if fault is None or result.error:
            return result
        if fault == TOOL_CALLS:
            result.tool_calls = [{"id": "call-injected", "type": "function",
                                  "function": {"name": "lookup", "arguments": "{}"}}]
            result.finish_reason = "tool_calls"
        elif fault == FINISH_REASON:
            result.finish_reason = "length"
            result.text = (result.text or "")[: max(1, len(result.text or "") // 2)]
        elif fault == EMPTY:
            result.text = ""
        elif fault == TOO_LONG:
            base = result.text or "x"
            result.text = (base + "\n") * (MAX_SUMMARY_CHARS // max(1, len(base) + 1) + 2)
            result.text = result.text[: MAX_SUMMARY_CHARS + 1 + len(base)]
        result.raw = result.text or ""
        return result
