"""How compaction hears about ingest (issue 10): the listener it registers
on ``conversations.hooks`` when Django starts.

It plans the segments of a conversation's pairs (SPEC §5: the plan and the
source digest are compaction's rules), and, inside the ingest's
transaction, reacts to ranges whose digest moved (jobs bound to an old
digest go stale) and asks for the new ranges to be planned once the ingest
commits.
"""

from __future__ import annotations

from conversations import hooks

from .digest import digest_input, source_digest
from .planning import plan_segments
from .services import conversations_changed, jobs_sources_changed


class CompactionListener(hooks.IngestListener):
    def plan(self, pairs):
        return [
            hooks.PlannedRange(rng.number, rng.from_pair, rng.to_pair, source_digest(
                digest_input(p.index, p.user.external_id, p.user.content, p.assistant.external_id,
                             p.assistant.content)
                for p in pairs[rng.from_pair: rng.to_pair + 1]))
            for rng in plan_segments(len(pairs))
        ]

    def written(self, changes):
        moved = [change for change in changes if change.segment_changes]
        for change in moved:
            if not change.created:  # a conversation created just now has no jobs
                jobs_sources_changed(conversation=change.conversation, changes=change.segment_changes)
        conversations_changed(conversation_ids=[change.conversation.pk for change in moved])
