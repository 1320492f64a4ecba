"""Reads for the activity log (``/activity/``, SPEC §1): who did what to
which range, when and why — the audit events the user may see
(``compaction.activity``), filtered, newest first, a keyset page at a time."""

from __future__ import annotations

from ..activity import activity_events
from ..keyset import ID, TIME, Keyset, Page
from .selectors import day_start_utc, where_given

ACTIVITY = Keyset("desk-activity", ("-created_at", "-id"), (TIME, ID))


def activity_list(*, user, action: str = "", actor: str = "", scope: str = "", conversation: int | None = None,
                  job: int | None = None, since=None, cursor: str | None = None, page_size: int = 50) -> Page:
    qs = where_given(activity_events(user=user).select_related("conversation", "job"), action=action,
                     actor_label=actor, scope=scope, conversation_id=conversation, job_id=job)
    if since:
        qs = qs.filter(created_at__gte=day_start_utc(since))
    return ACTIVITY.page(qs, cursor=cursor, size=page_size)
