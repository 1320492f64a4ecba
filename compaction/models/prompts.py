"""Prompt versions (SPEC §5): a version's template is frozen once a job has
used it; a changed prompt is a new version."""

from django.db import models


class FrozenPromptError(Exception):
    """A prompt version that a job has used was asked to change its template."""


# What a frozen prompt version may never change: a changed prompt is a new version.
FROZEN_PROMPT_FIELDS = ("name", "family", "version", "system_template", "user_template", "includes_user_text")


class PromptVersion(models.Model):
    name = models.CharField(max_length=100, unique=True)  # e.g. conversation-compaction@3
    family = models.CharField(max_length=100)
    version = models.PositiveIntegerField()
    description = models.TextField(blank=True, default="")
    system_template = models.TextField()
    user_template = models.TextField()
    includes_user_text = models.BooleanField(default=False)
    accepted_for_projection = models.BooleanField(default=False)
    is_current = models.BooleanField(default=False)
    frozen_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["family", "version"], name="prompt_family_version_unique"),
        ]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs):
        if self.pk is not None and not self._state.adding:
            stored = type(self).objects.filter(pk=self.pk).values(*FROZEN_PROMPT_FIELDS, "frozen_at").first()
            if stored and stored["frozen_at"] is not None:
                changed = [f for f in FROZEN_PROMPT_FIELDS if getattr(self, f) != stored[f]]
                if changed:
                    raise FrozenPromptError(
                        f"prompt version {stored['name']} is frozen (used by a job); "
                        f"cannot change {', '.join(changed)} — create a new version instead"
                    )
                self.frozen_at = stored["frozen_at"]  # once frozen, always frozen
        super().save(*args, **kwargs)


