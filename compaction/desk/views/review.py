"""``/review/``: the review queue — summaries awaiting a verdict in the
user's scopes, oldest first — and the moves through it (issue 16 item 2).

Each item opens the segment page (``/jobs/{id}/?review=1`` plus the
queue's filters) in review mode. Moving on (Save & next, Skip, Previous)
releases the claim on the item left and claims the one given
(``compaction.reviewclaims``), so two reviewers on one queue never get the
same item at once; the page renews its claim while open and releases it
when left.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from ... import reviewclaims, roles
from ...keyset import MAX_ID
from ...models import SummaryGeneration
from .. import selectors
from ..review_queue import review_candidates, review_generation_get, review_left, review_queue_page
from ..forms import ReviewQueueFilterForm
from .common import list_page, read_listing, role_required


def queue_filters(request, data) -> dict:
    """The queue's filters from ``data`` (a query string or a form body);
    an invalid one is dropped (the queue page itself names the field)."""
    form = ReviewQueueFilterForm(data, scopes=selectors.visible_scopes(user=request.user))
    return form.filters()


def review_url(generation: SummaryGeneration, filters: dict) -> str:
    return f"{reverse('desk-job', args=[generation.job_id])}?{urlencode({'review': 1, **filters})}"


def queue_url(filters: dict) -> str:
    return reverse("desk-review") + (f"?{urlencode(filters)}" if filters else "")


@require_GET
@role_required(roles.can_review)
def review_queue(request):
    listing = read_listing(
        request, ReviewQueueFilterForm,
        lambda filters, cursor: review_queue_page(
            user=request.user, filters={k: v for k, v in filters.items() if v}, cursor=cursor))
    form = listing.context["form"]
    filters = form.filters() if form.is_bound else {}
    standing = review_left(user=request.user, filters=filters) if not listing.refused else None
    return list_page(request, "desk/review.html", listing,
                     extra={"standing": standing, "filters": filters, "filter_items": sorted(filters.items())})


def _generation_or_none(request, value) -> SummaryGeneration | None:
    try:
        pk = int(value)
    except (TypeError, ValueError):
        return None
    if not 1 <= pk <= MAX_ID:
        return None
    return review_generation_get(user=request.user, generation_id=pk)


def go_on(request, *, filters: dict, current: SummaryGeneration | None, backwards: bool = False):
    """Claim the next summary in queue order after ``current`` (the one
    before it when ``backwards``) and answer with its page in review mode.
    Forwards, the queue wraps round to the items skipped earlier; when
    nothing is left, the queue page says so."""
    rounds = [current] if backwards else [current, None]
    for after in rounds:
        for candidate in review_candidates(user=request.user, filters=filters, after=after,
                                                     backwards=backwards):
            if current is not None and candidate.pk == current.pk:
                continue
            if reviewclaims.review_claim_take(generation_id=candidate.pk, reviewer=request.user):
                return redirect(review_url(candidate, filters))
        if after is None:
            break
    if backwards and current is not None:
        messages.info(request, "That is the first summary left in this queue.")
        return redirect(review_url(current, filters))
    if review_left(user=request.user, filters=filters).left == 0:
        messages.success(request, "Nothing left to review in this queue.")
    else:
        messages.info(request, "Nothing else is free for you now: other reviewers hold what is left.")
    return redirect(queue_url(filters))


@require_POST
@role_required(roles.can_review)
def review_next(request):
    """Start, skip, or go back: release the item left (its claim token) and
    claim the next (``direction=next``, the default) or previous one."""
    filters = queue_filters(request, request.POST)
    current = _generation_or_none(request, request.POST.get("from"))
    if current is not None:
        reviewclaims.review_claim_release(generation_id=current.pk, reviewer=request.user,
                                          token=request.POST.get("token") or None)
    return go_on(request, filters=filters, current=current, backwards=request.POST.get("direction") == "prev")


@require_POST
@role_required(roles.can_review)
def review_release(request):
    """The page was left (``navigator.sendBeacon`` on ``pagehide``): give its
    claim up. Only that page's own taking of it (its token)."""
    generation = _generation_or_none(request, request.POST.get("generation"))
    token = request.POST.get("token") or ""
    if generation is not None and token:
        reviewclaims.review_claim_release(generation_id=generation.pk, reviewer=request.user, token=token)
    return HttpResponse(status=204)


@require_POST
@role_required(roles.can_review)
def review_renew(request):
    """The open page's heartbeat: keep its claim; the answer is the claim's
    line (the ``#claim`` partial of the segment page)."""
    generation = _generation_or_none(request, request.POST.get("generation"))
    token = request.POST.get("token") or ""
    claim = holder = None
    if generation is not None and token:
        claim = reviewclaims.review_claim_renew(generation_id=generation.pk, reviewer=request.user, token=token)
        if claim is None:
            # Released behind this page's back (a reload's beacon): take it
            # again if nobody else did meanwhile.
            claim = reviewclaims.review_claim_take(generation_id=generation.pk, reviewer=request.user)
        if claim is None:
            holder = reviewclaims.review_claim_holder(generation_id=generation.pk)
    return render(request, "desk/job.html#claim", {"review_mode": True, "claim": claim, "claim_holder": holder,
                                                   "generation": generation})
