"""The demo conversations, written for this project (seed_demo loads them).

Six conversations in Chinese, English and a mix of both, 40–130 pairs each,
that together exercise every ingest and pairing rule of SPEC §3–§4:
corrections and retractions, tool calls inside runs, a streaming answer, a
failed run, a ``clarify_pending`` run, messages without a run, and answers
edited after the fact (see ``builder``).
"""

from __future__ import annotations

from . import airline_support, debugging, fund_research, insurance_claims, mixed_etf, travel_planning
from .builder import Built, build

MODULES = (fund_research, travel_planning, airline_support, debugging, insurance_claims, mixed_etf)

# The edit seed_demo ingests only with --edit-after-compaction: it lies in the
# first planned segment of its conversation, so a summary of that segment
# made before the edit becomes stale.
AFTER_COMPACTION = "after-compaction"
# Edits seed_demo always ingests after the first load (they make the
# MessageRevision a reviewer can diff); they lie in the raw tail.
TAIL = "tail"


def demo_conversations() -> list[Built]:
    return [build(module.conversation()) for module in MODULES]


def demo_scopes() -> list[str]:
    return sorted({b.document["scope"] for b in demo_conversations()})
