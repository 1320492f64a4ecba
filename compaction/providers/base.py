"""The one small interface every provider implements (SPEC §5).

A provider receives a ``SummaryRequest`` — the prompt's system and user
text, rendered from only the ten assistant answers (each labelled with its
message id) — and returns a ``ProviderResult`` that reports faithfully what
happened. It never judges the result (``compaction.contract`` does) and never
retries on its own (the engine's bounded attempts do).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..contract import ProviderResult


@dataclass(frozen=True)
class Answer:
    message_id: str
    text: str


@dataclass(frozen=True)
class SummaryRequest:
    answers: tuple[Answer, ...]
    system: str
    user: str
    prompt_version: str
    # Identity of the attempt, for logs and deterministic fault injection;
    # never sent to a model.
    job_id: int = 0
    attempt: int = 0
    extra: dict = field(default_factory=dict)


class Provider:
    """Subclasses set ``name`` and ``model_id`` and implement ``summarise``."""

    name = "base"
    model_id = ""

    def summarise(self, request: SummaryRequest) -> ProviderResult:  # pragma: no cover - interface
        raise NotImplementedError


def render_answers(answers) -> str:
    """The only conversation text a summariser ever sees: assistant answers,
    each under its message id, oldest first."""
    return "\n\n".join(f"[{a.message_id}]\n{a.text}" for a in answers)
