"""Query filters for the audit and activity lists (issue 6).

django-filter FilterSets validate every value (a bad value is a ``400``
naming the parameter, never an ignored filter) and drf-spectacular reads
them into the OpenAPI schema.
"""

from __future__ import annotations

import django_filters as df
from django import forms
from django.db.models import Exists, OuterRef, Subquery
from drf_spectacular.utils import extend_schema_field

from .models import Attempt, AuditEvent, CompactionJob, FailureCode, JobState, Review, Verdict
from .pagination import MAX_ID


@extend_schema_field({"type": "integer", "minimum": 1, "maximum": MAX_ID})
class IdFilter(df.Filter):
    field_class = forms.IntegerField

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", MAX_ID)
        super().__init__(*args, **kwargs)


class StrictBooleanField(forms.Field):
    """``true``/``false`` (or ``1``/``0``); anything else is an error, where
    Django's NullBooleanField would quietly read it as "no filter"."""

    def to_python(self, value):
        if value in (None, ""):
            return None
        lowered = str(value).strip().lower()
        if lowered in ("true", "1"):
            return True
        if lowered in ("false", "0"):
            return False
        raise forms.ValidationError("must be true or false", code="invalid")


@extend_schema_field({"type": "boolean"})
class StrictBooleanFilter(df.Filter):
    field_class = StrictBooleanField


NO_VERDICT = "none"


class AuditFilter(df.FilterSet):
    scope = df.CharFilter(field_name="scope", help_text="only this scope")
    conversation = IdFilter(field_name="conversation_id", help_text="only this conversation (its id here)")
    conversation_external_id = df.CharFilter(
        field_name="conversation__external_id", help_text="only conversations with this external id"
    )
    state = df.MultipleChoiceFilter(choices=JobState.choices, help_text="job state; repeat for several")
    failure_code = df.MultipleChoiceFilter(
        choices=FailureCode.choices, method="filter_failure_code",
        help_text="jobs with at least one attempt that failed with this code; repeat for several",
    )
    prompt_version = df.CharFilter(field_name="prompt_version__name", help_text="e.g. conversation-compaction@3")
    source_valid = StrictBooleanFilter(
        field_name="source_valid",
        help_text="whether the stored source digest still equals the digest of the range now",
    )
    verdict = df.MultipleChoiceFilter(
        choices=[*Verdict.choices, (NO_VERDICT, "no verdict yet")], method="filter_verdict",
        help_text="the newest review verdict (`none`: never reviewed); repeat for several",
    )
    created_after = df.IsoDateTimeFilter(field_name="created_at", lookup_expr="gte", help_text="created at or after")
    created_before = df.IsoDateTimeFilter(field_name="created_at", lookup_expr="lt", help_text="created before")
    updated_after = df.IsoDateTimeFilter(field_name="updated_at", lookup_expr="gte", help_text="updated at or after")
    updated_before = df.IsoDateTimeFilter(field_name="updated_at", lookup_expr="lt", help_text="updated before")

    class Meta:
        model = CompactionJob
        fields: list[str] = []

    def filter_failure_code(self, queryset, name, value):
        if not value:
            return queryset
        return queryset.filter(Exists(Attempt.objects.filter(job_id=OuterRef("pk"), failure_code__in=value)))

    def filter_verdict(self, queryset, name, value):
        if not value:
            return queryset
        latest = Review.objects.filter(job_id=OuterRef("pk")).order_by("-created_at", "-id").values("verdict")[:1]
        queryset = queryset.annotate(latest_verdict=Subquery(latest))
        wanted = [v for v in value if v != NO_VERDICT]
        condition = None
        if wanted:
            condition = queryset.filter(latest_verdict__in=wanted)
        if NO_VERDICT in value:
            none = queryset.filter(latest_verdict__isnull=True)
            condition = none if condition is None else condition | none
        return condition


class ActivityFilter(df.FilterSet):
    action = df.CharFilter(field_name="action", help_text="e.g. job.rerun, job.grant_attempt, review.record")
    scope = df.CharFilter(field_name="scope")
    conversation = IdFilter(field_name="conversation_id")
    job = IdFilter(field_name="job_id")
    actor = df.CharFilter(field_name="actor_label", help_text="the acting user's username")
    target_type = df.CharFilter(field_name="target_type", help_text="job or conversation")
    created_after = df.IsoDateTimeFilter(field_name="created_at", lookup_expr="gte", help_text="at or after")
    created_before = df.IsoDateTimeFilter(field_name="created_at", lookup_expr="lt", help_text="before")

    class Meta:
        model = AuditEvent
        fields: list[str] = []
