"""The offline default provider: deterministic sentence extraction, no model."""

from __future__ import annotations

import time

from ..contract import ProviderResult
from ..extraction import DEFAULT_TARGET_CHARS, summarise
from ..tokens import count_tokens
from .base import Provider, SummaryRequest

EXTRACTIVE_MODEL_ID = "extractive-v1"


class ExtractiveProvider(Provider):
    name = "extractive"
    model_id = EXTRACTIVE_MODEL_ID

    def __init__(self, *, target_chars: int = DEFAULT_TARGET_CHARS):
        self.target_chars = target_chars

    def summarise(self, request: SummaryRequest) -> ProviderResult:
        started = time.perf_counter()
        text = summarise([(a.message_id, a.text) for a in request.answers], target_chars=self.target_chars)
        return ProviderResult(
            text=text,
            finish_reason="stop",
            tool_calls=[],
            model=self.model_id,
            input_tokens=count_tokens(request.system) + count_tokens(request.user),
            output_tokens=count_tokens(text),
            latency_ms=int((time.perf_counter() - started) * 1000),
            raw=text,
        )
