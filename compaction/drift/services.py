"""Drift reports stored beside generations (SPEC §8: "computed
deterministically when it is written, kept beside it, never changing it";
§11: ``check_drift``).

``drift_inputs`` reads what a hand-off generation was checked against from
the database — its note, the parent's note, its material (the stored pairs
of its range) with their tool results, and the chain settled before it
(pairs ``0 … from_pair − 1``) — and ``drift_compute`` runs the pure checkers
(``check_note``) over it. ``drift_report_record`` writes the findings as a
generation's report; the engine's finish calls it inside the transaction
that writes the generation (``HandoffBinding.generation_record``).
``drift_report_refresh`` recomputes an old generation's report and
replaces it (``check_drift``): findings that still stand keep their rows,
so a verdict that cited them still does.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db import transaction

from compaction.handoff import note as notes
from compaction.handoff.material import Material, MaterialPair

from ..models import CompactionJob, DriftFinding, DriftReport, SummaryGeneration
from .checkers import check_note
from .findings import Finding
from .reading import ChainHistory, ChainMessage

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DriftInputs:
    note: str
    parent: str | None
    material: Material
    chain: ChainHistory


def drift_inputs(*, conversation_id: int, from_pair: int, to_pair: int, parent_generation_id: int | None,
                 note: str) -> DriftInputs | None:
    """What a hand-off note over pairs ``[from_pair, to_pair]`` is checked
    against, as stored now; None when a pair of its range is not paired any
    more (the generation's binding no longer matches: nothing to check it
    against)."""
    from ..bindings.handoff import stored_pairs, tool_results_between

    pairs = stored_pairs(conversation_id, 0, to_pair)
    if any(i not in pairs for i in range(from_pair, to_pair + 1)):
        return None
    results = tool_results_between(conversation_id, 0, to_pair)  # one read for the chain and the material
    material = Material(
        pairs=tuple(MaterialPair(i, *pairs[i]) for i in range(from_pair, to_pair + 1)),
        tool_results=tuple(r for r in results if r.pair_index >= from_pair))
    before = [i for i in sorted(pairs) if i < from_pair]
    chain = ChainHistory(
        user_messages=tuple(ChainMessage(pairs[i][0], i, pairs[i][1]) for i in before),
        assistant_messages=tuple(ChainMessage(pairs[i][2], i, pairs[i][3]) for i in before),
        tool_results=tuple(r for r in results if r.pair_index < from_pair))
    parent = None
    if parent_generation_id is not None:
        parent = SummaryGeneration.objects.filter(pk=parent_generation_id).values_list("text", flat=True).first()
    return DriftInputs(note=note, parent=parent, material=material, chain=chain)


def drift_compute(inputs: DriftInputs) -> list[Finding]:
    """Every finding of one note (pure over ``inputs``). A note or parent
    that is not a six-section note has none to give: the contract refuses
    those before a generation exists."""
    try:
        return check_note(inputs.note, parent=inputs.parent, material=inputs.material, chain=inputs.chain)
    except notes.MalformedNote:
        return []


def generation_drift(generation: SummaryGeneration) -> list[Finding] | None:
    """The findings of a stored hand-off generation, computed now; None
    when what it was written from is no longer what is stored (its chain
    broke at or above it, or its own material changed): its report stays
    the one computed when it was written."""
    from ..digest import digest_input, source_digest

    if CompactionJob.objects.filter(pk=generation.job_id, source_changed_at__isnull=False).exists():
        return None
    inputs = drift_inputs(conversation_id=generation.conversation_id, from_pair=generation.from_pair,
                          to_pair=generation.to_pair, parent_generation_id=generation.parent_id,
                          note=generation.text)
    if inputs is None or source_digest(
            digest_input(p.index, p.user_id, p.user_text, p.assistant_id, p.assistant_text)
            for p in inputs.material.pairs) != generation.source_digest:
        return None
    return drift_compute(inputs)


def _row(generation_id: int, position: int, f: Finding) -> DriftFinding:
    return DriftFinding(generation_id=generation_id, position=position, kind=f.kind, code=f.code,
                        section=f.section, line=f.line, message_ids=list(f.message_ids), detail=f.detail,
                        subject=f.subject)


def drift_report_record(*, generation_id: int, findings: list[Finding]) -> None:
    """Store a new generation's report (inside its transaction)."""
    DriftReport.objects.create(generation_id=generation_id, finding_count=len(findings))
    DriftFinding.objects.bulk_create([_row(generation_id, i, f) for i, f in enumerate(findings)])


def _identity(kind, code, section, line, message_ids, detail, subject) -> tuple:
    return (kind, code, section, line, tuple(message_ids), detail, subject)


@transaction.atomic
def drift_report_replace(*, generation_id: int, findings: list[Finding]) -> tuple[int, int]:
    """Replace a generation's report with ``findings``, idempotently: a
    stored finding equal to a new one keeps its row (and the reviews that
    cite it), the others go, the new ones are added, positions follow the
    new order. Returns (findings kept, findings changed: added + removed)."""
    SummaryGeneration.objects.select_for_update().filter(pk=generation_id).values_list("pk").first()
    stored = {_identity(*row[1:]): row[0] for row in DriftFinding.objects.filter(generation_id=generation_id)
              .values_list("pk", "kind", "code", "section", "line", "message_ids", "detail", "subject")}
    wanted = [(_identity(f.kind, f.code, f.section, f.line, f.message_ids, f.detail, f.subject), f) for f in findings]
    keep = {stored[key] for key, _ in wanted if key in stored}
    removed = DriftFinding.objects.filter(generation_id=generation_id).exclude(pk__in=keep).delete()[1].get(
        DriftFinding._meta.label, 0)
    # Positions are unique per generation: move the kept rows out of the way first.
    for pk in keep:
        DriftFinding.objects.filter(pk=pk).update(position=10**6 + pk)
    added = 0
    for position, (key, f) in enumerate(wanted):
        if key in stored:
            DriftFinding.objects.filter(pk=stored[key]).update(position=position)
        else:
            _row(generation_id, position, f).save()
            added += 1
    DriftReport.objects.update_or_create(generation_id=generation_id, defaults={"finding_count": len(findings)})
    return len(keep), added + removed


def drift_report_refresh(*, generation: SummaryGeneration) -> tuple[int, int] | None:
    """Recompute a stored generation's report and replace it; None when what
    it was written from is no longer stored as it was (``generation_drift``:
    nothing is changed then)."""
    findings = generation_drift(generation)
    if findings is None:
        return None
    return drift_report_replace(generation_id=generation.pk, findings=findings)
