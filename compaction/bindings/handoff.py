"""The rolling hand-off binding (SPEC §7; seeds 001, 002 §6): the second
kind of job, through the one engine.

A scope whose policy is ``rolling`` (``ScopePolicy``) gets a *chain* of
hand-off notes per conversation instead of segment summaries. Generation
*k* is written from generation *k−1*'s note plus the new material: the
settled pairs after *k−1*'s cut and before the newest ``recent_turns``
pairs (``handoff.trigger``), user text included. Nothing older reaches the
provider: once the originals are gone, the parent note is the only record.

**Binding.** A hand-off job is bound to its scope and conversation, its
parent generation and the parent note's digest (SHA-256 of its UTF-8
text; empty for a chain's first generation), the material's pair range,
its message ids (each pair's user then assistant message) and their
source digest (SPEC §5's digest over the material's pairs), model id and
prompt version (``handoff@1``).

**Claim condition.** Its *shape* (``shape_problem`` / ``shape_sql``): at
least one pair, the ids, and a material that starts right after the
parent's cut (at pair 0 without a parent) — the parent digest is checked
in Python only (SQLite has no SHA-256; the parent's text is immutable, so
that check cannot race). It is *current* (``current_sql``, inside the
claim and the finish) while its material is unchanged (``HandoffPlan.
current_digest``, kept by the ingest, equals the source digest, and no
ingest marked it ``source_changed_at``) and its parent is the chain's
*tip* — the newest valid hand-off generation of the conversation (none for
a first generation). So the chain is linear: a job whose parent is not
the tip cannot be claimed, and of two jobs racing from one parent only
the first to finish writes a generation (the second finish no longer
finds its parent at the tip; on PostgreSQL the two finishes also collide
on the generation number, and the loser re-reads).

**Material and contract.** The provider sees the parent's note and the
material rendered by the ``handoff@1`` prompt, and — for the offline
builder — ``extra["handoff"]``, a ``HandoffInput`` with the material's
pairs and the tool results of their runs (``ToolResult``; not material,
but what confirms a done line). The note's language is the parent's (a
chain keeps one language), and for a first generation the material's
(``note.detect_language``). The contract is SPEC §5's over the text
inside ``<summary>…</summary>`` when present, plus ``malformed_note``
when the six headings are missing, repeated or out of order.

**Planning** (``handoff_plan``): after an ingest that changes a rolling
conversation, in the periodic scan, and once a generation is written (the
next round of its pass, ``after_generation``), the trigger decides over
the pairs after the tip's cut; over-long material is cut into batches and
the pass plans one batch per round, each written from the one before, at
most ``max_rounds_per_request`` rounds. Each pair's tokens are counted once
(``MessageTokens``), so planning reads only the unsummarised pairs and
never the chain behind them.

**When a source changes** (``handoff_sources_changed``, inside the ingest's
transaction): every hand-off job whose range reaches the first changed
pair gets its current digest recomputed; the first valid generation whose
material no longer matches breaks the chain — it and every descendant are
marked (``source_changed_at``, ``HandoffPlan.break_generation``), and open
jobs written from them or over changed material turn stale. The chain is
then re-planned from the last valid ancestor, like stale segments. If an
edit is undone, re-planning binds the same range to the same source and
parent again, which is the old job's binding: that job is revived.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import replace

from django.db import connection, transaction
from django.db.models import Exists, F, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from conversations.models import Conversation

from .. import providers
from ..contract import MALFORMED_NOTE, ContractResult, check
from ..digest import range_digest
from ..engine.attempts import state_when_revived
from ..handoff import note as notes
from ..handoff import prompt
from ..handoff.material import Material, MaterialPair
from ..handoff.trigger import ROUND_CAP, PlannedBatch, plan_pass
from ..models import CompactionJob, HandoffCheck, HandoffPlan, JobState, PromptVersion, SummaryGeneration
from ..models.handoff import TRIGGER_CHAIN, TRIGGER_PLAN
from ..policies import rolling_scopes, scope_policy_get
from ..providers.base import SummaryRequest
from ..tokens import count_tokens
from .base import PairRangeBinding
from .handoff_material import note_language, pair_token_counts, stored_pairs, tool_results
# compaction.drift.services still reads this one through here (the drift checks' area).
from .handoff_material import tool_results_between  # noqa: F401

HANDOFF_KIND = "handoff"

logger = logging.getLogger(__name__)

# Jobs that still speak for the chain's next generation (one may run later).
OPEN_STATES = (JobState.PENDING, JobState.RUNNING, JobState.FAILED, JobState.EXHAUSTED)
# A job in one of these states has written nothing: a changed source makes it stale.
_STALEABLE = (JobState.PENDING, JobState.FAILED, JobState.EXHAUSTED)
# Why a planning pass asked for nothing (besides the trigger's own reasons).
OPEN_JOB = "open_job"  # the tip already has an open child job
NOT_ROLLING = "not_rolling"
# What binding a batch found (``handoff_job_bind``).
NEW, REVIVED, EXISTS = "new", "revived", "exists"


def note_digest(text: str) -> str:
    """The parent note's digest a child is bound to: SHA-256 of its UTF-8 text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _table(model) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _tip_sql(*, job: str) -> str:
    """The conversation's chain tip (newest valid hand-off generation) as a
    scalar subquery: NULL when there is none. One ``%s``: the kind."""
    gen, jobs = _table(SummaryGeneration), _table(CompactionJob)
    return (f"(SELECT g.id FROM {gen} g JOIN {jobs} gj ON gj.id = g.job_id "
            f"WHERE g.conversation_id = {job}.conversation_id AND g.kind = %s AND gj.source_changed_at IS NULL "
            f"ORDER BY g.number DESC LIMIT 1)")


