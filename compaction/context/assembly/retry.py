"""Retry after ``context_length_exceeded`` (SPEC §9 "Retry", seed 004 "Token 估计误差").

The local count is an estimate; a provider may still answer that the
prompt is too long. Then assembly tightens one notch — one more middle
ring, or a plain turn when no ring is left — and the request is sent
again, at most twice (a loop that keeps retrying burns money and never
converges). Anything other than a context-length error is not retried.
When no middle unit is left to remove, the retry stops with
``context_over_budget``: the protected prefix and suffix are never cut.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Generic, TypeVar

from .assembler import AssemblyResult, assemble
from .errors import OverBudgetError

T = TypeVar("T")
MAX_RETRIES = 2

_MARKERS = ("context_length_exceeded", "maximum context length", "prompt is too long",
            "context window", "too many tokens", "request too large")


class ContextLengthExceeded(Exception):
    """What a provider adapter raises for the provider's "prompt too long"
    answer (OpenAI ``context_length_exceeded``, Anthropic ``prompt is too
    long``)."""

    code = "context_length_exceeded"


def is_context_length_exceeded(error: BaseException) -> bool:
    if isinstance(error, ContextLengthExceeded):
        return True
    code = getattr(error, "code", None)
    if code == "context_length_exceeded":
        return True
    text = str(error).lower()
    return any(marker in text for marker in _MARKERS)


@dataclass
class RetryOutcome(Generic[T]):
    response: T
    result: AssemblyResult
    retries: int
    attempts: list[dict] = field(default_factory=list)


def retry_after_context_length_exceeded(
        send: Callable[[AssemblyResult], T], *, max_retries: int = MAX_RETRIES,
        is_too_long: Callable[[BaseException], bool] = is_context_length_exceeded,
        **assemble_kwargs: Any) -> RetryOutcome[T]:
    """Assemble, call ``send(result)``; on a context-length error reassemble
    one notch tighter and send again, at most ``max_retries`` (2) times.

    ``assemble_kwargs`` are ``assemble``'s (``format``, ``messages``,
    ``config``…). The provider's last error is raised again when the
    retries are spent; ``OverBudgetError`` when nothing is left to remove.
    """
    if not 0 <= max_retries <= MAX_RETRIES:
        raise ValueError(f"max_retries must be between 0 and {MAX_RETRIES}")
    attempts: list[dict] = []
    tighten = assemble_kwargs.pop("tighten", 0)

    def removed(result: AssemblyResult) -> int:
        return len(result.report.dropped_rings) + len(result.report.dropped_turns)

    result = assemble(tighten=tighten, **assemble_kwargs)
    while True:
        try:
            response = send(result)
        except Exception as error:
            if not is_too_long(error):
                raise
            attempts.append({"tighten": tighten, "tokens_after": result.report.tokens_after,
                             "removed_units": removed(result), "error": "context_length_exceeded"})
            if len(attempts) > max_retries:
                raise
            # One notch: one more unit than last time. If assembly cannot
            # remove another one, say so rather than send the same request.
            tighter = assemble(tighten=tighten + 1, **assemble_kwargs)
            if removed(tighter) <= removed(result):
                raise OverBudgetError(
                    "The provider says the request is too long and no middle ring or turn is left to remove.",
                    sizes={"budget": result.report.budget, "tokens_after": result.report.tokens_after,
                           "reason": "context_length_exceeded_nothing_left"},
                    report=result.report.as_dict()) from error
            tighten, result = tighten + 1, tighter
            continue
        result.report.steps.append({"step": "retry", "retries": len(attempts), "tighten": tighten})
        return RetryOutcome(response=response, result=result, retries=len(attempts), attempts=attempts)
