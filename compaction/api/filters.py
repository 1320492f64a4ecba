"""Query filters for the audit and activity lists (issue 6).

django-filter FilterSets validate every value (a bad value is a ``400``
naming the parameter, never an ignored filter) and drf-spectacular reads
them into the OpenAPI schema.
"""

from __future__ import annotations

from datetime import timezone as dt_timezone

import django_filters as df
from django import forms
from django.db.models import Exists, OuterRef, Q, Subquery
from django_filters.fields import IsoDateTimeField
from drf_spectacular.utils import extend_schema_field

from conversations.models import Conversation

from ..actions import AuditAction
from ..models import Attempt, AuditEvent, CompactionJob, DriftCode, DriftFinding, FailureCode, JobState, Review, Verdict
from .plumbing import MAX_ID


def _documented(filter_: df.Filter, schema: dict, description: str = "") -> df.Filter:
    """Give the schema the exact parameter type (with its help text, which
    an explicit schema would otherwise drop)."""
    return extend_schema_field({**schema, **({"description": description} if description else {})})(filter_)


class IdFilter(df.Filter):
    field_class = forms.IntegerField

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", MAX_ID)
        super().__init__(*args, **kwargs)


def id_filter(field_name: str, description: str = "") -> df.Filter:
    return _documented(IdFilter(field_name=field_name), {"type": "integer", "minimum": 1, "maximum": MAX_ID},
                       description)


def text_filter(field_name: str, description: str = "") -> df.Filter:
    # An empty value is refused by the view's StrictFilterBackend, not read as "no filter".
    return _documented(df.CharFilter(field_name=field_name), {"type": "string", "minLength": 1}, description)


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


class StrictBooleanFilter(df.Filter):
    field_class = StrictBooleanField


class UtcDateTimeField(IsoDateTimeField):
    """An ISO 8601 time, converted to UTC: PostgreSQL refuses offsets beyond
    ±15:59 that Python accepts, and a time that falls before year 1 in UTC
    is out of range, not a server error."""

    def to_python(self, value):
        parsed = super().to_python(value)
        if parsed is None:
            return None
        try:
            return parsed.astimezone(dt_timezone.utc)
        except OverflowError:
            raise forms.ValidationError("is out of range", code="invalid") from None


class UtcDateTimeFilter(df.IsoDateTimeFilter):
    field_class = UtcDateTimeField


NO_VERDICT = "none"


class AuditFilter(df.FilterSet):
    scope = text_filter("scope", "only this scope")
    conversation = id_filter("conversation_id", "only this conversation (its id in this service)")
    conversation_external_id = text_filter("conversation__external_id", "only conversations with this external id")
    # distinct=False: none of these joins a many-valued relation, and a
    # DISTINCT would sort the whole result before its first row (issue 17).
    state = df.MultipleChoiceFilter(choices=JobState.choices, distinct=False,
                                    help_text="job state; repeat for several")
    failure_code = df.MultipleChoiceFilter(
        choices=FailureCode.choices, method="filter_failure_code", distinct=False,
        help_text="jobs with at least one attempt that failed with this code; repeat for several",
    )
    prompt_version = text_filter("prompt_version__name", "prompt version name, e.g. conversation-compaction@3")
    source_valid = _documented(
        StrictBooleanFilter(field_name="source_valid"), {"type": "boolean"},
        "whether the stored source digest still equals the digest of the range now",
    )
    verdict = df.MultipleChoiceFilter(
        choices=[*Verdict.choices, (NO_VERDICT, "no verdict yet")], method="filter_verdict", distinct=False,
        help_text="the verdict that stands on the job's summary (`none`: unreviewed — never reviewed, replaced "
                  "by a newer generation, or its source changed after the verdict); repeat for several",
    )
    drift_code = df.MultipleChoiceFilter(
        choices=DriftCode.choices, method="filter_drift_code",
        help_text="rolling hand-off jobs whose generation has a drift finding with this code (SPEC §8); "
                  "repeat for several",
    )
    drift_found = _documented(
        StrictBooleanFilter(method="filter_drift_found"), {"type": "boolean"},
        "true: jobs whose generation has at least one drift finding; false: jobs without any",
    )
    created_after = UtcDateTimeFilter(field_name="created_at", lookup_expr="gte", help_text="created at or after")
    created_before = UtcDateTimeFilter(field_name="created_at", lookup_expr="lt", help_text="created before")
    updated_after = UtcDateTimeFilter(field_name="updated_at", lookup_expr="gte", help_text="updated at or after")
    updated_before = UtcDateTimeFilter(field_name="updated_at", lookup_expr="lt", help_text="updated before")

    class Meta:
        model = CompactionJob
        fields: list[str] = []

    def filter_failure_code(self, queryset, name, value):
        if not value:
            return queryset
        return queryset.filter(Exists(Attempt.objects.filter(job_id=OuterRef("pk"), failure_code__in=value)))

    def filter_drift_code(self, queryset, name, value):
        if not value:
            return queryset
        return queryset.filter(Exists(DriftFinding.objects.filter(generation__job_id=OuterRef("pk"),
                                                                  code__in=value)))

    def filter_drift_found(self, queryset, name, value):
        if value is None:
            return queryset
        found = Exists(DriftFinding.objects.filter(generation__job_id=OuterRef("pk")))
        return queryset.filter(found if value else ~found)

    def filter_verdict(self, queryset, name, value):
        if not value:
            return queryset
        wanted = [v for v in value if v != NO_VERDICT]
        condition = Q()
        if wanted:
            latest = Review.objects.standing_of_job(OuterRef("pk")).values("verdict")[:1]
            queryset = queryset.annotate(latest_verdict=Subquery(latest))
            condition |= Q(latest_verdict__in=wanted)
        if NO_VERDICT in value:
            # "Unreviewed" is "no standing review exists": an anti-join, where
            # "the newest verdict is null" was a subquery run for every job.
            condition |= ~Q(Exists(Review.objects.standing().filter(job_id=OuterRef("pk"))))
        return queryset.filter(condition)


class ActivityFilter(df.FilterSet):
    action = text_filter("action", "e.g. " + ", ".join((AuditAction.JOB_RERUN, AuditAction.JOB_GRANT_ATTEMPT,
                                                          AuditAction.CONVERSATION_RERUN, AuditAction.REVIEW_RECORD)))
    scope = text_filter("scope", "only this scope")
    conversation = id_filter("conversation_id", "only events about this conversation")
    job = id_filter("job_id", "only events about this job")
    actor = text_filter("actor_label", "the acting user's username")
    target_type = text_filter("target_type", "job or conversation")
    created_after = UtcDateTimeFilter(field_name="created_at", lookup_expr="gte", help_text="at or after")
    created_before = UtcDateTimeFilter(field_name="created_at", lookup_expr="lt", help_text="before")

    class Meta:
        model = AuditEvent
        fields: list[str] = []


class ConversationFilter(df.FilterSet):
    # Documented on the endpoint itself (``compaction.api.conversations``).
    scope = df.CharFilter(field_name="scope")
    external_id = df.CharFilter(field_name="external_id")

    class Meta:
        model = Conversation
        fields: list[str] = []
