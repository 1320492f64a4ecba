"""Which summary a planned segment may use, and why not (SPEC §6; seed 000
§4 and §6 case B). Pure.

A planned segment is given as a summary only by a generation whose job
succeeded, whose prompt version is accepted for projection, whose range is
the segment's range and whose stored source digest equals the segment's
current digest. Among several
such generations the newest accepted prompt version wins (``@3`` over
``@2``), then the newest generation. ``@1`` is never used. When none
qualifies, the segment's pairs are offered raw and the reason says why, in
this order of precedence:

1. ``failed`` / ``exhausted`` — the newest accepted prompt version's job for
   the *current* source is in that state (what an operator must act on);
   ``stale_source`` if that job itself was invalidated by a source change.
2. ``stale_source`` — an accepted summary exists, but for an older source
   (a message of the range was edited since; seed 000 §6 case B).
3. ``not_accepted_version`` — only summaries under a version not accepted
   for projection exist (``@1``).
4. ``pending`` — otherwise: a job is pending or running, or none exists yet.

These are also the reasons the account gives a raw pair of a planned
segment; ``over_budget`` is the only reason a pair is omitted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

OVER_BUDGET = "over_budget"
STALE_SOURCE = "stale_source"
FAILED = "failed"
EXHAUSTED = "exhausted"
PENDING = "pending"
NOT_ACCEPTED_VERSION = "not_accepted_version"
REASONS = (OVER_BUDGET, STALE_SOURCE, FAILED, EXHAUSTED, PENDING, NOT_ACCEPTED_VERSION)


@dataclass(frozen=True)
class GenerationFacts:
    """What is known about one stored generation for a range, without its text."""

    id: int
    from_pair: int
    to_pair: int
    source_digest: str
    prompt_version: str
    version: int
    accepted: bool
    job_state: str
    number: int
    text_bytes: int


@dataclass(frozen=True)
class JobFacts:
    id: int
    source_digest: str
    state: str
    version: int
    accepted: bool


def choose_summary(
    *, from_pair: int, to_pair: int, digest: str,
    generations: Iterable[GenerationFacts], jobs: Iterable[JobFacts] = (),
) -> tuple[GenerationFacts | None, str | None]:
    """The usable generation for a planned segment, or ``None`` and why not."""
    generations = [g for g in generations if g.from_pair == from_pair and g.to_pair == to_pair]
    usable = [
        g for g in generations
        if g.accepted and g.job_state == "succeeded" and g.source_digest == digest
    ]
    if usable:
        return max(usable, key=lambda g: (g.version, g.number)), None
    current = [j for j in jobs if j.accepted and j.source_digest == digest]
    if current:
        newest = max(current, key=lambda j: (j.version, j.id))
        if newest.state in (FAILED, EXHAUSTED):
            return None, newest.state
        if newest.state == "stale":
            return None, STALE_SOURCE
    if any(g.accepted and g.source_digest != digest for g in generations):
        return None, STALE_SOURCE
    if any(not g.accepted for g in generations):
        return None, NOT_ACCEPTED_VERSION
    return None, PENDING