class HandoffBinding(PairRangeBinding):
    kind = HANDOFF_KIND
    prompt_family = prompt.PROMPT_FAMILY

    def model_id(self) -> str:
        return providers.handoff_model_id()

    def provider(self):
        return providers.handoff_provider_get()

    # --- planning -------------------------------------------------------------

    def plan(self, *, conversation):
        return handoff_plan(conversation=conversation, trigger=TRIGGER_PLAN)

    def conversations_unplanned(self, *, limit):
        return conversations_unchecked(limit=limit)

    def after_generation(self, *, job: CompactionJob) -> list[CompactionJob]:
        """The next round of the job's planning pass, now that its note is
        the chain's tip (seed 002 §6.6: batch after batch, each from the one
        before, up to ``max_rounds_per_request``)."""
        plan = HandoffPlan.objects.filter(job_id=job.pk).only("round").first()
        conversation = Conversation.objects.filter(pk=job.conversation_id).first()
        if conversation is None:
            return []
        return handoff_plan(conversation=conversation, trigger=TRIGGER_CHAIN, round=(plan.round if plan else 0) + 1)

    # --- the claim condition --------------------------------------------------

    def range_problem(self, from_pair, to_pair):
        return "" if to_pair >= from_pair else f"range {from_pair}-{to_pair} holds no pair"

    def range_sql(self, *, job):
        return f"{job}.to_pair >= {job}.from_pair"

    def shape_problem(self, job):
        problem = super().shape_problem(job)
        if problem:
            return problem
        if job.parent_generation_id is None:
            if job.from_pair != 0:
                return "a chain's first generation starts at pair 0"
            if job.parent_digest:
                return "a job without a parent binds no parent digest"
            return ""
        parent = (SummaryGeneration.objects.filter(pk=job.parent_generation_id)
                  .values("kind", "conversation_id", "to_pair", "text").first())
        if parent is None or parent["kind"] != HANDOFF_KIND or parent["conversation_id"] != job.conversation_id:
            return "the parent is not a hand-off generation of this conversation"
        if job.from_pair != parent["to_pair"] + 1:
            return f"the material does not start right after the parent's cut (pair {parent['to_pair']})"
        if job.parent_digest != note_digest(parent["text"]):
            return "the parent digest is not the digest of the parent's note"
        return ""

    def shape_sql(self, *, job, vendor):
        shape, params = super().shape_sql(job=job, vendor=vendor)
        gen = _table(SummaryGeneration)
        parent = (f"(({job}.parent_generation_id IS NULL AND {job}.from_pair = 0 AND {job}.parent_digest = '') "
                  f"OR EXISTS (SELECT 1 FROM {gen} p WHERE p.id = {job}.parent_generation_id AND p.kind = %s "
                  f"AND p.conversation_id = {job}.conversation_id AND {job}.from_pair = p.to_pair + 1 "
                  f"AND {job}.parent_digest <> ''))")
        return f"{shape} AND {parent}", [*params, HANDOFF_KIND]

    def current_sql(self, *, job):
        plan = _table(HandoffPlan)
        return (f"{job}.source_changed_at IS NULL "
                f"AND EXISTS (SELECT 1 FROM {plan} hp WHERE hp.job_id = {job}.id "
                f"AND hp.current_digest = {job}.source_digest) "
                f"AND COALESCE({job}.parent_generation_id, 0) = COALESCE({_tip_sql(job=job)}, 0)"), [HANDOFF_KIND]

    # --- material and contract ------------------------------------------------

    def request(self, *, job, attempt, stored):
        bound, problem = self.bound_pairs(job=job, stored=stored)
        if bound is None:
            return None, problem
        pairs = [MaterialPair(*p) for p in bound]
        parent_note = None
        if job.parent_generation_id is not None:
            parent_note = (SummaryGeneration.objects.filter(pk=job.parent_generation_id)
                           .values_list("text", flat=True).first())
            if parent_note is None or note_digest(parent_note) != job.parent_digest:
                return None, "the parent note is not the one the job is bound to"
        material = Material(pairs=tuple(pairs), tool_results=tuple(tool_results(job)))
        language = note_language(parent_note, material)
        pv = job.prompt_version
        _require_frozen_text(pv)
        rendered = prompt.render_for_material(parent_note=parent_note, material=material, language=language)
        from ..providers.handoff_extractive import HandoffInput

        return SummaryRequest(
            answers=(), system=rendered.system, user=rendered.user, prompt_version=pv.name, job_id=job.pk,
            attempt=attempt.number,
            extra={"handoff": HandoffInput(parent_note=parent_note, material=material, language=language)},
        ), ""

    def judge(self, result):
        """SPEC §5's contract over the note (the text inside ``<summary>``
        when present), then its six headings (``malformed_note``)."""
        if result.error or result.tool_calls or result.finish_reason != "stop":
            return check(result)
        note = notes.extract_summary(result.text or "")
        judged = check(replace(result, text=note))
        if not judged.ok:
            return judged
        problem = notes.heading_problem(note)
        if problem:
            return ContractResult(False, MALFORMED_NOTE, problem)
        return judged

    def summary_text(self, result):
        return notes.extract_summary(result.text or "")

    # --- beside the generation: its drift report (SPEC §8) -------------------

    def generation_prepare(self, *, job, text):
        """The note's drift findings, computed before the finish writes it
        (pure checks over what is stored; the finish's conditional move
        still decides whether the generation is written). A fault of the
        checkers never costs the note: it is logged and the generation is
        written without a report, for ``check_drift`` to fill."""
        from ..drift.services import drift_compute, drift_inputs
        from ..engine.outages import INFRASTRUCTURE

        try:
            inputs = drift_inputs(conversation_id=job.conversation_id, from_pair=job.from_pair,
                                  to_pair=job.to_pair, parent_generation_id=job.parent_generation_id, note=text)
            return None if inputs is None else drift_compute(inputs)
        except INFRASTRUCTURE:
            raise  # an outage: the caller retries the whole finish
        except Exception:  # noqa: BLE001 - the note is written all the same
            logger.exception("job %s: the drift checks failed; the generation is written without a report", job.pk)
            return None

    def generation_record(self, *, generation_id, prepared):
        from ..drift.services import drift_report_record

        drift_report_record(generation_id=generation_id, findings=prepared)


