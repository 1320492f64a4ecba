"""Model providers behind one small interface (SPEC §5).

``COMPACTION_PROVIDER`` picks one: ``extractive`` (offline default, no model),
``openai`` (any OpenAI-compatible Chat Completions endpoint), or a dotted
path ``package.module:ClassName`` to a ``Provider`` subclass (used by the
benchmark). ``COMPACTION_FAULT_RATE``/``COMPACTION_FAULT_KIND`` wrap whichever
is chosen with deterministic fault injection.

One setting serves both policies (SPEC §7): segments are summarised by the
provider above (``provider_get``); rolling hand-off notes by its hand-off
counterpart (``handoff_provider_get``) — ``extractive`` means the offline
``handoff-extractive`` builder, ``openai`` the same endpoint and model (the
binding's prompt, ``handoff@1``, is what differs), a dotted path the same
class.
"""

from __future__ import annotations

import importlib

from django.conf import settings

from .base import Answer, Provider, SummaryRequest, render_answers
from .extractive import EXTRACTIVE_MODEL_ID, ExtractiveProvider

__all__ = ["Answer", "Provider", "SummaryRequest", "render_answers", "EXTRACTIVE_MODEL_ID",
           "configured_model_id", "handoff_model_id", "handoff_provider_get", "provider_build", "provider_get"]


def _base_provider(*, handoff: bool = False) -> Provider:
    name = settings.COMPACTION_PROVIDER
    if name == "extractive":
        if handoff:
            from .handoff_extractive import HandoffExtractiveProvider

            return HandoffExtractiveProvider()
        return ExtractiveProvider()
    if name == "openai":
        from .openai import OpenAIProvider

        return OpenAIProvider(base_url=settings.OPENAI_BASE_URL, api_key=settings.OPENAI_API_KEY,
                              model=settings.COMPACTION_MODEL, timeout=settings.OPENAI_TIMEOUT_SECONDS)
    if ":" in name:
        module, _, attr = name.partition(":")
        return getattr(importlib.import_module(module), attr)()
    raise ValueError(f"COMPACTION_PROVIDER must be 'extractive', 'openai' or 'module:Class'; got {name!r}")


def provider_build(*, handoff: bool = False) -> Provider:
    """The configured provider (its hand-off counterpart with ``handoff``),
    wrapped with fault injection when asked."""
    provider = _base_provider(handoff=handoff)
    if settings.COMPACTION_FAULT_RATE > 0:
        from .faults import FaultInjectingProvider

        provider = FaultInjectingProvider(provider, rate=settings.COMPACTION_FAULT_RATE,
                                          kind=settings.COMPACTION_FAULT_KIND or "mixed")
    return provider


def configured_model_id() -> str:
    """The model id new jobs are bound to: the configured provider's own id
    (``extractive-v2`` offline; ``COMPACTION_MODEL`` for ``openai``)."""
    return _base_provider().model_id


def handoff_model_id() -> str:
    """The model id new rolling hand-off jobs are bound to
    (``handoff-extractive-v1`` offline; ``COMPACTION_MODEL`` for ``openai``)."""
    return _base_provider(handoff=True).model_id


_provider_cache: dict = {}


def provider_get(*, handoff: bool = False) -> Provider:
    """One provider per process and policy, rebuilt when its settings change (tests)."""
    key = (handoff, settings.COMPACTION_PROVIDER, settings.COMPACTION_MODEL, settings.OPENAI_BASE_URL,
           settings.OPENAI_TIMEOUT_SECONDS, settings.COMPACTION_FAULT_RATE, settings.COMPACTION_FAULT_KIND)
    if key not in _provider_cache:
        for old in [k for k in _provider_cache if k[0] == handoff]:
            del _provider_cache[old]
        _provider_cache[key] = provider_build(handoff=handoff)
    return _provider_cache[key]


def handoff_provider_get() -> Provider:
    return provider_get(handoff=True)
