"""Every human action (SPEC §1, §5; Zulip's ``zerver/actions`` shape).

Each ``do_*`` takes the acting user and a reason (a verdict's note is its
reason), writes one ``AuditEvent`` with the before and after values in the
same transaction, and has work sent only once that transaction commits
(``engine.dispatch``). The desk, the REST API and the commands call these
and nothing else to change a job or record a verdict.

One reason rule for every action (``reason_checked``): required — blank
text is no reason — and at most ``REASON_MAX_CHARS`` characters. One name
for every action (``AuditAction``): what the activity log stores, filters
and lists.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import models, transaction

from conversations.models import Segment

from . import bindings
from .bindings.handoff import HANDOFF_KIND, handoff_plan
from .bindings.segments import SEGMENTS, segment_job_bind
from .engine.attempts import limit_after_grant
from .engine.dispatch import jobs_enqueue_after_commit
from .handoff.trigger import RollingThresholds, ThresholdError
from .models import (AuditEvent, CompactionJob, DriftFinding, HandoffCheck, JobState, Policy, PromptVersion, Review,
                     ReviewClaim, ScopePolicy, SummaryGeneration, Verdict)
from .models.handoff import TRIGGER_OPERATOR


class AuditAction(models.TextChoices):
    """The actions the activity log records (``AuditEvent.action``)."""

    JOB_RERUN = "job.rerun"
    JOB_GRANT_ATTEMPT = "job.grant_attempt"
    JOB_REPLAN = "job.replan"
    JOB_RERUN_WITH_PROMPT = "job.rerun_with_prompt"
    CONVERSATION_RERUN = "conversation.rerun"
    REVIEW_RECORD = "review.record"
    SCOPE_POLICY_SET = "scope.policy_set"


REASON_MAX_CHARS = 4000
RERUNNABLE = (JobState.FAILED, JobState.EXHAUSTED)


class ActionRefused(Exception):
    """An action that cannot be applied; ``code`` is machine-readable."""

    def __init__(self, code: str, message: str):
        self.code = code
        self.message = message
        super().__init__(message)


def reason_checked(reason, *, what: str = "a reason") -> str:
    """The reason as kept (trimmed); ``ActionRefused`` when there is none or
    it is too long."""
    reason = (reason or "").strip() if isinstance(reason, str) else ""
    if not reason:
        raise ActionRefused("reason_required", f"{what} is required")
    if len(reason) > REASON_MAX_CHARS:
        raise ActionRefused("reason_too_long", f"{what} is at most {REASON_MAX_CHARS} characters")
    return reason


def job_snapshot(job: CompactionJob) -> dict:
    return {
        "state": job.state,
        "attempts_used": job.attempts_used,
        "max_attempts": job.max_attempts,
        "prompt_version": job.prompt_version.name,
        "last_failure_code": job.last_failure_code,
    }


def activity_log(*, actor, action: AuditAction, target_type: str, target_id, **entry) -> AuditEvent:
    """Write one entry of the activity log (the only writer of ``AuditEvent``);
    ``entry`` holds its other fields (reason, scope, conversation, job,
    before, after)."""
    is_user = getattr(actor, "pk", None) is not None
    return AuditEvent.objects.create(
        actor=actor if is_user else None, actor_label=actor.get_username() if is_user else str(actor or "system"),
        action=AuditAction(action), target_type=target_type, target_id=str(target_id), **entry)


def _refuse_if_superseded(job: CompactionJob) -> None:
    others = CompactionJob.objects.filter(kind=job.kind, conversation_id=job.conversation_id,
                                          from_pair=job.from_pair).exclude(pk=job.pk)
    other = job.superseded_by(others)
    if other is not None:
        raise ActionRefused("superseded", f"job {other.pk} ({other.state}) is the job that counts for this range now")


def _grant(job: CompactionJob, *, actor, reason: str, action: AuditAction, always_extra: bool = False) -> CompactionJob:
    """Make a failed or exhausted job pending again, with the attempt limit
    ``engine.attempts.limit_after_grant`` gives it."""
    job = CompactionJob.objects.select_for_update().select_related("prompt_version", "conversation").get(pk=job.pk)
    if job.state not in RERUNNABLE:
        raise ActionRefused(
            "not_rerunnable", f"job {job.pk} is {job.state}; only failed or exhausted jobs can be re-run"
        )
    _refuse_if_superseded(job)
    before = job_snapshot(job)
    job.max_attempts = limit_after_grant(job, always_extra=always_extra)
    job.state = JobState.PENDING
    job.save(update_fields=["max_attempts", "state", "updated_at"])
    activity_log(actor=actor, action=action, target_type="job", target_id=job.pk, reason=reason, scope=job.scope,
                 conversation=job.conversation, job=job, before=before, after=job_snapshot(job))
    return job


def do_job_grant_attempt(*, job: CompactionJob, actor, reason: str) -> CompactionJob:
    """One more attempt for a failed or exhausted job, queued at once."""
    reason = reason_checked(reason)
    with transaction.atomic():
        job = _grant(job, actor=actor, reason=reason, action=AuditAction.JOB_GRANT_ATTEMPT, always_extra=True)
        jobs_enqueue_after_commit([job.pk])
    return job


def do_job_rerun(*, job: CompactionJob, actor, reason: str) -> CompactionJob:
    """Re-run a failed or exhausted job now (with one more attempt if it has
    none left)."""
    reason = reason_checked(reason)
    with transaction.atomic():
        job = _grant(job, actor=actor, reason=reason, action=AuditAction.JOB_RERUN)
        jobs_enqueue_after_commit([job.pk])
    return job


@dataclass
class BulkRerun:
    rerun: list[CompactionJob] = field(default_factory=list)
    replanned: list[tuple[CompactionJob, CompactionJob]] = field(default_factory=list)  # (old, new)
    skipped: list[tuple[int, str]] = field(default_factory=list)  # (job id, why not)


def do_jobs_bulk_rerun(*, jobs, actor, reason: str) -> BulkRerun:
    """Act on many jobs with one reason, each as the operator would one by
    one: a failed or exhausted job runs again (``do_job_rerun``); a job whose
    source changed (stale, or succeeded with ``source_changed_at``) has its
    range bound to the current source (``do_job_replan``). A job neither
    applies to is reported with why, not fatal."""
    reason = reason_checked(reason)
    result = BulkRerun()
    with transaction.atomic():
        for job in jobs:
            try:
                with transaction.atomic():
                    if not job.bound_to_current_source:
                        result.replanned.append((job, do_job_replan(job=job, actor=actor, reason=reason)))
                    else:
                        result.rerun.append(_grant(job, actor=actor, reason=reason, action=AuditAction.JOB_RERUN))
            except ActionRefused as exc:
                result.skipped.append((job.pk, exc.message))
        jobs_enqueue_after_commit([j.pk for j in result.rerun])
    return result


def do_conversation_rerun(*, conversation, actor, reason: str) -> list[CompactionJob]:
    """Re-run every failed or exhausted range of a conversation and plan jobs
    for ranges whose source changed (their old jobs stay as the record).
    Only the job that counts for each range is re-run, and only if this
    deployment can run it: an old prompt version's or another model's job is
    left as the record (planning binds the range anew)."""
    reason = reason_checked(reason)
    with transaction.atomic():
        granted = [
            _grant(job, actor=actor, reason=reason, action=AuditAction.JOB_RERUN)
            for job in CompactionJob.objects.filter(conversation=conversation, state__in=RERUNNABLE)
            .filter(bindings.runnable_here()).not_superseded()
        ]
        planned = bindings.conversation_plan(conversation=conversation)
        jobs = granted + planned
        activity_log(actor=actor, action=AuditAction.CONVERSATION_RERUN, target_type="conversation",
                     target_id=conversation.pk, reason=reason, scope=conversation.scope, conversation=conversation,
                     before=None, after={"granted": [j.pk for j in granted], "planned": [j.pk for j in planned]})
        jobs_enqueue_after_commit([j.pk for j in jobs])
    return jobs


def do_job_rerun_with_prompt(*, job: CompactionJob, prompt_version: PromptVersion, actor,
                             reason: str) -> CompactionJob:
    """A new job for the same range under a newer prompt version; the old job
    and its generation stay untouched."""
    reason = reason_checked(reason)
    if prompt_version.family != job.prompt_version.family or prompt_version.version <= job.prompt_version.version:
        raise ActionRefused(
            "not_newer", f"{prompt_version.name} is not newer than {job.prompt_version.name}"
        )
    with transaction.atomic():
        new_job = _bind_range_again(job, prompt_version=prompt_version, model_id=job.model_id,
                                    exists=f"already covers this range under {prompt_version.name}")
        activity_log(actor=actor, action=AuditAction.JOB_RERUN_WITH_PROMPT, target_type="job", target_id=new_job.pk,
                     reason=reason, scope=job.scope, conversation=job.conversation, job=new_job,
                     before={"job": job.pk, "prompt_version": job.prompt_version.name},
                     after={"job": new_job.pk, "prompt_version": prompt_version.name})
        jobs_enqueue_after_commit([new_job.pk])
    return new_job


def do_job_replan(*, job: CompactionJob, actor, reason: str) -> CompactionJob:
    """A new job for a range whose source changed since ``job`` was bound
    (``job`` is stale, or succeeded with ``source_changed_at``), bound to the
    range's current source under the current prompt version and model, as
    planning would. Only this range: the conversation's other ranges are
    left alone. The old job and any generation stay as the record."""
    reason = reason_checked(reason)
    if job.bound_to_current_source:
        raise ActionRefused("source_unchanged", f"job {job.pk}'s source has not changed; re-run it instead")
    if job.kind == HANDOFF_KIND:
        return _replan_chain(job, actor=actor, reason=reason)
    _refuse_if_superseded(job)
    with transaction.atomic():
        new_job = _bind_range_again(job, prompt_version=SEGMENTS.prompt_version(), model_id=SEGMENTS.model_id(),
                                    exists="already covers this range with its current source")
        activity_log(actor=actor, action=AuditAction.JOB_REPLAN, target_type="job", target_id=new_job.pk,
                     reason=reason, scope=job.scope, conversation=job.conversation, job=new_job,
                     before={"job": job.pk, "source_digest": job.source_digest},
                     after={"job": new_job.pk, "source_digest": new_job.source_digest})
        jobs_enqueue_after_commit([new_job.pk])
    return new_job


def _replan_chain(job: CompactionJob, *, actor, reason: str) -> CompactionJob:
    """A stale hand-off job (SPEC §7): its chain is planned again from its
    last valid ancestor, as the ingest that broke it asked for already; the
    operator's re-plan only does it now (a planning pass of its own)."""
    with transaction.atomic():
        planned = handoff_plan(conversation=job.conversation, trigger=TRIGGER_OPERATOR)
        if not planned:
            raise ActionRefused("exists", f"the chain of conversation {job.conversation_id} needs no new job now "
                                          "(one is open, or the trigger does not fire)")
        new_job = planned[0]
        activity_log(actor=actor, action=AuditAction.JOB_REPLAN, target_type="job", target_id=new_job.pk,
                     reason=reason, scope=job.scope, conversation=job.conversation, job=new_job,
                     before={"job": job.pk, "source_digest": job.source_digest,
                             "parent_generation": job.parent_generation_id},
                     after={"job": new_job.pk, "source_digest": new_job.source_digest,
                            "parent_generation": new_job.parent_generation_id})
        jobs_enqueue_after_commit([new_job.pk])
    return new_job