HANDOFF = HandoffBinding()


def _require_frozen_text(pv: PromptVersion) -> None:
    """The request is rendered by ``handoff.prompt``; it must be the text
    the prompt version froze (a changed prompt is a new version). A test
    keeps the two equal; this refuses loudly if they ever part."""
    if pv.name != prompt.PROMPT_VERSION or pv.system_template != prompt.SYSTEM_TEMPLATE \
            or pv.user_template != prompt.USER_TEMPLATE:
        raise RuntimeError(f"prompt version {pv.name}: its frozen text is not compaction.handoff.prompt's; "
                           "a changed prompt needs a new version")


def handoff_jobs():
    return CompactionJob.objects.filter(kind=HANDOFF_KIND)


def handoff_generations():
    return SummaryGeneration.objects.filter(kind=HANDOFF_KIND)


# --- reads (the material's own: handoff_material) -------------------------------

def chain_tip(conversation_id: int) -> SummaryGeneration | None:
    """The chain's tip: the newest hand-off generation whose chain is intact
    (with its note's tokens when they were counted: ``note_tokens``)."""
    return (handoff_generations().filter(conversation_id=conversation_id, job__source_changed_at__isnull=True)
            .annotate(note_tokens=F("job__handoff__note_tokens"))
            .order_by("-number").only("id", "number", "job_id", "to_pair", "text").first())


