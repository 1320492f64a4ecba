"""How compaction hears about ingest (issue 10): the listener it registers
on ``conversations.hooks`` when Django starts.

It gives ingest the segment plan of a conversation's pairs (SPEC §5: the
plan and the source digest are compaction's rules), and, inside the
ingest's transaction, has the segment jobs of ranges whose digest moved
react (``bindings.segments.segments_changed``) and asks for the changed
conversations to be planned once the ingest commits (unless
``COMPACTION_AUTO_PLAN`` is off).
"""

from __future__ import annotations

from django.conf import settings

from conversations import hooks

from .bindings.segments import segment_plan, segments_changed
from .engine.dispatch import conversations_plan_after_commit


class CompactionListener(hooks.IngestListener):
    def plan(self, pairs):
        return segment_plan(pairs)

    def written(self, changes):
        moved = [change for change in changes if change.segment_changes]
        for change in moved:
            if not change.created:  # a conversation created just now has no jobs
                segments_changed(conversation=change.conversation, changes=change.segment_changes)
        if settings.COMPACTION_AUTO_PLAN:
            conversations_plan_after_commit([change.conversation.pk for change in moved])