def _bind_range_again(job: CompactionJob, *, prompt_version: PromptVersion, model_id: str,
                      exists: str) -> CompactionJob:
    """A new pending job for ``job``'s range, bound to its current segment."""
    segment = Segment.objects.filter(conversation_id=job.conversation_id, from_pair=job.from_pair).first()
    if segment is None:
        raise ActionRefused("not_planned", f"range {job.from_pair}-{job.to_pair} is no longer planned")
    new_job, created = segment_job_bind(segment=segment, scope=job.scope, prompt_version=prompt_version,
                                        model_id=model_id)
    if not created:
        raise ActionRefused("exists", f"job {new_job.pk} {exists}")
    return new_job


NOTE = "a note (the reason for the verdict)"


INVALID_CITATION = "invalid_citation"  # a verdict cited a finding that is not its note's


def note_checked(note) -> str:
    """The one rule for a verdict's note, for the desk, the API and
    ``do_review_record``: a reason (``reason_checked``: required, trimmed,
    at most ``REASON_MAX_CHARS`` characters)."""
    return reason_checked(note, what=NOTE)


def do_review_record(*, job: CompactionJob, reviewer, verdict: str, note: str, cited_findings=()) -> Review:
    """A verdict on a job's summary — bound to that generation, the summary
    it judged (SPEC §11) — with its note (required, ``note_checked``). The
    newest verdict that stands (``models.reviews``) is the summary's
    current one. Refused: ``no_summary`` when the job has no generation
    (nothing to judge), ``superseded`` when another job's summary counts for
    the range now (a verdict there would not stand), ``invalid_citation``
    when ``cited_findings`` (ids of drift findings the verdict cites, SPEC
    §8) holds one that is not the judged note's."""
    if verdict not in Verdict.values:
        raise ActionRefused("invalid_verdict", f"verdict must be one of {Verdict.values}")
    note = note_checked(note)
    cited = sorted(set(cited_findings))
    with transaction.atomic():
        job = CompactionJob.objects.select_for_update().select_related("conversation").get(pk=job.pk)
        generation = SummaryGeneration.objects.filter(job_id=job.pk).first()
        if generation is None:
            raise ActionRefused("no_summary", f"job {job.pk} has no summary to judge (it is {job.state})")
        _refuse_if_superseded(job)
        findings = list(DriftFinding.objects.filter(pk__in=cited, generation=generation)) if cited else []
        missing = sorted(set(cited) - {f.pk for f in findings})
        if missing:
            raise ActionRefused(INVALID_CITATION,
                                f"cited_findings: finding {missing[0]} is not a drift finding of this note")
        previous = Review.objects.standing().filter(generation=generation).newest_first().first()
        review = Review.objects.create(job=job, generation=generation, reviewer=reviewer, verdict=verdict, note=note)
        if findings:
            review.cited_findings.add(*findings)
        ReviewClaim.objects.filter(generation=generation, reviewer=reviewer).delete()
        after = {"verdict": verdict, "note": note, "generation": generation.pk,
                 **({"cited_findings": cited} if cited else {})}
        activity_log(actor=reviewer, action=AuditAction.REVIEW_RECORD, target_type="job", target_id=job.pk,
                     reason=note, scope=job.scope, conversation=job.conversation, job=job,
                     before=({"verdict": previous.verdict, "note": previous.note,
                              "generation": previous.generation_id} if previous else None),
                     after=after)
    return review