def _note_tokens(tip: SummaryGeneration | None) -> int:
    """The tip note's tokens, counted once and kept on its job's plan."""
    if tip is None:
        return 0
    if tip.note_tokens is not None:
        return tip.note_tokens
    counted = count_tokens(tip.text)
    HandoffPlan.objects.filter(job_id=tip.job_id).update(note_tokens=counted)
    return counted


# --- planning -----------------------------------------------------------------------

def handoff_plan(*, conversation, trigger: str = TRIGGER_PLAN, round: int = 1) -> list[CompactionJob]:
    """Ask the trigger whether the chain of ``conversation`` needs its next
    generation, and bind it (see the module docstring). ``round`` is this
    request's place in its planning pass. Returns the jobs to enqueue (new,
    or revived by an undone edit). Idempotent: planners of one conversation
    are serialised on its row, and a binding is unique."""
    policy = scope_policy_get(conversation.scope)
    if policy is None or not policy.is_rolling:
        if trigger == TRIGGER_CHAIN:  # a chain whose scope left the policy: nothing follows
            _checked(conversation.pk, chain_tip(conversation.pk), NOT_ROLLING)
        return []
    try:
        pv, model_id = HANDOFF.prompt_version(), HANDOFF.model_id()
    except (PromptVersion.DoesNotExist, ValueError):
        return []
    thresholds = policy.thresholds()
    to_run: list[CompactionJob] = []
    with transaction.atomic():
        conv = Conversation.objects.select_for_update().only("id", "scope").filter(pk=conversation.pk).first()
        if conv is None:
            return []
        while True:
            tip = chain_tip(conv.pk)
            first = tip.to_pair + 1 if tip is not None else 0
            if round > thresholds.max_rounds_per_request:
                _checked(conv.pk, tip, ROUND_CAP)
                break
            if handoff_jobs().filter(conversation_id=conv.pk, parent_generation=tip, state__in=OPEN_STATES,
                                     source_changed_at__isnull=True, prompt_version=pv, model_id=model_id).exists():
                _checked(conv.pk, tip, OPEN_JOB)
                break
            tokens = pair_token_counts(conv.pk, first)
            note_tokens = _note_tokens(tip)
            planned = plan_pass(tokens, first_pair=first, note_tokens=note_tokens, thresholds=thresholds)
            if not planned.batches:
                _checked(conv.pk, tip, planned.stopped, pair_count=first + len(tokens), made=planned.last_decision)
                break
            batch = planned.batches[0]
            estimate = note_tokens + sum(tokens)
            job, bound = handoff_job_bind(conversation=conv, parent=tip, batch=batch, prompt_version=pv,
                                          model_id=model_id, trigger=trigger, round=round, estimate=estimate)
            _checked(conv.pk, tip, batch.reason, pair_count=first + len(tokens), batch=batch, estimate=estimate)
            if bound in (NEW, REVIVED) and job.state == JobState.PENDING:
                to_run.append(job)
            elif bound == REVIVED and job.state == JobState.SUCCEEDED:
                round += 1  # an undone edit revived a written generation: it is the tip now
                continue
            break
    return to_run


