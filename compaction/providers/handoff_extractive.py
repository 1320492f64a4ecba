"""The offline ``handoff-extractive`` provider (SPEC §7 "Providers"): the
``handoff-extractive-v1`` builder (``compaction.handoff.builder``) behind the
provider interface, so rolling scopes, the demo and the tests need no model.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..contract import ProviderResult
from ..handoff import note as n
from ..handoff import vocabulary as v
from ..handoff.builder import build_note, make_label, result_id
from ..handoff.material import Material
from ..tokens import count_tokens
from .base import Provider, SummaryRequest

__all__ = ["HANDOFF_EXTRACTIVE_MODEL_ID", "HandoffExtractiveProvider", "HandoffInput", "build_note", "make_label",
           "result_id"]

HANDOFF_EXTRACTIVE_MODEL_ID = "handoff-extractive-v1"


@dataclass(frozen=True)
class HandoffInput:
    """What a hand-off request carries for the offline builder (the engine's
    request shape for rolling jobs is the binding's to define; it puts one of
    these in ``SummaryRequest.extra["handoff"]``)."""

    parent_note: str | None
    material: Material
    language: str
    vocabulary: v.Vocabulary = v.DEFAULT


class HandoffExtractiveProvider(Provider):
    name = "handoff-extractive"
    model_id = HANDOFF_EXTRACTIVE_MODEL_ID

    def summarise(self, request: SummaryRequest) -> ProviderResult:
        started = time.perf_counter()
        job = request.extra.get("handoff")
        if not isinstance(job, HandoffInput):
            return ProviderResult(error="provider_error", model=self.model_id,
                                  error_detail="handoff-extractive needs extra['handoff'] (a HandoffInput)")
        try:
            text = build_note(job.parent_note, job.material, language=job.language, vocabulary=job.vocabulary)
        except n.MalformedNote as exc:
            return ProviderResult(error="provider_error", model=self.model_id,
                                  error_detail=f"parent note is not a six-section note: {exc}")
        return ProviderResult(
            text=text, finish_reason="stop", tool_calls=[], model=self.model_id,
            input_tokens=count_tokens(request.system) + count_tokens(request.user),
            output_tokens=count_tokens(text), latency_ms=int((time.perf_counter() - started) * 1000), raw=text)
