"""The one narrow hook between what was said and what is made of it (issue 10).

``conversations`` never imports ``compaction``. Ingest needs exactly two
things from whatever compacts conversations, and this module is where they
meet:

1. ``plan(pairs)``: the ranges planned over a conversation's pairs, each with
   its current source digest. Which ranges are planned (SPEC §5: fixed
   10-pair segments) and how a digest is computed are the compactor's
   rules, so ingest asks instead of knowing. Ingest stores the answer as
   ``Segment`` rows in its own transaction, so a range's digest moves in the
   same transaction as the message that moved it.
2. ``written(changes)``: called inside the ingest's transaction, once its
   rows are written, with every conversation the ingest changed, the
   planned ranges whose digest moved (appeared, changed or went away) and
   the first pair that is not what it was (``pairs_changed_from``: a
   summary over any other range — a rolling note's — may have moved). The
   compactor reacts in the same transaction (jobs bound to an old digest go
   stale) and schedules its work for after the commit.

The compactor registers one listener when Django starts
(``compaction.apps.CompactionConfig.ready``). Without one, nothing is
planned and nothing is announced.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # for the annotations only
    from .models import Conversation
    from .pairing import PairView


@dataclass(frozen=True)
class PlannedRange:
    """One planned range of pairs and its current source digest."""

    number: int
    from_pair: int
    to_pair: int
    digest: str


@dataclass
class SegmentChange:
    """A planned range whose digest moved: ``old_digest`` is None for a range
    planned anew, ``new_digest`` None for one no longer planned."""

    from_pair: int
    to_pair: int
    old_digest: str | None
    new_digest: str | None


@dataclass
class ConversationWritten:
    """One conversation an ingest changed, as the listener sees it.
    ``pairs_changed_from`` is the lowest index of a pair that existed before
    this ingest and is not what it was (another run or message, renumbered,
    gone, or one of its two messages' content changed); None when every
    earlier pair is untouched (pairs only appended, or none moved)."""

    conversation: Conversation
    created: bool
    segment_changes: list[SegmentChange] = field(default_factory=list)
    pairs_changed_from: int | None = None


class IngestListener:
    """What ingest calls; the default plans nothing and hears nothing."""

    def plan(self, pairs: Sequence[PairView]) -> list[PlannedRange]:
        return []

    def written(self, changes: list[ConversationWritten]) -> None:
        return None


_listener = IngestListener()


def listen(listener: IngestListener) -> IngestListener:
    """Make ``listener`` the one ingest calls; returns the one it replaces."""
    global _listener
    previous, _listener = _listener, listener
    return previous


def listener() -> IngestListener:
    return _listener