def handoff_job_bind(*, conversation, parent: SummaryGeneration | None, batch: PlannedBatch,
                     prompt_version: PromptVersion, model_id: str, trigger: str, round: int,
                     estimate: int) -> tuple[CompactionJob, str]:
    """The job bound to ``batch`` of the material as stored now, written
    from ``parent``: created pending with its plan (``NEW``), or the
    existing job of that binding — ``REVIVED`` if an edit had made it stale
    and is undone now, else ``EXISTS``."""
    pairs = stored_pairs(conversation.pk, batch.from_pair, batch.to_pair)
    digest, ids = range_digest(pairs, batch.from_pair, batch.to_pair)
    if not digest:
        raise RuntimeError(f"conversation {conversation.pk}: pairs {batch.from_pair}-{batch.to_pair} are not stored")
    with transaction.atomic():
        job, created = CompactionJob.objects.get_or_create(
            kind=HANDOFF_KIND, conversation_id=conversation.pk, from_pair=batch.from_pair, to_pair=batch.to_pair,
            prompt_version=prompt_version, model_id=model_id, source_digest=digest, parent_generation=parent,
            defaults={"scope": conversation.scope, "message_ids": ids,
                      "parent_digest": note_digest(parent.text) if parent is not None else ""},
        )
        plan, _ = HandoffPlan.objects.get_or_create(job=job, defaults={
            "round": round, "trigger": trigger, "reason": batch.reason, "material_messages": batch.message_count,
            "material_tokens": batch.token_count, "estimate_tokens": estimate, "current_digest": digest})
        if created:
            return job, NEW
        if plan.current_digest != digest:
            HandoffPlan.objects.filter(pk=plan.pk).update(current_digest=digest)
        if job.source_changed_at is None and job.state != JobState.STALE:
            return job, EXISTS
        # The binding matches the stored source and the tip again: an edit
        # was undone (or the claim found another tip then). Revive the job.
        now = timezone.now()
        CompactionJob.objects.filter(pk=job.pk).update(source_changed_at=None, updated_at=now)
        CompactionJob.objects.filter(pk=job.pk, state=JobState.STALE).update(state=state_when_revived())
        HandoffPlan.objects.filter(pk=plan.pk).update(break_generation=None, break_pair=None)
        job.refresh_from_db()
        return job, REVIVED


def _checked(conversation_id: int, tip, decision: str, *, pair_count: int | None = None, made=None,
             batch: PlannedBatch | None = None, estimate: int = 0) -> None:
    """Keep the trigger's decision for this conversation and what it was
    made over (``made``: the trigger's ``TriggerDecision``; ``batch``: what it
    planned)."""
    if pair_count is None:
        pair_count = Conversation.objects.filter(pk=conversation_id).values_list("pair_count", flat=True).first() or 0
    values = {"parent": tip, "decision": decision, "pair_count": pair_count,
              "material_messages": 0, "material_tokens": 0, "estimate_tokens": 0}
    if batch is not None:
        values.update(material_messages=batch.message_count, material_tokens=batch.token_count,
                      estimate_tokens=estimate)
    elif made is not None:
        values.update(material_messages=made.material_messages, material_tokens=made.material_tokens,
                      estimate_tokens=made.estimate_tokens)
    # One statement (an upsert): this runs after every ingest of a rolling conversation.
    HandoffCheck.objects.bulk_create([HandoffCheck(conversation_id=conversation_id, checked_at=timezone.now(),
                                                   **values)],
                                     update_conflicts=True, unique_fields=["conversation"],
                                     update_fields=[*values, "checked_at"])


