"""``/conversations/{id}/``: one conversation — its bands, segments, generation
chain (for a rolling scope, its hand-off chain: ``_chain.html``, SPEC §7)
and projection preview — and re-running it (SPEC §1, §6)."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from conversations.selectors import conversation_get

from ... import actions, roles
from ...bindings.handoff import HANDOFF_KIND
from ...context import projection
from ...policies import is_rolling
from ...context.budget import DEFAULT_BUDGET_BYTES, ProjectionInvalid
from ...context.packing import DEFAULT_PREFER, PREFERENCES
from .. import presenters, selectors
from ..chain import rolling_chain
from ..forms import ReasonForm
from .common import role_required


def _conversation_or_404(request, conversation_id: int):
    conversation = conversation_get(user=request.user, conversation_id=conversation_id)
    if conversation is None:
        raise Http404("no such conversation")
    return conversation


@require_GET
@role_required(roles.can_use_desk)
def conversation_detail(request, conversation_id: int):
    conversation = _conversation_or_404(request, conversation_id)
    preview = _projection_preview(request, conversation)
    if request.htmx and "budget" in request.GET:
        return render(request, "desk/conversation.html#preview", {"conversation": conversation, **preview})
    return _conversation_page(request, conversation, preview=preview)


def _projection_preview(request, conversation) -> dict:
    """The projection for the budget in ``?budget=`` and the preference in
    ``?prefer=`` (SPEC §6), drawn as how each pair is given and why — the
    same account the API returns — and, with ``?text=1``, the texts that
    would be sent. Only computed when asked for: with htmx the page asks by
    itself once loaded; without JavaScript, by the form."""
    raw = request.GET.get("budget")
    prefer = request.GET.get("prefer") or DEFAULT_PREFER
    show_text = request.GET.get("text") == "1"
    context = {"budget": DEFAULT_BUDGET_BYTES, "preview": None, "preview_error": None, "prefer": prefer,
               "preferences": PREFERENCES, "show_text": show_text}
    if prefer not in PREFERENCES:
        context["prefer"] = DEFAULT_PREFER
        context["preview_error"] = f"prefer must be one of: {', '.join(PREFERENCES)}"
        return context
    if raw is None:
        return context
    try:
        budget = int(raw)
    except ValueError:
        context["preview_error"] = f"budget must be a whole number of bytes, got {raw[:40]!r}"
        return context
    context["budget"] = budget
    try:
        body = projection.conversation_projection(conversation=conversation, budget_bytes=budget, prefer=prefer)
    except ProjectionInvalid as exc:
        context["preview_error"] = exc.message
        return context
    digest = presenters.projection_digest(body)
    context.update(preview=body, preview_pairs=digest["pairs"], preview_counts=digest["counts"],
                   preview_reasons=digest["reasons"])
    return context


def _conversation_page(request, conversation, *, rerun_form=None, preview=None, status=200):
    detail = selectors.conversation_detail(conversation=conversation)
    rolling = is_rolling(conversation.scope)
    chain = {}
    if rolling or any(g.kind == HANDOFF_KIND for g in detail["generations"]) or detail["has_handoff_jobs"]:
        # A rolling conversation's generation chain (SPEC §7): its own partial.
        chain = rolling_chain(conversation=conversation)
        chain["chain_chart"] = presenters.note_length_chart(chain["chain"])
    context = {
        "conversation": conversation,
        **detail,
        **chain,
        "rolling": rolling,
        "show_chain": bool(chain),
        "chart": presenters.generation_chart([g for g in detail["generations"] if g.kind != HANDOFF_KIND]),
        **(preview or {"budget": DEFAULT_BUDGET_BYTES, "prefer": DEFAULT_PREFER, "preferences": PREFERENCES}),
        "legend": [*presenters.STATE_ORDER, "no_job"],
        "can_operate": roles.can_operate(request.user),
        "rerun_form": rerun_form or ReasonForm(prefix="rerun"),
    }
    return render(request, "desk/conversation.html", context, status=status)


@require_POST
@role_required(roles.can_operate)
def conversation_rerun(request, conversation_id: int):
    """Re-run every failed or exhausted range of one conversation and re-plan
    the ranges whose source changed (actions.do_conversation_rerun)."""
    conversation = _conversation_or_404(request, conversation_id)
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