# --- a scope's policy (SPEC §7) -------------------------------------------------------

def do_scope_policy_set(*, scope: str, actor, reason: str, policy: str | None = None,
                        **thresholds) -> ScopePolicy:
    """Set a scope's policy (``segments`` | ``rolling``) and any of its eight
    thresholds (the rest keep their stored or default values), validated by
    ``RollingThresholds`` (``ActionRefused`` names the field). A change is
    written to the activity log with its before and after; setting what is
    already set writes nothing. The scope's rolling conversations are asked
    the trigger again by the next scan (their last decision was made over
    other thresholds)."""
    reason = reason_checked(reason)
    scope = (scope or "").strip() if isinstance(scope, str) else ""
    if not scope:
        raise ActionRefused("invalid", "scope: a scope is required")
    if policy is not None and policy not in Policy.values:
        raise ActionRefused("invalid", f"policy: must be one of {', '.join(Policy.values)}, got {policy!r}")
    unknown = sorted(set(thresholds) - set(RollingThresholds.field_names()))
    if unknown:
        raise ActionRefused("invalid", f"{unknown[0]}: unknown threshold")
    with transaction.atomic():
        row = ScopePolicy.objects.select_for_update().filter(scope=scope).first()
        before = row.snapshot() if row is not None else None
        row = row or ScopePolicy(scope=scope)
        if policy is not None:
            row.policy = policy
        for name, value in thresholds.items():
            if value is not None:
                setattr(row, name, value)
        try:
            row.thresholds()
        except ThresholdError as exc:
            raise ActionRefused("invalid", str(exc)) from exc
        after = row.snapshot()
        if after == before:
            return row
        row.save()
        HandoffCheck.objects.filter(conversation__scope=scope).delete()
        activity_log(actor=actor, action=AuditAction.SCOPE_POLICY_SET, target_type="scope", target_id=scope,
                     reason=reason, scope=scope, before=before, after=after)
    return row
