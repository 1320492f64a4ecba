"""Reads for a rolling conversation's hand-off chain on its page (SPEC §7,
§8): every generation with its parent, validity, where the chain broke, its
diff from its parent, and its drift findings linked to the messages that
prove them; the chain's jobs that wrote nothing yet."""

from __future__ import annotations

from dataclasses import dataclass, field

from conversations.models import Conversation, Message, Pair

from ..models import CompactionJob, SummaryGeneration
from .presenters import diff_rows
from .segment import source_anchor
from .selectors import JOB_ROW_FIELDS


@dataclass
class ChainGeneration:
    generation: SummaryGeneration
    job: CompactionJob
    parent_number: int | None
    valid: bool
    broke_here: bool  # its own material changed: the chain broke at this generation
    break_number: int | None  # the generation where the chain broke, when it did at or above this one
    break_pair: int | None
    diff: list  # [(css class, line)] from the parent's note
    chars: int
    findings: list = field(default_factory=list)  # DriftFinding rows, each with ``links``, ``title``...
    drift_checked: bool = False
    drift_counts: dict = field(default_factory=dict)  # kind -> count, in KIND order
    note_lines: list = field(default_factory=list)  # [(number, text, [findings on it])]
    grew_without_new_matters: bool = False
    whole_note_findings: list = field(default_factory=list)  # findings about no one line


def rolling_chain(*, conversation: Conversation) -> dict:
    """Everything the chain view draws (``_chain.html``): every hand-off
    generation in the order written, with its job (state, attempts), its
    parent, whether it is valid, where its chain broke, its diff from its
    parent; the chain's jobs that wrote nothing (yet); the trigger's last
    decision. A fixed number of queries."""
    from ..bindings.handoff import HANDOFF_KIND
    from ..models import HandoffCheck, HandoffPlan

    generations = list(
        SummaryGeneration.objects.filter(conversation=conversation, kind=HANDOFF_KIND)
        .select_related("prompt_version", "job").order_by("number")
    )
    jobs = list(
        CompactionJob.objects.filter(conversation=conversation, kind=HANDOFF_KIND)
        .select_related("prompt_version").only(*JOB_ROW_FIELDS, "parent_generation_id", "model_id").order_by("id")
    )
    plans = {p.job_id: p for p in HandoffPlan.objects.filter(job_id__in=[j.pk for j in jobs])}
    by_id = {g.pk: g for g in generations}
    rows = []
    for gen in generations:
        plan = plans.get(gen.job_id)
        parent = by_id.get(gen.parent_id)
        broken = plan.break_generation_id if plan else None
        valid = gen.job.source_changed_at is None and (plan is None or plan.current_digest == gen.source_digest)
        rows.append(ChainGeneration(
            generation=gen, job=gen.job, parent_number=parent.number if parent else None, valid=valid,
            broke_here=broken == gen.pk, break_number=by_id[broken].number if broken in by_id else None,
            break_pair=plan.break_pair if plan else None,
            diff=diff_rows(parent.text if parent else "", gen.text), chars=len(gen.text)))
    _chain_drift(conversation, rows)
    written = {g.job_id for g in generations}
    numbers = {g.pk: g.number for g in generations}
    waiting = [j for j in jobs if j.pk not in written]
    for job in waiting:
        job.parent_number = numbers.get(job.parent_generation_id)
        job.plan = plans.get(job.pk)
    return {
        "chain": rows,
        "chain_jobs": waiting,
        "chain_check": HandoffCheck.objects.filter(conversation=conversation).select_related("parent").first(),
        "chain_valid": sum(1 for r in rows if r.valid),
    }


@dataclass
class ProvingMessage:
    """A message a finding cites, and where the desk shows it."""

    id: str
    role: str  # user, assistant, tool
    pair_index: int | None
    url: str | None  # the job page of the generation whose material holds it, at the message
    excerpt: str


def _chain_drift(conversation: Conversation, rows: list[ChainGeneration]) -> None:
    """Each generation's drift findings (SPEC §8) on its rows: highlighted
    on their note lines, counted by kind, in plain words, with links to the
    messages that prove them (the job page of the generation whose material
    holds each). Three queries whatever the chain's length."""
    from django.urls import reverse

    from ..drift import words
    from ..drift.findings import CODES
    from ..models import DriftFinding, DriftReport

    if not rows:
        return
    ids = [r.generation.pk for r in rows]
    checked = set(DriftReport.objects.filter(generation_id__in=ids).values_list("generation_id", flat=True))
    by_generation: dict[int, list] = {}
    for f in DriftFinding.objects.filter(generation_id__in=ids).order_by("generation_id", "position"):
        by_generation.setdefault(f.generation_id, []).append(f)
    cited = {m for found in by_generation.values() for f in found for m in f.message_ids}
    messages = {}
    if cited:
        found = list(Message.objects.filter(conversation=conversation, external_id__in=cited)
                     .values_list("external_id", "role", "run_id", "content"))
        pair_of_run = dict(Pair.objects.filter(
            conversation=conversation, run_id__in={run for _, _, run, _ in found}).values_list("run_id", "index"))
        for external_id, role, run_id, content in found:
            index = pair_of_run.get(run_id)
            job = next((r.job.pk for r in rows if index is not None
                        and r.generation.from_pair <= index <= r.generation.to_pair), None)
            # The source card on the job page (a tool result: its pair's user message).
            anchor = source_anchor(index, "assistant" if role == "assistant" else "user") if index is not None else ""
            url = f"{reverse('desk-job', args=[job])}#{anchor}" if job is not None and anchor else None
            text = " ".join(content.split())
            messages[external_id] = ProvingMessage(external_id, role, index, url,
                                                   text if len(text) <= 140 else text[:139] + "…")
    kinds = list(dict.fromkeys(CODES.values()))
    for r in rows:
        findings = by_generation.get(r.generation.pk, [])
        for f in findings:
            f.kind_title = words.kind_title(f.kind)
            f.code_title = words.code_title(f.code)
            f.explanation = words.code_explanation(f.code)
            f.links = [messages.get(m) or ProvingMessage(m, "", None, None, "") for m in f.message_ids]
        r.findings = findings
        r.drift_checked = r.generation.pk in checked
        r.drift_counts = {k: n for k in kinds if (n := sum(1 for f in findings if f.kind == k))}
        r.grew_without_new_matters = any(f.code == words.GROWTH_WITHOUT_NEW_MATTERS for f in findings)
        on_line: dict[int, list] = {}
        for f in findings:
            if f.line is not None:
                on_line.setdefault(f.line, []).append(f)
        r.whole_note_findings = [f for f in findings if f.line is None]
        r.note_lines = [(n, text, on_line.get(n, [])) for n, text in enumerate(r.generation.text.splitlines(), 1)]
