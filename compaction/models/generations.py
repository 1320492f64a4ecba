"""Summary generations (SPEC §5): one successful summary, written once and
never changed. ``save()``/``delete()`` refuse it here and a PostgreSQL
trigger refuses raw SQL (migration 0003)."""

from django.db import models

from .jobs import CompactionJob, SourceBinding
from .prompts import PromptVersion


class ImmutableGenerationError(Exception):
    """A succeeded generation was asked to change."""


class GenerationQuerySet(models.QuerySet):
    """Bulk writes would bypass ``save()``/``delete()``; refuse them too."""

    def update(self, **kwargs):
        raise ImmutableGenerationError("summary generations are immutable")

    def delete(self):
        raise ImmutableGenerationError("summary generations are immutable")

    def bulk_update(self, objs, fields, batch_size=None):
        raise ImmutableGenerationError("summary generations are immutable")


class SummaryGeneration(SourceBinding):
    """One successful summary, immutable once written."""

    objects = GenerationQuerySet.as_manager()

    job = models.OneToOneField(CompactionJob, on_delete=models.PROTECT, related_name="generation")
    conversation = models.ForeignKey(
        "conversations.Conversation", on_delete=models.PROTECT, related_name="generations"
    )
    number = models.PositiveIntegerField()
    text = models.TextField()
    text_bytes = models.PositiveIntegerField()
    # The binding (``SourceBinding``), copied in so the generation stands on its own.
    prompt_version = models.ForeignKey(PromptVersion, on_delete=models.PROTECT, related_name="generations")
    parent = models.ForeignKey("self", on_delete=models.PROTECT, null=True, blank=True, related_name="children")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["conversation", "number"], name="generation_conversation_number_unique"),
        ]
        indexes = [
            models.Index(fields=["conversation", "from_pair"], name="generation_conversation_range"),
            # The review queue: summaries oldest first (issue 16).
            models.Index(fields=["created_at", "id"], name="generation_created"),
        ]

    def save(self, *args, **kwargs):
        if self.pk is not None and not self._state.adding:
            raise ImmutableGenerationError(f"summary generation {self.pk} is immutable")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ImmutableGenerationError(f"summary generation {self.pk} is immutable")


