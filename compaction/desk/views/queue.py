"""``/queue/``: every failed, exhausted and stale range and every summary whose
source changed, and re-running many at once (SPEC §1); after a bulk re-run the
rows it acted on stay on the page with their live state until they settle
(issue 16 §4)."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from ... import actions, roles
from .. import selectors
from ..forms import BulkRerunForm, QueueFilterForm, kept_job_ids
from ..queue import jobs_for_action, queue_kept, queue_list
from .common import PAGE_SIZE, Listing, list_page, read_listing, role_required


def _queue_listing(request) -> Listing:
    return read_listing(request, QueueFilterForm, lambda f, cursor: queue_list(
        user=request.user, state=f.get("state", ""), failure_code=f.get("failure_code", ""),
        scope=f.get("scope", ""), prompt_version=f.get("prompt_version", ""), older_than=f.get("older_than", ""),
        drift=f.get("drift", ""), cursor=cursor, page_size=PAGE_SIZE,
    ))


def _queue_actions(request, bulk_form=None) -> dict:
    return {"can_operate": roles.can_operate(request.user), "bulk_form": bulk_form or BulkRerunForm()}


def _kept(request, job_ids: list[int]) -> dict:
    """The rows a bulk re-run acted on, kept on the page with their live
    state; the region polls itself (``?region=kept``) until every one has
    settled."""
    kept = queue_kept(user=request.user, job_ids=job_ids)
    unsettled = sum(1 for job in kept if not selectors.job_is_settled(job))
    ids = ",".join(str(job.pk) for job in kept)
    return {"kept": kept, "kept_unsettled": unsettled, "kept_ids": ids,
            "kept_poll_url": f"{reverse('desk-queue')}?kept={ids}&region=kept" if unsettled else ""}


@require_GET
@role_required(roles.can_use_desk)
def queue(request):
    try:
        kept_ids = kept_job_ids(request.GET.get("kept"))
    except ValidationError as exc:
        return HttpResponse(" ".join(exc.messages), status=400, content_type="text/plain")
    if request.htmx and request.GET.get("region") == "kept":
        context = {**_kept(request, kept_ids), "can_operate": roles.can_operate(request.user)}
        return render(request, "desk/queue.html#kept", context)
    listing = _queue_listing(request)
    kept = _kept(request, kept_ids)
    if kept["kept"]:
        # A kept job that is back in the queue (failed again) shows once, with the kept rows.
        shown = {job.pk for job in kept["kept"]}
        listing.context["rows"] = [job for job in listing.context["rows"] if job.pk not in shown]
    # Unlike the other lists, the queue has always answered a bad cursor with
    # its own (empty) page rather than plain text; kept so nothing changes.
    return list_page(request, "desk/queue.html", listing, extra={**_queue_actions(request), **kept},
                     bad_cursor_as_page=True)


@require_POST
@role_required(roles.can_operate)
def queue_rerun(request):
    form = BulkRerunForm(request.POST)
    if not form.is_valid():
        context = {**_queue_listing(request).context, **_queue_actions(request, bulk_form=form)}
        return render(request, "desk/queue.html", context, status=400)
    jobs = jobs_for_action(user=request.user, job_ids=form.cleaned_data["jobs"])
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
    # Back to the same filtered list (re-encoded so only a query string
    # survives), keeping the rows just acted on (``?kept=``: a re-run job, or
    # the new job of a range bound to its current source) with their live
    # state, instead of letting them vanish from the filtered list.
    query = QueryDict(request.POST.get("next_query", ""), mutable=True)
    for name in ("kept", "region"):
        query.pop(name, None)
    acted = sorted({job.pk for job in result.rerun} | {new.pk for _, new in result.replanned})
    if acted:
        query["kept"] = ",".join(str(pk) for pk in acted)
    query = query.urlencode(safe=",")
    return redirect(reverse("desk-queue") + (f"?{query}" if query else ""))
