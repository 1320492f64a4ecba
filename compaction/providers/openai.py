"""Any OpenAI-compatible Chat Completions endpoint (SPEC §5 ``openai``).

Reports finish reason, tool calls, usage and latency exactly as the endpoint
gave them and never retries: bounded attempts belong to the engine. An HTTP
error status or a body that is not a Chat Completions response is a
``provider_error``; no answer within the timeout is a ``timeout``.
"""

from __future__ import annotations

import json
import time

import httpx

from ..contract import PROVIDER_ERROR, TIMEOUT, ProviderResult
from .base import Provider, SummaryRequest

_RAW_PREVIEW = 4000


class OpenAIProvider(Provider):
    name = "openai"

    def __init__(self, *, base_url: str, api_key: str, model: str, timeout: float):
        if not model:
            raise ValueError("COMPACTION_MODEL must name the model for the openai provider")
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.model_id = model
        self.timeout = timeout

    def _post(self, payload: dict) -> httpx.Response:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        # A fresh client per call: no connection reuse across forked workers,
        # and the transport's retries stay at 0.
        with httpx.Client(timeout=httpx.Timeout(self.timeout), transport=httpx.HTTPTransport(retries=0)) as client:
            return client.post(f"{self.base_url}/chat/completions", json=payload, headers=headers)

    def summarise(self, request: SummaryRequest) -> ProviderResult:
        payload = {
            "model": self.model_id,
            "messages": [
                {"role": "system", "content": request.system},
                {"role": "user", "content": request.user},
            ],
        }
        started = time.perf_counter()
        try:
            response = self._post(payload)
        except httpx.TimeoutException as exc:
            return ProviderResult(model=self.model_id, error=TIMEOUT, latency_ms=_ms(started),
                                  error_detail=f"no answer within {self.timeout:g}s ({type(exc).__name__})")
        except httpx.HTTPError as exc:
            return ProviderResult(model=self.model_id, error=PROVIDER_ERROR, latency_ms=_ms(started),
                                  error_detail=f"{type(exc).__name__}: {exc}")
        latency = _ms(started)
        body = response.text
        if response.status_code >= 400:
            return ProviderResult(model=self.model_id, error=PROVIDER_ERROR, latency_ms=latency,
                                  error_detail=f"HTTP {response.status_code}", raw=body[:_RAW_PREVIEW])
        try:
            data = json.loads(body)
            choice = data["choices"][0]
            message = choice["message"]
            text = message.get("content")
            if text is not None and not isinstance(text, str):
                raise TypeError("message.content is not a string")
            tool_calls = message.get("tool_calls") or []
            if not isinstance(tool_calls, list):
                raise TypeError("message.tool_calls is not a list")
            usage = data.get("usage") or {}
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            return ProviderResult(model=self.model_id, error=PROVIDER_ERROR, latency_ms=latency,
                                  error_detail=f"malformed response body: {type(exc).__name__}: {exc}",
                                  raw=body[:_RAW_PREVIEW])
        finish_reason = choice.get("finish_reason")
        if finish_reason is not None and not isinstance(finish_reason, str):
            finish_reason = json.dumps(finish_reason)  # kept for review; never "stop"
        model = data.get("model")
        return ProviderResult(
            text=text,
            finish_reason=finish_reason,
            tool_calls=tool_calls,
            model=model if isinstance(model, str) and model else self.model_id,
            input_tokens=_count(usage.get("prompt_tokens")),
            output_tokens=_count(usage.get("completion_tokens")),
            latency_ms=latency,
            raw=text or "",
        )


def _count(value) -> int | None:
    """A reported token count the attempt can store, or None: endpoints
    that report nonsense (negative, text, out of range) must not break
    the recording of what they answered."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31:
        return value
    return None


def _ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)
