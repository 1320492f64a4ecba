"""Operator and reviewer actions (SPEC §1, §5; Zulip's ``do_*`` shape).

Each action takes the acting user and (for operators) a required reason,
writes one ``AuditEvent`` with before/after values in the same transaction,
and enqueues work only after that transaction commits. Pages and the REST
API call these and nothing else to change a job.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction

from .models import AuditEvent, CompactionJob, JobState, PromptVersion, Review, Verdict
from .services import conversation_plan, segment_job_bind

RERUNNABLE = (JobState.FAILED, JobState.EXHAUSTED)


class ActionRefused(Exception):
    """An action that cannot be applied; ``code`` is machine-readable."""

    def __init__(self, code: str, message: str):
        self.code = code
        self.message = message
        super().__init__(message)


def _require_reason(reason: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise ActionRefused("reason_required", "a reason is required")
    return reason


def job_snapshot(job: CompactionJob) -> dict:
    return {
        "state": job.state,
        "attempts_used": job.attempts_used,
        "max_attempts": job.max_attempts,
        "prompt_version": job.prompt_version.name,
        "last_failure_code": job.last_failure_code,
    }


def audit_record(*, actor, action: str, target_type: str, target_id, reason: str = "", scope: str = "",
                 conversation=None, job=None, before=None, after=None) -> AuditEvent:
    is_user = getattr(actor, "pk", None) is not None
    return AuditEvent.objects.create(
        actor=actor if is_user else None,
        actor_label=actor.get_username() if is_user else str(actor or "system"),
        action=action,
        target_type=target_type,
        target_id=str(target_id),
        scope=scope,
        conversation=conversation,
        job=job,
        before=before,
        after=after,
        reason=reason,
    )


def enqueue_after_commit(job_ids: list[int]) -> None:
    if not job_ids:
        return

    def send():
        from .services import jobs_enqueue

        jobs_enqueue(job_ids)

    transaction.on_commit(send, robust=True)


def _refuse_if_superseded(job: CompactionJob) -> None:
    others = CompactionJob.objects.filter(conversation_id=job.conversation_id, from_pair=job.from_pair).exclude(
        pk=job.pk)
    other = job.superseded_by(others)
    if other is not None:
        raise ActionRefused("superseded", f"job {other.pk} ({other.state}) is the job that counts for this range now")


def _grant(job: CompactionJob, *, actor, reason: str, action: str, always_extra: bool = False) -> CompactionJob:
    """Make a failed or exhausted job pending again. A job with an attempt
    left (failed, 1 of 2 used) simply runs it now; one without gets one
    more (SPEC §5: at most 2 until an operator grants another). With
    ``always_extra`` the limit is raised by one either way."""
    job = CompactionJob.objects.select_for_update().select_related("prompt_version", "conversation").get(pk=job.pk)
    if job.state not in RERUNNABLE:
        raise ActionRefused(
            "not_rerunnable", f"job {job.pk} is {job.state}; only failed or exhausted jobs can be re-run"
        )
    _refuse_if_superseded(job)
    before = job_snapshot(job)
    if always_extra or job.attempts_used >= job.max_attempts:
        job.max_attempts = max(job.max_attempts, job.attempts_used) + 1
    job.state = JobState.PENDING
    job.save(update_fields=["max_attempts", "state", "updated_at"])
    audit_record(actor=actor, action=action, target_type="job", target_id=job.pk, reason=reason,
                 scope=job.scope, conversation=job.conversation, job=job, before=before, after=job_snapshot(job))
    return job


def job_grant_attempt(*, job: CompactionJob, actor, reason: str) -> CompactionJob:
    """One more attempt for a failed or exhausted job, queued at once."""
    reason = _require_reason(reason)
    with transaction.atomic():
        job = _grant(job, actor=actor, reason=reason, action="job.grant_attempt", always_extra=True)
        enqueue_after_commit([job.pk])
    return job


def job_rerun(*, job: CompactionJob, actor, reason: str) -> CompactionJob:
    """Re-run a failed or exhausted job now (with one more attempt if it has
    none left)."""
    reason = _require_reason(reason)
    with transaction.atomic():
        job = _grant(job, actor=actor, reason=reason, action="job.rerun")
        enqueue_after_commit([job.pk])
    return job


@dataclass
class BulkRerun:
    rerun: list[CompactionJob] = field(default_factory=list)
    replanned: list[tuple[CompactionJob, CompactionJob]] = field(default_factory=list)  # (old, new)
    skipped: list[tuple[int, str]] = field(default_factory=list)  # (job id, why not)


def jobs_bulk_rerun(*, jobs, actor, reason: str) -> BulkRerun:
    """Act on many jobs with one reason, each as the operator would one by
    one: a failed or exhausted job runs again (``job_rerun``); a job whose
    source changed (stale, or succeeded with ``source_changed_at``) has its
    range bound to the current source (``job_replan``). A job neither
    applies to is reported with why, not fatal."""
    reason = _require_reason(reason)
    result = BulkRerun()
    with transaction.atomic():
        for job in jobs:
            try:
                with transaction.atomic():
                    if not job.bound_to_current_source:
                        result.replanned.append((job, job_replan(job=job, actor=actor, reason=reason)))
                    else:
                        result.rerun.append(_grant(job, actor=actor, reason=reason, action="job.rerun"))
            except ActionRefused as exc:
                result.skipped.append((job.pk, exc.message))
        enqueue_after_commit([j.pk for j in result.rerun])
    return result


def conversation_rerun(*, conversation, actor, reason: str) -> list[CompactionJob]:
    """Re-run every failed or exhausted range of a conversation and plan jobs
    for ranges whose source changed (their old jobs stay as the record).
    Only the job that counts for each range is re-run, and only if this
    deployment's model can run it: an old prompt version's or another
    model's job is left as the record (planning binds the range anew)."""
    from .providers import configured_model_id

    reason = _require_reason(reason)
    with transaction.atomic():
        granted = [
            _grant(job, actor=actor, reason=reason, action="job.rerun")
            for job in CompactionJob.objects.filter(
                conversation=conversation, state__in=RERUNNABLE, model_id=configured_model_id()
            ).not_superseded()
        ]
        planned = conversation_plan(conversation=conversation)
        jobs = granted + planned
        audit_record(actor=actor, action="conversation.rerun", target_type="conversation",
                     target_id=conversation.pk, reason=reason, scope=conversation.scope, conversation=conversation,
                     before=None, after={"granted": [j.pk for j in granted], "planned": [j.pk for j in planned]})
        enqueue_after_commit([j.pk for j in jobs])
    return jobs


