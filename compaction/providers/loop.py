"""Who writes the tool loop's work summary (SPEC §10, seed 002 §7.7–§7.11, §9).

One setting serves every policy: ``COMPACTION_PROVIDER=openai`` sends the
folded rounds to the same OpenAI-compatible endpoint and model with the
frozen ``loop@1`` prompt (``PromptVersion`` row written by migration
``0019_loop_prompt_version``, whose text must equal
``compaction.context.assembly.toolloop``'s); anything else means the
offline ``DeterministicLoopSummariser`` (no model, same input → same text).

The model's answer is judged by the output contract of SPEC §5 (one normal
stop, plain text, no tool calls, non-blank, at most 6,000 characters); a
reply that fails it, an HTTP error or a timeout raises
``LoopSummaryFailed`` with the contract's failure code, and the library
then keeps the raw history (seed 002 §7.11) and reports
``compaction_failed`` with that code. Nothing is stored: the work summary
belongs to the run (§7.10).
"""

from __future__ import annotations

from django.conf import settings

from .. import contract
from ..context.assembly.counting import TextCounter
from ..context.assembly.toolloop import (
    LOOP_PROMPT_V1,
    LOOP_PROMPT_VERSION,
    LOOP_USER_TEMPLATE_V1,
    DeterministicLoopSummariser,
    LoopSummaryRequest,
)
from .base import SummaryRequest


class LoopSummaryFailed(Exception):
    """The model gave no usable work summary; ``code`` is the contract's."""

    def __init__(self, code: str, detail: str):
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail


def loop_prompt_version():
    """The stored ``loop@1`` prompt; refused loudly if its frozen text and the
    library's ever part (a changed prompt is ``loop@2``)."""
    from ..models import PromptVersion

    pv = PromptVersion.objects.get(name=LOOP_PROMPT_VERSION)
    if pv.system_template != LOOP_PROMPT_V1 or pv.user_template != LOOP_USER_TEMPLATE_V1:
        raise RuntimeError(f"prompt version {pv.name}: its frozen text is not the tool-loop library's; "
                           "a changed prompt needs a new version")
    return pv


class OpenAILoopSummariser:
    """The ``loop@1`` work summary from an OpenAI-compatible endpoint. The
    stored prompt is read when a fold is first asked for, so a request that
    does not fold costs no database read."""

    name = "openai"

    def __init__(self, provider, *, system: str | None = None, user_template: str | None = None):
        self.provider = provider
        self.system = system
        self.user_template = user_template
        self.last_result = None

    @property
    def model_id(self) -> str:
        return self.provider.model_id

    def summarise(self, request: LoopSummaryRequest) -> str:
        if self.system is None or self.user_template is None:
            pv = loop_prompt_version()
            self.system, self.user_template = pv.system_template, pv.user_template
        user = self.user_template.format(goal=request.goal or "(none)", previous=request.previous_summary or "(none)",
                                         transcript=request.transcript())
        result = self.provider.summarise(SummaryRequest(answers=(), system=self.system, user=user,
                                                        prompt_version=LOOP_PROMPT_VERSION))
        self.last_result = result
        judged = contract.check(result)
        if not judged.ok:
            raise LoopSummaryFailed(judged.failure_code, judged.detail)
        return result.text


def loop_summariser_get(count: TextCounter | None = None):
    """The configured work-summary writer (a new one per request: it is cheap,
    and the OpenAI one keeps the last reply for the request's events)."""
    if settings.COMPACTION_PROVIDER == "openai":
        from .openai import OpenAIProvider

        provider = OpenAIProvider(base_url=settings.OPENAI_BASE_URL, api_key=settings.OPENAI_API_KEY,
                                  model=settings.COMPACTION_MODEL, timeout=settings.OPENAI_TIMEOUT_SECONDS)
        return OpenAILoopSummariser(provider)
    return DeterministicLoopSummariser(count)
