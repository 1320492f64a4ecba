"""A scope's compaction policy (SPEC §7, seed 002 §12): fixed 10-pair
segments (the default, SPEC §5) or the rolling hand-off note, with the
eight thresholds of the rolling trigger.

The thresholds' defaults and their validation have one home,
``compaction.handoff.trigger.RollingThresholds``: the fields below take
their defaults from it and ``clean`` asks it, so the admin, the
``scope_policy`` command and the trigger can never disagree about what a
usable threshold is. A scope without a row uses segments.
"""

from django.core.exceptions import ValidationError
from django.db import models

from ..handoff.trigger import DEFAULT_THRESHOLDS, RollingThresholds, ThresholdError


class Policy(models.TextChoices):
    SEGMENTS = "segments"
    ROLLING = "rolling"


THRESHOLD_FIELDS = RollingThresholds.field_names()


class ScopePolicy(models.Model):
    scope = models.CharField(max_length=100, unique=True)
    policy = models.CharField(max_length=20, choices=Policy.choices, default=Policy.SEGMENTS)
    recent_turns = models.PositiveIntegerField(default=DEFAULT_THRESHOLDS.recent_turns)
    min_new_token_count = models.PositiveIntegerField(default=DEFAULT_THRESHOLDS.min_new_token_count)
    context_window_tokens = models.PositiveIntegerField(default=DEFAULT_THRESHOLDS.context_window_tokens)
    trigger_ratio = models.FloatField(default=DEFAULT_THRESHOLDS.trigger_ratio)
    min_new_message_count = models.PositiveIntegerField(default=DEFAULT_THRESHOLDS.min_new_message_count)
    min_compact_message_count = models.PositiveIntegerField(default=DEFAULT_THRESHOLDS.min_compact_message_count)
    max_compaction_batch_messages = models.PositiveIntegerField(
        default=DEFAULT_THRESHOLDS.max_compaction_batch_messages)
    max_rounds_per_request = models.PositiveIntegerField(default=DEFAULT_THRESHOLDS.max_rounds_per_request)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "scope policies"

    def __str__(self) -> str:
        return f"{self.scope}: {self.policy}"

    @property
    def is_rolling(self) -> bool:
        return self.policy == Policy.ROLLING

    def threshold_values(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in THRESHOLD_FIELDS}

    def thresholds(self) -> RollingThresholds:
        return RollingThresholds.from_mapping(self.threshold_values())

    def snapshot(self) -> dict[str, object]:
        """What the activity log keeps as before / after."""
        return {"policy": self.policy, **self.threshold_values()}

    def clean(self):
        super().clean()
        try:
            self.thresholds()
        except ThresholdError as exc:
            raise ValidationError({exc.field: str(exc).split(": ", 1)[-1]}) from exc
        except (TypeError, ValueError) as exc:  # a field left empty in a form
            raise ValidationError(str(exc)) from exc
