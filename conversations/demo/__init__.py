"""The demo conversations, written for this project (seed_demo loads them).

Seven conversations in Chinese, English and a mix of both, 40–130 pairs
each, that together exercise every ingest and pairing rule of SPEC §3–§4:
corrections and retractions, tool calls inside runs, a streaming answer, a
failed run, a ``clarify_pending`` run, messages without a run, and answers
edited after the fact (see ``builder``). Two scopes follow the rolling
hand-off policy (SPEC §7; ``ROLLING_POLICIES``, which seed_demo sets):
``device-repair`` (the long Chinese repair conversation) and
``airline-support`` (English).
"""

from __future__ import annotations

from . import airline_support, debugging, device_repair, fund_research, insurance_claims, mixed_etf, travel_planning
from .builder import Built, build

MODULES = (fund_research, travel_planning, airline_support, debugging, insurance_claims, mixed_etf, device_repair)

# Scopes the demo compacts with rolling hand-off notes, and their thresholds
# (the rest keep seed 002 §12's defaults): low enough that each
# conversation is written into several generations offline — 14 pairs a
# batch for the repair conversation (nine generations, as in seed 001's
# regression), 8 for the airline one.
ROLLING_POLICIES = {
    "device-repair": {"recent_turns": 6, "min_new_token_count": 150, "max_compaction_batch_messages": 28},
    "airline-support": {"recent_turns": 6, "min_new_token_count": 300, "max_compaction_batch_messages": 16},
}

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
