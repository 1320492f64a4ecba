"""``/jobs/{id}/``: the segment page, and the actions on one job — re-run,
grant an attempt, re-plan, a verdict (SPEC §1, §5)."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from ... import actions, reviewclaims, roles
from ...models import CompactionJob
from .. import selectors
from ..review_queue import review_left
from ..forms import ReasonForm, VerdictForm
from ..segment import retry_note
from .common import role_required
from .review import go_on, queue_filters, queue_url


def _job_or_404(request, job_id: int) -> CompactionJob:
    job = selectors.job_get(user=request.user, job_id=job_id)
    if job is None:
        raise Http404("no such job")
    return job


def _job_context(request, job, **extra):
    detail = selectors.job_detail(job=job)
    return {
        "job": job,
        "conversation": job.conversation,
        "settled": selectors.job_is_settled(job),
        "can_operate": roles.can_operate(request.user),
        "can_review": roles.can_review(request.user),
        "rerunnable": job.state in actions.RERUNNABLE,
        "replannable": not job.bound_to_current_source,
        "verdict_form": VerdictForm(findings=detail["drift_findings"]),
        "rerun_form": ReasonForm(prefix="rerun"),
        "grant_form": ReasonForm(prefix="grant"),
        "replan_form": ReasonForm(prefix="replan"),
        "note_max": actions.REASON_MAX_CHARS,
        "retry_note": retry_note(
            state=job.state, attempts_used=job.attempts_used, max_attempts=job.max_attempts,
            updated_at=job.updated_at, retry_delay_seconds=settings.COMPACTION_RETRY_DELAY_SECONDS,
            scan_interval_seconds=settings.COMPACTION_SCAN_INTERVAL_SECONDS, now=timezone.now()),
        **detail,
        # The badge: a job its range replaced reads "superseded", a summary
        # whose source changed "source changed" (issue 16 §5).
        "display_state": job.display_state(superseded=detail["superseded_by"] is not None),
        **extra,
    }


def _review_mode(request, data, generation, *, take: bool) -> dict:
    """Review mode's part of the page (``?review=1``): the queue's filters,
    this reviewer's claim on the summary (taken when ``take``), who else
    holds it, and "x of N left"."""
    if data.get("review") != "1" or generation is None or not roles.can_review(request.user):
        return {}
    filters = queue_filters(request, data)
    claim = holder = None
    if take:
        claim = reviewclaims.review_claim_take(generation_id=generation.pk, reviewer=request.user)
    else:
        token = data.get("token") or ""
        claim = reviewclaims.review_claim_renew(generation_id=generation.pk, reviewer=request.user,
                                                token=token) if token else None
    if claim is None:
        holder = reviewclaims.review_claim_holder(generation_id=generation.pk)
    return {
        "review_mode": True,
        "review_filters": sorted(filters.items()),
        "queue_url": queue_url(filters),
        "claim": claim,
        "claim_holder": holder if holder is not None and holder.reviewer_id != request.user.pk else None,
        "standing": review_left(user=request.user, filters=filters, current=generation),
    }


@require_GET
@role_required(roles.can_use_desk)
def job_detail(request, job_id: int):
    job = _job_or_404(request, job_id)
    context = _job_context(request, job)
    if request.htmx and request.GET.get("region") == "live":
        return render(request, "desk/job.html#live", context)
    context.update(_review_mode(request, request.GET, context["generation"], take=True))
    return render(request, "desk/job.html", context)


def _job_action(request, job_id: int, *, prefix: str, action):
    job = _job_or_404(request, job_id)
    form = ReasonForm(request.POST, prefix=prefix)
    if not form.is_valid():
        context = _job_context(request, job, **{f"{prefix}_form": form})
        if request.htmx:
            return render(request, "desk/job.html#live", context)
        return render(request, "desk/job.html", context, status=400)
    try:
        job = action(job=job, actor=request.user, reason=form.cleaned_data["reason"])
    except actions.ActionRefused as exc:
        if request.htmx:
            return render(request, "desk/job.html#live", _job_context(request, job, action_error=exc.message))
        messages.error(request, exc.message)
        return redirect("desk-job", job_id=job.pk)
    note = f"Job #{job.pk} queued again (attempt {job.attempts_used + 1} of {job.max_attempts})."
    if not request.htmx:
        messages.success(request, note)
        return redirect("desk-job", job_id=job.pk)
    # Re-read: with an eager queue the job may already have run.
    job = _job_or_404(request, job.pk)
    return render(request, "desk/job.html#live", _job_context(request, job, action_done=note))


@require_POST
@role_required(roles.can_operate)
def job_rerun(request, job_id: int):
    return _job_action(request, job_id, prefix="rerun", action=actions.do_job_rerun)


@require_POST
@role_required(roles.can_operate)
def job_grant_attempt(request, job_id: int):
    return _job_action(request, job_id, prefix="grant", action=actions.do_job_grant_attempt)


@require_POST
@role_required(roles.can_operate)
def job_replan(request, job_id: int):
    """A new job for this range bound to its current source; the answer is
    that job's page (a plain form: the page moves to another job)."""
    job = _job_or_404(request, job_id)
    form = ReasonForm(request.POST, prefix="replan")
    if not form.is_valid():
        return render(request, "desk/job.html", _job_context(request, job, replan_form=form), status=400)
    try:
        new = actions.do_job_replan(job=job, actor=request.user, reason=form.cleaned_data["reason"])
    except actions.ActionRefused as exc:
        messages.error(request, exc.message)
        return redirect("desk-job", job_id=job.pk)
    messages.success(request, f"Pairs {new.from_pair}–{new.to_pair} bound to their current source as job #{new.pk} "
                              f"(job #{job.pk} stays as the record).")
    return redirect("desk-job", job_id=new.pk)


@require_POST
@role_required(roles.can_review)
def job_review(request, job_id: int):
    """Record a verdict. In review mode (``review=1`` in the form) the answer
    is the next summary of the queue (Save & next)."""
    job = _job_or_404(request, job_id)
    form = VerdictForm(request.POST, findings=selectors.job_drift_findings(job=job))
    in_review = request.POST.get("review") == "1"
    if form.is_valid():
        try:
            review = actions.do_review_record(job=job, reviewer=request.user, verdict=form.cleaned_data["verdict"],
                                              note=form.cleaned_data["note"], cited_findings=form.cleaned_data["cite"])
        except actions.ActionRefused as exc:
            form.add_error(None, exc.message)
        else:
            if in_review:
                messages.success(request, f"Verdict recorded on job #{job.pk}.")
                return go_on(request, filters=queue_filters(request, request.POST), current=review.generation)
            if not request.htmx:
                messages.success(request, "Verdict recorded.")
                return redirect("desk-job", job_id=job.pk)
            context = _job_context(request, job, review_done="Verdict recorded.")
            return render(request, "desk/job.html#review", context)
    context = _job_context(request, job, verdict_form=form)
    if request.htmx and not in_review:
        return render(request, "desk/job.html#review", context)
    context.update(_review_mode(request, request.POST, context["generation"], take=False))
    return render(request, "desk/job.html", context, status=400)
