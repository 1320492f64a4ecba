"""Reads of a conversation's generations with their chain links (SPEC §7,
§11: "generations listed per conversation with their parent links").

Every generation, segment summary or rolling hand-off note, oldest first,
with whether it is still usable as a record of its source now: a
segment's stored digest against its planned range's current digest; a
hand-off note's against its material's current digest and its chain
intact (no ingest broke it at or above it). A hand-off note comes with
its drift report (SPEC §8) and findings.
"""

from __future__ import annotations

from django.db.models import BooleanField, Case, F, Prefetch, QuerySet, Value, When
from django.db.models.functions import NullIf

from .bindings.handoff import HANDOFF_KIND
from .bindings.segments import current_digest_subquery
from .models import DriftFinding, SummaryGeneration


def conversation_generations(*, conversation) -> QuerySet[SummaryGeneration]:
    return (
        SummaryGeneration.objects.filter(conversation=conversation)
        .select_related("prompt_version", "drift_report")
        .prefetch_related(Prefetch("drift_findings", queryset=DriftFinding.objects.order_by("position")))
        .annotate(
            current_digest=Case(
                When(kind=HANDOFF_KIND, then=NullIf(F("job__handoff__current_digest"), Value(""))),
                default=current_digest_subquery(),
            ),
            chain_changed_at=F("job__source_changed_at"),
            break_generation_id=F("job__handoff__break_generation_id"),
            break_pair=F("job__handoff__break_pair"),
        )
        .annotate(
            valid=Case(
                When(kind=HANDOFF_KIND, chain_changed_at__isnull=False, then=Value(False)),
                When(current_digest=F("source_digest"), then=Value(True)),
                default=Value(False),
                output_field=BooleanField(),
            )
        )
        .order_by("number")
    )


def conversation_generation_get(*, conversation, generation_id: int) -> SummaryGeneration | None:
    """One generation of ``conversation``, read as ``conversation_generations`` reads it."""
    return conversation_generations(conversation=conversation).filter(pk=generation_id).first()