def conversations_unchecked(*, limit: int) -> list[int]:
    """Rolling conversations whose trigger was not asked since they last
    changed (their pair count or their chain's tip moved since the last
    decision): what the periodic scan plans."""
    scopes = rolling_scopes()
    if not scopes:
        return []
    tip = Subquery(handoff_generations().filter(conversation_id=OuterRef("pk"), job__source_changed_at__isnull=True)
                   .order_by("-number").values("pk")[:1])
    fresh = HandoffCheck.objects.annotate(parent0=Coalesce("parent_id", Value(0))).filter(
        conversation_id=OuterRef("pk"), pair_count=OuterRef("pair_count"), parent0=OuterRef("tip0"))
    qs = (Conversation.objects.filter(scope__in=scopes).annotate(tip0=Coalesce(tip, Value(0)))
          .filter(~Exists(fresh)).order_by("pk"))
    return list(qs.values_list("pk", flat=True)[:limit])


def chain_caught_up(jobs, *, since) -> bool:
    """Whether, for every hand-off job of ``jobs`` written since ``since``,
    the trigger has been asked what follows (``compact --wait``)."""
    written = jobs.filter(kind=HANDOFF_KIND, state=JobState.SUCCEEDED, updated_at__gte=since)
    asked = HandoffCheck.objects.filter(conversation_id=OuterRef("conversation_id"),
                                        checked_at__gte=OuterRef("updated_at"))
    return not written.filter(~Exists(asked)).exists()


# --- when a source changes ------------------------------------------------------------

def handoff_sources_changed(*, conversation, from_pair: int) -> int:
    """React to an ingest that changed the pairs from ``from_pair`` on (see
    the module docstring). Called inside the ingest's transaction. Returns
    how many jobs stopped being current."""
    jobs = list(handoff_jobs().filter(conversation=conversation, to_pair__gte=from_pair)
                .only("id", "from_pair", "to_pair", "source_digest", "state", "source_changed_at",
                      "parent_generation_id"))
    if not jobs:
        return 0
    pairs = stored_pairs(conversation.pk, min(j.from_pair for j in jobs), max(j.to_pair for j in jobs))
    digests = {(j.from_pair, j.to_pair): range_digest(pairs, j.from_pair, j.to_pair)[0] for j in jobs}
    plans = dict(HandoffPlan.objects.filter(job_id__in=[j.pk for j in jobs]).values_list("job_id", "current_digest"))
    for job in jobs:
        now_digest = digests[(job.from_pair, job.to_pair)]
        if plans.get(job.pk) != now_digest:
            HandoffPlan.objects.filter(job_id=job.pk).update(current_digest=now_digest)
    now = timezone.now()
    valid = list(handoff_generations().filter(conversation=conversation, job__source_changed_at__isnull=True)
                 .order_by("number").values_list("id", "number", "job_id", "from_pair", "to_pair", "source_digest"))
    broken_at = next((g for g in valid if g[4] >= from_pair and digests.get((g[3], g[4])) != g[5]), None)
    marked = 0
    broken_generations: set[int] = set()
    if broken_at is not None:
        broken = [g for g in valid if g[1] >= broken_at[1]]
        broken_generations = {g[0] for g in broken}
        marked += CompactionJob.objects.filter(pk__in=[g[2] for g in broken]).update(source_changed_at=now,
                                                                                   updated_at=now)
        HandoffPlan.objects.filter(job_id__in=[g[2] for g in broken]).update(break_generation=broken_at[0],
                                                                             break_pair=from_pair)
    for job in jobs:
        if job.source_changed_at is not None or job.state in (JobState.SUCCEEDED, JobState.STALE):
            continue
        parent_broken = job.parent_generation_id in broken_generations
        if not parent_broken and digests[(job.from_pair, job.to_pair)] == job.source_digest:
            continue
        marked += CompactionJob.objects.filter(pk=job.pk).update(source_changed_at=now, updated_at=now)
        CompactionJob.objects.filter(pk=job.pk, state__in=_STALEABLE).update(state=JobState.STALE)
        HandoffPlan.objects.filter(job_id=job.pk).update(
            break_generation=broken_at[0] if parent_broken else None, break_pair=from_pair)
    return marked
