"""``/conversations/{id}/assembly/``: the context assembly inspector (SPEC §9,
§11 "an inspector that shows what context assembly keeps and drops for a
stored run"; issue 15 item 7).

For one stored run — the messages the next request after it would carry:
the conversation's system messages, earlier runs and the run itself, tool
calls and results as ingested — the page shows the tool rings and plain
turns with their buckets and tokens; for a token budget the user types, what
assembly keeps, drops, folds into the work summary or summarises, the notes
it writes and its report, or its refusal (broken pairing, over budget).
Read only: it calls the pure library with the offline work-summary builder
(never a model) and writes nothing. Support staff, operators and staff may
use it.
"""

from __future__ import annotations

from django.conf import settings
from django.shortcuts import render
from django.views.decorators.http import require_GET

from ... import roles
from ...context.assembly import AssemblyError, DeterministicLoopSummariser, default_counter, inspect_assembly
from .. import inspector, presenters
from ..forms import AssemblyInspectForm
from .common import role_required
from .conversation import _conversation_or_404

UNLIMITED = 10**9  # no budget given: the buckets, with nothing trimmed


def _default_run(runs):
    with_calls = [r for r in runs if r.tool_calls]
    chosen = (with_calls or runs)[-1] if runs else None
    return chosen.run if chosen else None


@require_GET
@role_required(roles.can_use_desk)
def conversation_assembly(request, conversation_id: int):
    conversation = _conversation_or_404(request, conversation_id)
    runs = inspector.assembly_runs(conversation=conversation)
    form = AssemblyInspectForm(request.GET or None, runs=runs)
    context = {"conversation": conversation, "form": form, "runs": runs, "run": None, "inspection": None,
               "inspection_error": None, "cut": False, "budget": None}
    status = 200
    run = _default_run(runs)
    budget = None
    options = {"summarize": False, "repair": False, "recent_tool_rings": 3}
    if form.is_bound:
        if form.is_valid():
            run = next(r.run for r in runs if r.run.external_id == form.cleaned_data["run"])
            budget = form.cleaned_data["budget"]
            options = {"summarize": form.cleaned_data["summarize"], "repair": form.cleaned_data["repair"],
                       "recent_tool_rings": form.cleaned_data["recent_tool_rings"]
                       if form.cleaned_data["recent_tool_rings"] is not None else 3}
        else:
            status = 400
            run = None
    elif run is not None:
        form = AssemblyInspectForm(initial={"run": run.external_id, "recent_tool_rings": 3}, runs=runs)
        context["form"] = form
    if run is not None:
        messages, rows, cut = inspector.assembly_input(conversation=conversation, run=run,
                                                       limit=settings.CONTEXT_ASSEMBLE_MAX_MESSAGES)
        config = {"model_input_limit": budget or UNLIMITED, "output_reserve_tokens": 0, "safety_margin_tokens": 0,
                  "recent_tool_rings": options["recent_tool_rings"], "summarize": options["summarize"],
                  "on_pairing_error": "synthesize_error_results" if options["repair"] else "fail_closed"}
        count = default_counter()
        try:
            inspection = inspect_assembly(format="openai", messages=messages, config=config, counter=count,
                                          summariser=DeterministicLoopSummariser(count))
        except AssemblyError as error:  # the stored messages are not in a shape a request can take
            context["inspection_error"] = error.message
        else:
            context["inspection"] = presenters.assembly_inspection(inspection, messages, rows)
        context.update(run=run, cut=cut, budget=budget, options=options,
                       limit=settings.CONTEXT_ASSEMBLE_MAX_MESSAGES)
    template = "desk/assembly.html#inspection" if request.htmx and form.is_bound else "desk/assembly.html"
    return render(request, template, context, status=status)
