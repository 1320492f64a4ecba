"""Drift checks of a rolling hand-off note: lost, wrong and extra content, and
growth without new matters (SPEC §8; seed 001 §4 "走样有三种：丢、错、多",
and its table "交接单该装什么").

Pure and deterministic: no model, no database, the same findings for the
same input. ``check_note`` runs one small checker per finding code over a
note, its parent note, the generation's material and everything the chain
has settled so far (``ChainHistory``), reading every text with the one
shared vocabulary (``compaction.handoff.vocabulary``) that the offline
builder uses too. Length and content are checked separately (seed 001: a
withdrawn consent is sixty characters lost in thousands; a dropped "only"
makes the note shorter), so ``growth_without_new_matters`` looks at length
and the material only, and the other checkers never look at length.

The checkers live by kind — ``wrong``, ``extra``, ``lost``, ``length`` —
each checker's docstring giving its own rule; ``findings`` holds the codes;
``input`` the check input read once; ``reading`` how the chain's messages and
a note's lines are read, with the text rules of ``compaction.handoff.reading``
the builder shares.
"""

from __future__ import annotations

from typing import Callable, Iterable

from compaction import collector
from compaction.handoff import vocabulary as v
from compaction.handoff.material import Material

from .extra import check_assistant_ask_as_todo, check_question_as_requirement, check_tool_detail_in_requests
from .findings import (
    ABANDONED_UNMARKED, ASSISTANT_ASK_AS_TODO, CODES, DONE_WITHOUT_PROOF, GROWTH_WITHOUT_NEW_MATTERS, LOST_CONSTRAINT,
    QUESTION_AS_REQUIREMENT, QUOTE_NOT_VERBATIM, RETRACTED_CONSENT, TOOL_DETAIL_IN_REQUESTS, Finding,
)
from .input import DriftInput
from .length import check_growth_without_new_matters
from .lost import check_lost_constraint
from .reading import ChainHistory, ChainMessage  # noqa: F401 (the input types callers build)
from .wrong import check_abandoned_unmarked, check_done_without_proof, check_quote_not_verbatim, check_retracted_consent

__all__ = ["CHECKERS", "CODES", "ChainHistory", "ChainMessage", "Finding", "check_note"]


CHECKERS: dict[str, Callable[[DriftInput], list[Finding]]] = {
    QUOTE_NOT_VERBATIM: check_quote_not_verbatim,
    RETRACTED_CONSENT: check_retracted_consent,
    ABANDONED_UNMARKED: check_abandoned_unmarked,
    DONE_WITHOUT_PROOF: check_done_without_proof,
    TOOL_DETAIL_IN_REQUESTS: check_tool_detail_in_requests,
    QUESTION_AS_REQUIREMENT: check_question_as_requirement,
    ASSISTANT_ASK_AS_TODO: check_assistant_ask_as_todo,
    LOST_CONSTRAINT: check_lost_constraint,
    GROWTH_WITHOUT_NEW_MATTERS: check_growth_without_new_matters,
}


def check_note(note: str, *, parent: str | None, material: Material, chain: ChainHistory,
               vocabulary: v.Vocabulary = v.DEFAULT, codes: Iterable[str] | None = None) -> list[Finding]:
    """Every drift finding of one generation's note, sorted by line, section
    and code (a whole-note finding last).

    ``note`` and ``parent`` are note texts (``<summary>`` unwrapped here;
    ``parent`` None for a chain's first generation), ``material`` the
    generation's material with its tool results, ``chain`` what the chain
    settled up to this cut, ``vocabulary`` the scope's. ``codes`` limits
    the run to some checkers. Raises ``MalformedNote`` when the note (or
    its parent) is not a six-section note — the contract refuses those
    before a generation exists.
    """
    wanted = list(CHECKERS) if codes is None else [c for c in CHECKERS if c in set(codes)]
    unknown = set(codes or ()) - set(CHECKERS)
    if unknown:
        raise ValueError(f"unknown drift code(s): {', '.join(sorted(unknown))}")
    # The collector paused for the check (``compaction.collector``: p99 under
    # 20 ms per generation); the collection it defers runs as the check returns.
    with collector.paused():
        d = DriftInput(note=note, parent=parent, material=material, chain=chain, vocabulary=vocabulary)
        findings = [finding for code in wanted for finding in CHECKERS[code](d)]
        return sorted(set(findings), key=Finding.sort_key)

