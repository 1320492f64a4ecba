"""Any OpenAI-compatible Chat Completions endpoint (SPEC §5 ``openai``).

Reports finish reason, tool calls, usage and latency exactly as the endpoint
gave them and never retries: bounded attempts belong to the engine. An HTTP
error status or a body that is not a Chat Completions response is a
``provider_error``; no answer within the timeout is a ``timeout``.

Any reply is reported, never raised (issue 12): a body that is not UTF-8
JSON, a JSON value of the wrong shape at any level, a body over
``MAX_BODY_BYTES`` — each a ``provider_error`` whose detail names what was
wrong, with the start of the body kept. Values the attempt's record cannot
hold are the finish's to escape or cut (``engine.finish``); a token count
that is not a count (negative, text, out of range) is reported as unknown,
since it says nothing against the answer.
"""

from __future__ import annotations

import json
import time

import httpx

from ..contract import PROVIDER_ERROR, TIMEOUT, ProviderResult
from .base import Provider, SummaryRequest

_RAW_PREVIEW = 4000
# A Chat Completions reply of a 6,000-character summary is a few KiB; a body
# past this is not one, and is not read further into the worker's memory.
MAX_BODY_BYTES = 8 * 1024 * 1024


class _Malformed(Exception):
    """The body is not a Chat Completions response; the message says why."""


class OpenAIProvider(Provider):
    name = "openai"

    def __init__(self, *, base_url: str, api_key: str, model: str, timeout: float):
        if not model:
            raise ValueError("COMPACTION_MODEL must name the model for the openai provider")
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.model_id = model
        self.timeout = timeout

    def _post(self, payload: dict) -> tuple[int, bytes, bool]:
        """The status, the body (at most ``MAX_BODY_BYTES``) and whether it was cut."""
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        # A fresh client per call: no connection reuse across forked workers,
        # and the transport's retries stay at 0.
        with httpx.Client(timeout=httpx.Timeout(self.timeout), transport=httpx.HTTPTransport(retries=0)) as client:
            with client.stream("POST", f"{self.base_url}/chat/completions", json=payload, headers=headers) as response:
                body = bytearray()
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > MAX_BODY_BYTES:
                        return response.status_code, bytes(body[:MAX_BODY_BYTES]), True
                return response.status_code, bytes(body), False

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
            status, body, cut = self._post(payload)
        except httpx.TimeoutException as exc:
            return ProviderResult(model=self.model_id, error=TIMEOUT, latency_ms=_ms(started),
                                  error_detail=f"no answer within {self.timeout:g}s ({type(exc).__name__})")
        except httpx.HTTPError as exc:
            return ProviderResult(model=self.model_id, error=PROVIDER_ERROR, latency_ms=_ms(started),
                                  error_detail=f"{type(exc).__name__}: {exc}")
        latency = _ms(started)
        preview = body[:_RAW_PREVIEW].decode("utf-8", errors="replace")
        if status >= 400:
            return ProviderResult(model=self.model_id, error=PROVIDER_ERROR, latency_ms=latency,
                                  error_detail=f"HTTP {status}", raw=preview)
        try:
            if cut:
                raise _Malformed(f"the body is over {MAX_BODY_BYTES:,} bytes")
            reply = _parse(body)
        except _Malformed as exc:
            return ProviderResult(model=self.model_id, error=PROVIDER_ERROR, latency_ms=latency,
                                  error_detail=f"malformed response body: {exc}", raw=preview)
        model = reply["model"]
        return ProviderResult(
            text=reply["text"],
            finish_reason=reply["finish_reason"],
            tool_calls=reply["tool_calls"],
            model=model if isinstance(model, str) and model else self.model_id,
            input_tokens=_count(reply["usage"].get("prompt_tokens")),
            output_tokens=_count(reply["usage"].get("completion_tokens")),
            latency_ms=latency,
            raw=reply["text"] or "",
        )


def _parse(body: bytes) -> dict:
    """The parts of a Chat Completions body the attempt reports, each
    checked for its shape; ``_Malformed`` says what is wrong otherwise."""
    try:
        data = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise _Malformed(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except RecursionError:
        raise _Malformed("JSON nested too deeply") from None
    except ValueError as exc:  # json.JSONDecodeError, or an integer too long to read
        raise _Malformed(f"not JSON ({exc})") from None

    def expect(value, kind, where):
        if not isinstance(value, kind):
            names = " or ".join(_KIND_NAMES[k] for k in (kind if isinstance(kind, tuple) else (kind,)))
            raise _Malformed(f"{where} is {_KIND_NAMES.get(type(value), type(value).__name__)}, not {names}")
        return value

    expect(data, dict, "the body")
    choices = expect(data.get("choices"), list, "choices")
    if not choices:
        raise _Malformed("choices is empty")
    choice = expect(choices[0], dict, "choices[0]")
    message = expect(choice.get("message"), dict, "choices[0].message")
    text = expect(message.get("content"), (str, type(None)), "choices[0].message.content")
    tool_calls = expect(message.get("tool_calls") or [], list, "choices[0].message.tool_calls")
    usage = expect(data.get("usage") or {}, dict, "usage")
    finish_reason = choice.get("finish_reason")
    if finish_reason is not None and not isinstance(finish_reason, str):
        finish_reason = json.dumps(finish_reason)  # kept for review; never "stop"
    return {"text": text, "finish_reason": finish_reason, "tool_calls": tool_calls, "usage": usage,
            "model": data.get("model")}


_KIND_NAMES = {dict: "an object", list: "an array", str: "a string", type(None): "null", bool: "a boolean",
               int: "a number", float: "a number"}


def _count(value) -> int | None:
    """A reported token count the attempt can store, or None: endpoints
    that report nonsense (negative, text, out of range) must not break
    the recording of what they answered."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31:
        return value
    return None


def _ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)
