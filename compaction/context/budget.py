"""A projection's budget (SPEC §6): UTF-8 bytes of the returned texts, and
optionally tokens (tiktoken's cl100k, ``compaction.tokens``).

One home for its defaults and limits: the budget the desk's preview starts
from, and the largest budgets that are still meant (``PROJECTION_MAX_*``,
read from settings; above them a budget is refused, not clamped). A budget
too small for anything is not refused: the projection is then honestly
empty.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

# Where the desk's projection preview starts.
DEFAULT_BUDGET_BYTES = 64 * 1024


@dataclass(frozen=True)
class Budget:
    bytes: int
    tokens: int | None = None


class ProjectionInvalid(ValueError):
    """A projection was asked for with a budget or format that makes no sense."""

    def __init__(self, *, code: str, field: str, message: str):
        super().__init__(message)
        self.code = code
        self.field = field
        self.message = message


def max_budget_bytes() -> int:
    return settings.PROJECTION_MAX_BUDGET_BYTES


def max_budget_tokens() -> int:
    return settings.PROJECTION_MAX_BUDGET_TOKENS


def _check(name: str, value, maximum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProjectionInvalid(code="invalid_budget", field=name, message=f"{name} must be an integer")
    if value <= 0:
        raise ProjectionInvalid(code="invalid_budget", field=name, message=f"{name} must be at least 1")
    if value > maximum:
        raise ProjectionInvalid(code="invalid_budget", field=name,
                                message=f"{name} {value} is over the limit of {maximum}")


def budget_validate(*, budget_bytes, budget_tokens=None) -> Budget:
    """The budget asked for, or ``ProjectionInvalid`` naming what is wrong."""
    _check("budget_bytes", budget_bytes, max_budget_bytes())
    if budget_tokens is not None:
        _check("budget_tokens", budget_tokens, max_budget_tokens())
    return Budget(bytes=budget_bytes, tokens=budget_tokens)
