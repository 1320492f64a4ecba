"""The activity log, read side (SPEC §1; issue 6): who did what to which
range, when, why, before and after. Written only by ``compaction.actions``;
read by the desk's activity page and ``/api/v1/activity/``.
"""

from __future__ import annotations

from django.db.models import QuerySet

from conversations.selectors import in_scopes_of

from .audit import iso
from .models import AuditEvent


def activity_events(*, user) -> QuerySet[AuditEvent]:
    """Audit events ``user`` may see: staff see all; everyone else the events
    of their scopes (events without a scope are staff-only)."""
    return in_scopes_of(AuditEvent.objects.all(), user=user)


def activity_record(event: AuditEvent) -> dict:
    return {
        "id": event.pk,
        "created_at": iso(event.created_at),
        "actor": event.actor.get_username() if event.actor_id else None,
        "actor_label": event.actor_label,
        "action": event.action,
        "target_type": event.target_type,
        "target_id": event.target_id,
        "scope": event.scope,
        "conversation": event.conversation_id,
        "job": event.job_id,
        "before": event.before,
        "after": event.after,
        "reason": event.reason,
    }
