"""The review and operations desk (SPEC §1, §8; issue 5).

Thin views: parse input with a form, call one selector or one action from
``actions.py``, render. Every view checks the role on the server
(``roles.py``) and reads only through scope-limited selectors, so another
scope's rows answer 404. When ``request.htmx`` the view renders the named
partial of the same page template; otherwise the whole page (every page
reads without JavaScript; actions redirect after POST).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import wraps

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from conversations.selectors import conversation_get

from . import actions, roles, selectors
from .context import projection
from .context.budget import DEFAULT_BUDGET_BYTES, ProjectionInvalid
from .forms import (
    ActivityFilterForm,
    BulkRerunForm,
    ConversationFilterForm,
    QueueFilterForm,
    ReasonForm,
    VerdictForm,
)
from .keyset import InvalidCursor
from .models import CompactionJob

PAGE_SIZE = 50


def role_required(check):
    """Anonymous users go to the login page; signed-in users without the
    role get 403 and nothing happens."""

    def decorator(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not check(request.user):
                raise PermissionDenied("your role does not allow this")
            return view(request, *args, **kwargs)

        return wrapper

    return decorator


def _query_without(request, *names) -> str:
    params = request.GET.copy()
    for name in names:
        params.pop(name, None)
    return params.urlencode()


# --- list pages ---------------------------------------------------------------------
# The conversations, failed-ranges and activity pages read the same way: filters
# from the query string, one keyset page after ``?cursor=``, a pager that keeps the
# filters. A view only says which form, which selector and which template.

BAD_CURSOR_TEXT = "The page cursor is not valid."


@dataclass
class _Listing:
    context: dict
    refused: str = ""  # "filters" or "cursor" when the query string was refused


def _listing(request, form_class, fetch) -> _Listing:
    """Bind ``form_class`` to the query string (its scope menu limited to the
    user's scopes) and read the page with ``fetch(filters, cursor)``, where
    ``filters`` is the cleaned data, empty when nothing was asked."""
    form = form_class(request.GET or None, scopes=selectors.visible_scopes(user=request.user))
    context = {"form": form, "rows": [], "next_url": None}
    if form.is_bound and not form.is_valid():
        return _Listing(context, refused="filters")
    cursor = request.GET.get("cursor") or None
    try:
        page = fetch(form.cleaned_data if form.is_bound else {}, cursor)
    except InvalidCursor:
        return _Listing(context, refused="cursor")
    base = _query_without(request, "cursor")
    context.update(
        rows=page.rows,
        first_url=f"?{base}" if base else "?",
        next_url=(f"?{base}&cursor={page.next_cursor}" if base else f"?cursor={page.next_cursor}")
        if page.next_cursor else None,
        paged=bool(cursor),
    )
    return _Listing(context)


def _list_page(request, template: str, listing: _Listing, *, extra=None, bad_cursor_as_page=False):
    """A refused filter answers 400 with the whole page, so the filter bar can
    name the field; a refused cursor answers 400 in plain text (or with the
    empty page, where the page asks for that). Otherwise the ``#results``
    partial for HTMX and the whole page for everyone else."""
    context = {**listing.context, **(extra or {})}
    if listing.refused == "cursor" and not bad_cursor_as_page:
        return HttpResponse(BAD_CURSOR_TEXT, status=400, content_type="text/plain")
    if listing.refused:
        return render(request, template, context, status=400)
    return render(request, f"{template}#results" if request.htmx else template, context)


# --- conversations --------------------------------------------------------------

@require_GET
@role_required(roles.can_use_desk)
def conversation_list(request):
    listing = _listing(request, ConversationFilterForm, lambda f, cursor: selectors.conversation_list(
        user=request.user, q=f.get("q", ""), scope=f.get("scope", ""), has=f.get("has", ""),
        verdict=f.get("verdict", ""), updated_since=f.get("updated_since"), sort=f.get("sort") or "recent",
        cursor=cursor, page_size=PAGE_SIZE,
    ))
    return _list_page(request, "desk/conversations.html", listing)


@require_GET
@role_required(roles.can_use_desk)
def conversation_detail(request, conversation_id: int):
    conversation = conversation_get(user=request.user, conversation_id=conversation_id)
    if conversation is None:
        raise Http404("no such conversation")
    preview = _projection_preview(request, conversation)
    if request.htmx and "budget" in request.GET:
        return render(request, "desk/conversation.html#preview", {"conversation": conversation, **preview})
    return _conversation_page(request, conversation, preview=preview)


def _projection_preview(request, conversation) -> dict:
    """The projection for the budget in ``?budget=`` (SPEC §6), drawn as how
    each pair is given and why. Only computed when asked for: with htmx the
    page asks by itself once loaded; without JavaScript, by the form."""
    raw = request.GET.get("budget")
    context = {"budget": DEFAULT_BUDGET_BYTES, "preview": None, "preview_error": None}
    if raw is None:
        return context
    try:
        budget = int(raw)
    except ValueError:
        context["preview_error"] = f"budget must be a whole number of bytes, got {raw[:40]!r}"
        return context
    context["budget"] = budget
    try:
        body = projection.conversation_projection(conversation=conversation, budget_bytes=budget)
    except ProjectionInvalid as exc:
        context["preview_error"] = exc.message
        return context
    digest = selectors.projection_digest(body)
    context.update(preview=body, preview_pairs=digest["pairs"], preview_counts=digest["counts"],
                   preview_reasons=digest["reasons"])
    return context


def _conversation_page(request, conversation, *, rerun_form=None, preview=None, status=200):
    detail = selectors.conversation_detail(conversation=conversation)
    context = {
        "conversation": conversation,
        **detail,
        **(preview or {"budget": DEFAULT_BUDGET_BYTES}),
        "legend": [*selectors.STATE_ORDER, "no_job"],
        "can_operate": roles.can_operate(request.user),
        "rerun_form": rerun_form or ReasonForm(prefix="rerun"),
    }
    return render(request, "desk/conversation.html", context, status=status)


@require_POST
@role_required(roles.can_operate)
def conversation_rerun(request, conversation_id: int):
    """Re-run every failed or exhausted range of one conversation and re-plan
    the ranges whose source changed (actions.do_conversation_rerun)."""
    conversation = conversation_get(user=request.user, conversation_id=conversation_id)
    if conversation is None:
        raise Http404("no such conversation")
    form = ReasonForm(request.POST, prefix="rerun")
    if not form.is_valid():
        return _conversation_page(request, conversation, rerun_form=form, status=400)
    try:
        jobs = actions.do_conversation_rerun(conversation=conversation, actor=request.user,
                                             reason=form.cleaned_data["reason"])
    except actions.ActionRefused as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"{len(jobs)} range(s) queued for {conversation.external_id}.")
    return redirect("desk-conversation", conversation_id=conversation.pk)


# --- one job (the segment page) ---------------------------------------------------

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
        "verdict_form": VerdictForm(),
        "rerun_form": ReasonForm(prefix="rerun"),
        "grant_form": ReasonForm(prefix="grant"),
        "replan_form": ReasonForm(prefix="replan"),
        **detail,
        **extra,
    }


@require_GET
@role_required(roles.can_use_desk)
def job_detail(request, job_id: int):
    job = _job_or_404(request, job_id)
    context = _job_context(request, job)
    if request.htmx and request.GET.get("region") == "live":
        return render(request, "desk/job.html#live", context)
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
    job = _job_or_404(request, job_id)
    form = VerdictForm(request.POST)
    if form.is_valid():
        try:
            actions.do_review_record(job=job, reviewer=request.user, verdict=form.cleaned_data["verdict"],
                                     note=form.cleaned_data["note"])
        except actions.ActionRefused as exc:
            form.add_error(None, exc.message)
        else:
            if not request.htmx:
                messages.success(request, "Verdict recorded.")
                return redirect("desk-job", job_id=job.pk)
            context = _job_context(request, job, review_done="Verdict recorded.")
            return render(request, "desk/job.html#review", context)
    context = _job_context(request, job, verdict_form=form)
    if request.htmx:
        return render(request, "desk/job.html#review", context)
    return render(request, "desk/job.html", context, status=400)


# --- failed ranges queue -------------------------------------------------------------

def _queue_listing(request) -> _Listing:
    return _listing(request, QueueFilterForm, lambda f, cursor: selectors.queue_list(
        user=request.user, state=f.get("state", ""), failure_code=f.get("failure_code", ""),
        scope=f.get("scope", ""), prompt_version=f.get("prompt_version", ""), older_than=f.get("older_than", ""),
        cursor=cursor, page_size=PAGE_SIZE,
    ))


def _queue_actions(request, bulk_form=None) -> dict:
    return {"can_operate": roles.can_operate(request.user), "bulk_form": bulk_form or BulkRerunForm()}


@require_GET
@role_required(roles.can_use_desk)
def queue(request):
    # Unlike the other lists, the queue has always answered a bad cursor with
    # its own (empty) page rather than plain text; kept so nothing changes.
    return _list_page(request, "desk/queue.html", _queue_listing(request), extra=_queue_actions(request),
                      bad_cursor_as_page=True)


@require_POST
@role_required(roles.can_operate)
def queue_rerun(request):
    form = BulkRerunForm(request.POST)
    if not form.is_valid():
        context = {**_queue_listing(request).context, **_queue_actions(request, bulk_form=form)}
        return render(request, "desk/queue.html", context, status=400)
    jobs = selectors.jobs_for_action(user=request.user, job_ids=form.cleaned_data["jobs"])
    reason = form.cleaned_data["reason"]
    result = actions.do_jobs_bulk_rerun(jobs=jobs, actor=request.user, reason=reason)
    missing = len(form.cleaned_data["jobs"]) - len(jobs)
    if result.rerun:
        messages.success(request, f"Re-ran {len(result.rerun)} range(s): "
                                  + ", ".join(f"#{j.pk}" for j in result.rerun) + ".")
    if result.replanned:
        messages.success(request, f"Bound {len(result.replanned)} range(s) to their current source: "
                                  + ", ".join(f"#{old.pk} → #{new.pk}" for old, new in result.replanned) + ".")
    for job_id, why in result.skipped:
        messages.warning(request, f"Job #{job_id} was not re-run: {why}")
    if missing:
        messages.warning(request, f"{missing} selected job(s) were not found.")
    # Back to the same filtered list; re-encoded so only a query string survives.
    query = QueryDict(request.POST.get("next_query", "")).urlencode()
    return redirect(reverse("desk-queue") + (f"?{query}" if query else ""))


# --- activity -------------------------------------------------------------------------

@require_GET
@role_required(roles.can_use_desk)
def activity(request):
    listing = _listing(request, ActivityFilterForm, lambda f, cursor: selectors.activity_list(
        user=request.user, action=f.get("action", ""), actor=f.get("actor", ""), scope=f.get("scope", ""),
        conversation=f.get("conversation"), job=f.get("job"), since=f.get("since"), cursor=cursor,
        page_size=PAGE_SIZE,
    ))
    return _list_page(request, "desk/activity.html", listing)
