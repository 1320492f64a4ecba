"""Desk forms: filters for the lists and the inputs of the actions (issue 5).

Filters validate query strings (a bad value is reported, never guessed);
action forms carry the reason an operator must give and the explicit
confirmation that works without JavaScript.
"""

from __future__ import annotations

from django import forms

from ..actions import REASON_MAX_CHARS, ActionRefused, AuditAction, note_checked, reason_checked
from ..models import FailureCode, JobState, PromptVersion, Verdict
from ..drift.words import code_choices
from .queue import AGE_CHOICES, QUEUE_STATES
from .selectors import CONVERSATION_SORTS, DRIFT_FOUND, OUTDATED_SUMMARY

HAS_CHOICES = [("", "any"), (JobState.FAILED, "failed"), (JobState.EXHAUSTED, "exhausted"),
               (JobState.STALE, "stale"), (OUTDATED_SUMMARY, "source changed"), (JobState.PENDING, "pending"),
               (JobState.RUNNING, "running")]
# "Drift found" (any finding of a hand-off note), or one finding code in words (SPEC §8).
DRIFT_CHOICES = [("", "any"), (DRIFT_FOUND, "drift found (any finding)"), *code_choices()]
SORT_LABELS = {"recent": "recently updated", "oldest": "least recently updated", "external_id": "external id",
               "pairs": "most pairs"}


