"""How compaction hears about ingest (issue 10): the listener it registers
on ``conversations.hooks`` when Django starts.

It gives ingest the segment plan of a conversation's pairs (SPEC §5: the
plan and the source digest are compaction's rules), and, inside the
ingest's transaction, has the jobs whose source moved react: segment jobs
of ranges whose digest moved (``bindings.segments.segments_changed``) and
rolling hand-off jobs over pairs that changed (``bindings.handoff.
handoff_sources_changed``: the chain breaks where a generation's material
no longer matches). Once the ingest commits it asks for planning (unless
``COMPACTION_AUTO_PLAN`` is off) of the conversations whose segments moved
and of every changed conversation of a rolling scope (SPEC §7: the trigger
is asked after every ingest that adds pairs, and a broken chain is
re-planned from its last valid ancestor).
"""

from __future__ import annotations

from django.conf import settings

from conversations import hooks

from .bindings.handoff import handoff_sources_changed
from .bindings.segments import segment_plan, segments_changed
from .engine.dispatch import conversations_plan_after_commit
from .policies import rolling_scopes


class CompactionListener(hooks.IngestListener):
    def plan(self, pairs):
        return segment_plan(pairs)

    def written(self, changes):
        moved = [change for change in changes if change.segment_changes]
        for change in moved:
            if not change.created:  # a conversation created just now has no jobs
                segments_changed(conversation=change.conversation, changes=change.segment_changes)
        for change in changes:
            if not change.created and change.pairs_changed_from is not None:
                handoff_sources_changed(conversation=change.conversation, from_pair=change.pairs_changed_from)
        rolling = rolling_scopes({change.conversation.scope for change in changes})
        if settings.COMPACTION_AUTO_PLAN:
            wanted = [change.conversation.pk for change in changes
                      if change.segment_changes or change.conversation.scope in rolling]
            conversations_plan_after_commit(list(dict.fromkeys(wanted)))
