"""The offline default provider: deterministic sentence extraction, no model
(SPEC §5; ``extractive-v2`` compresses to at most 30% of its input, SPEC §6).

A new model id because it writes different summaries than ``extractive-v1``:
jobs and generations stay bound to the model that made them.
"""

from __future__ import annotations

import time

from ..contract import ProviderResult
from ..extraction import DEFAULT_MAX_CHARS, summarise
from ..tokens import count_tokens
from .base import Provider, SummaryRequest

EXTRACTIVE_MODEL_ID = "extractive-v2"


class ExtractiveProvider(Provider):
    name = "extractive"
    model_id = EXTRACTIVE_MODEL_ID

    def __init__(self, *, max_chars: int = DEFAULT_MAX_CHARS):
        self.max_chars = max_chars

    def summarise(self, request: SummaryRequest) -> ProviderResult:
        started = time.perf_counter()
        text = summarise([(a.message_id, a.text) for a in request.answers], max_chars=self.max_chars)
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