class ConversationFilterForm(forms.Form):
    q = forms.CharField(required=False, max_length=200, label="Search",
                        widget=forms.TextInput(attrs={"placeholder": "exact external id, or words of the title", "type": "search"}))
    scope = forms.ChoiceField(required=False)
    has = forms.ChoiceField(required=False, choices=HAS_CHOICES, label="Has ranges")
    verdict = forms.ChoiceField(required=False, choices=[("", "any")] + list(Verdict.choices), label="Verdict")
    drift = forms.ChoiceField(required=False, choices=DRIFT_CHOICES, label="Drift")
    updated_since = forms.DateField(required=False, label="Updated since (UTC)",
                                    widget=forms.DateInput(attrs={"type": "date"}))
    sort = forms.ChoiceField(required=False, choices=[(k, SORT_LABELS[k]) for k in CONVERSATION_SORTS])

    def __init__(self, *args, scopes: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["scope"].choices = [("", "all scopes")] + [(s, s) for s in scopes]


class QueueFilterForm(forms.Form):
    state = forms.ChoiceField(required=False, choices=[("", "all of these")] + [(s, s) for s in QUEUE_STATES]
                              + [(OUTDATED_SUMMARY, "succeeded, source changed since")])
    failure_code = forms.ChoiceField(required=False, choices=[("", "any")] + list(FailureCode.choices),
                                     label="Failure code")
    scope = forms.ChoiceField(required=False)
    prompt_version = forms.ChoiceField(required=False, label="Prompt version")
    older_than = forms.ChoiceField(required=False, label="Age",
                                   choices=[("", "any age")] + [(k, f"older than {k}") for k in AGE_CHOICES])
    drift = forms.ChoiceField(required=False, choices=DRIFT_CHOICES, label="Drift",
                              help_text="hand-off notes whose drift checks found this, whatever the job's state "
                                        "unless a state is chosen")

    def __init__(self, *args, scopes: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["scope"].choices = [("", "all scopes")] + [(s, s) for s in scopes]
        self.fields["prompt_version"].choices = [("", "any")] + [
            (n, n) for n in PromptVersion.objects.order_by("family", "version").values_list("name", flat=True)
        ]


class ReviewQueueFilterForm(forms.Form):
    """The review queue's filters (``review_queue.REVIEW_QUEUE_FILTERS``: one
    field each, the same names)."""

    scope = forms.ChoiceField(required=False)
    conversation = forms.CharField(required=False, max_length=200, label="Conversation",
                                   widget=forms.TextInput(attrs={"placeholder": "exact external id"}))
    prompt_version = forms.ChoiceField(required=False, label="Prompt version")
    model = forms.CharField(required=False, max_length=200, label="Model",
                            widget=forms.TextInput(attrs={"placeholder": "exact model id"}))
    older_than = forms.ChoiceField(required=False, label="Age",
                                   choices=[("", "any age")] + [(k, f"older than {k}") for k in AGE_CHOICES])
    drift = forms.ChoiceField(required=False, choices=DRIFT_CHOICES, label="Drift",
                              help_text="hand-off notes whose drift checks found this (SPEC §8)")

    def __init__(self, *args, scopes: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["scope"].choices = [("", "all scopes")] + [(s, s) for s in scopes]
        self.fields["prompt_version"].choices = [("", "any")] + [
            (n, n) for n in PromptVersion.objects.order_by("family", "version").values_list("name", flat=True)
        ]

    def filters(self) -> dict:
        """The cleaned filters that have a value (an empty one is "any")."""
        if not self.is_bound or not self.is_valid():
            return {}
        return {name: value for name, value in self.cleaned_data.items() if value}


class ActivityFilterForm(forms.Form):
    action = forms.ChoiceField(required=False, choices=[("", "any action")] + [(a, a) for a in AuditAction.values])
    actor = forms.CharField(required=False, max_length=150, label="Who")
    scope = forms.ChoiceField(required=False)
    conversation = forms.IntegerField(required=False, min_value=1, label="Conversation #")
    job = forms.IntegerField(required=False, min_value=1, label="Job #")
    since = forms.DateField(required=False, label="Since (UTC)", widget=forms.DateInput(attrs={"type": "date"}))

    def __init__(self, *args, scopes: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["scope"].choices = [("", "all scopes")] + [(s, s) for s in scopes]


def _reason_field(required_message: str, rows: int) -> forms.CharField:
    """A reason as every action takes it (``actions.reason_checked``):
    required, trimmed, at most ``REASON_MAX_CHARS``."""
    return forms.CharField(max_length=REASON_MAX_CHARS, widget=forms.Textarea(attrs={"rows": rows}),
                           error_messages={"required": required_message})


def _clean_reason(value: str, required_message: str) -> str:
    try:
        return reason_checked(value)
    except ActionRefused as exc:
        raise forms.ValidationError(required_message if exc.code == "reason_required" else exc.message) from None


NOTE_REQUIRED = "Give a note: it says why, beside the summary and in the activity log."
REASON_REQUIRED = "Give a reason: it is kept in the activity log."


class VerdictForm(forms.Form):
    """A verdict and its note, under the one rule of ``actions.note_checked``
    (the API's too)."""

    verdict = forms.ChoiceField(choices=Verdict.choices, widget=forms.RadioSelect)
    note = _reason_field(NOTE_REQUIRED, rows=4)
    # Drift findings of the note the verdict cites (ids; the action checks they are the note's).
    cite = forms.TypedMultipleChoiceField(required=False, coerce=int, label="Cite drift findings")

    def __init__(self, *args, findings=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["cite"].choices = [(f.pk, str(f.pk)) for f in findings]

    def clean_note(self):
        try:
            return note_checked(self.cleaned_data["note"])
        except ActionRefused as exc:
            raise forms.ValidationError(NOTE_REQUIRED if exc.code == "reason_required" else exc.message) from None


class ReasonForm(forms.Form):
    """An operator action: the reason is kept in the activity log."""

    reason = _reason_field(REASON_REQUIRED, rows=2)
    confirm = forms.BooleanField(label="I confirm this action",
                                 error_messages={"required": "Tick the confirmation to go ahead."})

    def clean_reason(self):
        return _clean_reason(self.cleaned_data["reason"], REASON_REQUIRED)


class JobIdsField(forms.Field):
    """Selected job ids from checkboxes; which of them the user may touch is
    decided by the selector, not here."""

    widget = forms.CheckboxSelectMultiple

    def to_python(self, value):
        if not value:
            return []
        if isinstance(value, str):
            value = [value]
        try:
            return sorted({int(v) for v in value})
        except (TypeError, ValueError):
            raise forms.ValidationError("Job ids must be whole numbers.") from None

    def validate(self, value):
        if not value:
            raise forms.ValidationError("Select at least one range.")


class BulkRerunForm(ReasonForm):
    jobs = JobIdsField()


KEPT_MAX = 100


def kept_job_ids(raw: str | None) -> list[int]:
    """``?kept=`` of the queue: the comma-separated ids of the jobs a bulk
    re-run acted on (at most ``KEPT_MAX``). Raises ``forms.ValidationError``
    naming the parameter for anything else."""
    if not raw:
        return []
    parts = [p.strip() for p in raw.split(",") if p.strip()]
    if not all(p.isdigit() for p in parts):
        raise forms.ValidationError("kept: job ids must be whole numbers separated by commas")
    ids = sorted({int(p) for p in parts})
    if len(ids) > KEPT_MAX:
        raise forms.ValidationError(f"kept: at most {KEPT_MAX} job ids")
    return ids


class AssemblyInspectForm(forms.Form):
    """The inspector's inputs (SPEC §9): which stored run, the input budget in
    tokens, and the two choices that change what assembly may do."""

    run = forms.ChoiceField(label="Run")
    budget = forms.IntegerField(required=False, min_value=1, max_value=10_000_000, label="Token budget",
                                widget=forms.NumberInput(attrs={"step": "1"}),
                                help_text="the input budget: the model's input limit less its output reserve "
                                          "and safety margin")
    recent_tool_rings = forms.IntegerField(required=False, min_value=0, max_value=1000, initial=3,
                                           label="Recent tool rings kept")
    summarize = forms.BooleanField(required=False, label="Summarise what trimming removes")
    repair = forms.BooleanField(required=False, label="Answer missing tool results with an error placeholder")

    def __init__(self, *args, runs=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["run"].choices = [
            (r.run.external_id, f"{r.run.external_id} · {r.run.status} · {r.messages} messages, "
                                f"{r.tool_calls} with tool calls") for r in runs]