def job_rerun_with_prompt(*, job: CompactionJob, prompt_version: PromptVersion, actor, reason: str) -> CompactionJob:
    """A new job for the same range under a newer prompt version; the old job
    and its generation stay untouched."""
    reason = _require_reason(reason)
    if prompt_version.family != job.prompt_version.family or prompt_version.version <= job.prompt_version.version:
        raise ActionRefused(
            "not_newer", f"{prompt_version.name} is not newer than {job.prompt_version.name}"
        )
    with transaction.atomic():
        new_job = _bind_range_again(job, prompt_version=prompt_version, model_id=job.model_id,
                                    exists=f"already covers this range under {prompt_version.name}")
        audit_record(actor=actor, action="job.rerun_with_prompt", target_type="job", target_id=new_job.pk,
                     reason=reason, scope=job.scope, conversation=job.conversation, job=new_job,
                     before={"job": job.pk, "prompt_version": job.prompt_version.name},
                     after={"job": new_job.pk, "prompt_version": prompt_version.name})
        enqueue_after_commit([new_job.pk])
    return new_job


def job_replan(*, job: CompactionJob, actor, reason: str) -> CompactionJob:
    """A new job for a range whose source changed since ``job`` was bound
    (``job`` is stale, or succeeded with ``source_changed_at``), bound to the
    range's current source under the current prompt version and model, as
    planning would. Only this range: the conversation's other ranges are
    left alone. The old job and any generation stay as the record."""
    from .providers import configured_model_id
    from .services import prompt_version_current

    reason = _require_reason(reason)
    if job.bound_to_current_source:
        raise ActionRefused("source_unchanged", f"job {job.pk}'s source has not changed; re-run it instead")
    _refuse_if_superseded(job)
    with transaction.atomic():
        new_job = _bind_range_again(job, prompt_version=prompt_version_current(), model_id=configured_model_id(),
                                    exists="already covers this range with its current source")
        audit_record(actor=actor, action="job.replan", target_type="job", target_id=new_job.pk, reason=reason,
                     scope=job.scope, conversation=job.conversation, job=new_job,
                     before={"job": job.pk, "source_digest": job.source_digest},
                     after={"job": new_job.pk, "source_digest": new_job.source_digest})
        enqueue_after_commit([new_job.pk])
    return new_job


def _bind_range_again(job: CompactionJob, *, prompt_version: PromptVersion, model_id: str,
                      exists: str) -> CompactionJob:
    """A new pending job for ``job``'s range, bound to its current segment."""
    from conversations.models import Segment

    segment = Segment.objects.filter(conversation_id=job.conversation_id, from_pair=job.from_pair).first()
    if segment is None:
        raise ActionRefused("not_planned", f"range {job.from_pair}-{job.to_pair} is no longer planned")
    new_job, created = segment_job_bind(segment=segment, scope=job.scope, prompt_version=prompt_version,
                                        model_id=model_id)
    if not created:
        raise ActionRefused("exists", f"job {new_job.pk} {exists}")
    return new_job


def review_record(*, job: CompactionJob, reviewer, verdict: str, note: str = "") -> Review:
    """A support verdict on a job's summary; the newest one is current."""
    if verdict not in Verdict.values:
        raise ActionRefused("invalid_verdict", f"verdict must be one of {Verdict.values}")
    with transaction.atomic():
        generation = getattr(job, "generation", None) if job.state == JobState.SUCCEEDED else None
        previous = Review.objects.filter(job=job).order_by("-created_at", "-id").first()
        review = Review.objects.create(job=job, generation=generation, reviewer=reviewer, verdict=verdict,
                                       note=note or "")
        audit_record(actor=reviewer, action="review.record", target_type="job", target_id=job.pk, reason=note or "",
                     scope=job.scope, conversation=job.conversation, job=job,
                     before={"verdict": previous.verdict, "note": previous.note} if previous else None,
                     after={"verdict": verdict, "note": note or ""})
    return review
