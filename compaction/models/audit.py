"""The activity log: one ``AuditEvent`` per human action (who, what, before
and after, why), written by ``compaction.actions``."""

from django.conf import settings
from django.db import models

from .jobs import CompactionJob


class AuditEvent(models.Model):
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="audit_events"
    )
    actor_label = models.CharField(max_length=200, blank=True, default="")
    action = models.CharField(max_length=50)
    target_type = models.CharField(max_length=50)
    target_id = models.CharField(max_length=100)
    scope = models.CharField(max_length=100, blank=True, default="")
    conversation = models.ForeignKey(
        "conversations.Conversation", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    job = models.ForeignKey(CompactionJob, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    reason = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            models.Index(fields=["-created_at", "-id"], name="audit_created"),
            models.Index(fields=["scope", "-created_at"], name="audit_scope_created"),
            models.Index(fields=["action", "-created_at"], name="audit_action_created"),
        ]


