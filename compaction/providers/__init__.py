"""Model providers behind one small interface (SPEC §5)."""

from django.conf import settings

EXTRACTIVE_MODEL_ID = "extractive-v1"


def configured_model_id() -> str:
    """The model id new jobs are bound to, from settings."""
    if settings.COMPACTION_MODEL:
        return settings.COMPACTION_MODEL
    if settings.COMPACTION_PROVIDER == "extractive":
        return EXTRACTIVE_MODEL_ID
    raise ValueError("COMPACTION_MODEL must be set for the openai provider")
