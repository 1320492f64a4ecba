"""Model providers behind one small interface (SPEC §5).

``COMPACTION_PROVIDER`` picks one: ``extractive`` (offline default, no model),
``openai`` (any OpenAI-compatible Chat Completions endpoint), or a dotted
path ``package.module:ClassName`` to a ``Provider`` subclass (used by the
benchmark). ``COMPACTION_FAULT_RATE``/``COMPACTION_FAULT_KIND`` wrap whichever
is chosen with deterministic fault injection.
"""

from __future__ import annotations

import importlib

from django.conf import settings

from .base import Answer, Provider, SummaryRequest, render_answers
from .extractive import EXTRACTIVE_MODEL_ID, ExtractiveProvider

__all__ = ["Answer", "Provider", "SummaryRequest", "render_answers", "EXTRACTIVE_MODEL_ID",
           "configured_model_id", "provider_build", "provider_get"]


def _base_provider() -> Provider:
    name = settings.COMPACTION_PROVIDER
    if name == "extractive":
        return ExtractiveProvider()
    if name == "openai":
        from .openai import OpenAIProvider

        return OpenAIProvider(base_url=settings.OPENAI_BASE_URL, api_key=settings.OPENAI_API_KEY,
                              model=settings.COMPACTION_MODEL, timeout=settings.OPENAI_TIMEOUT_SECONDS)
    if ":" in name:
        module, _, attr = name.partition(":")
        return getattr(importlib.import_module(module), attr)()
    raise ValueError(f"COMPACTION_PROVIDER must be 'extractive', 'openai' or 'module:Class'; got {name!r}")


def provider_build() -> Provider:
    """The configured provider, wrapped with fault injection when asked."""
    provider = _base_provider()
    if settings.COMPACTION_FAULT_RATE > 0:
        from .faults import FaultInjectingProvider

        provider = FaultInjectingProvider(provider, rate=settings.COMPACTION_FAULT_RATE,
                                          kind=settings.COMPACTION_FAULT_KIND or "mixed")
    return provider


def configured_model_id() -> str:
    """The model id new jobs are bound to: the configured provider's own id
    (``extractive-v2`` offline; ``COMPACTION_MODEL`` for ``openai``)."""
    return _base_provider().model_id


_provider_cache: dict = {}


def provider_get() -> Provider:
    """One provider per process, rebuilt when its settings change (tests)."""
    key = (settings.COMPACTION_PROVIDER, settings.COMPACTION_MODEL, settings.OPENAI_BASE_URL,
           settings.OPENAI_TIMEOUT_SECONDS, settings.COMPACTION_FAULT_RATE, settings.COMPACTION_FAULT_KIND)
    if key not in _provider_cache:
        _provider_cache.clear()
        _provider_cache[key] = provider_build()
    return _provider_cache[key]
