"""REST endpoints for audits, exports, operator actions, verdicts and the
activity log (SPEC §1, §8; issue 6).

Thin: each class checks the role, parses input, calls one selector
(``compaction.audit``) or one action (``compaction.operations``) and renders.
Every 4xx is ``{"code", "message", "errors"?}`` (``compaction.rest``);
unknown query parameters and malformed cursors are refused, not ignored.
"""

from __future__ import annotations

import json

from django.conf import settings
from django.http import JsonResponse, StreamingHttpResponse
from django.views import defaults
from django_filters import MultipleChoiceFilter
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.generics import GenericAPIView
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.parsers import JSONParser
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from conversations import selectors as conversation_selectors
from conversations.api import ErrorSerializer

from . import audit, operations
from .filters import ActivityFilter, AuditFilter
from .models import JobState, Verdict
from .pagination import MAX_ID, TimeCursorPagination
from .rest import ApiError, CanOperate, CanRead, CanReview
from .throttles import WriteRateThrottle

REASON_MAX_CHARS = 4000

# --- plumbing ---------------------------------------------------------------------


class StrictFormatNegotiation(DefaultContentNegotiation):
    """``?format=`` must name one of the endpoint's formats (DRF would 404)."""

    def filter_renderers(self, renderers, format):
        matching = [r for r in renderers if r.format == format]
        if not matching:
            formats = ", ".join(r.format for r in renderers)
            raise ApiError(code="invalid_format", message=f"format must be one of: {formats}",
                           errors={"format": [f"must be one of: {formats}"]})
        return matching


class StrictQueryMixin:
    """Refuse query parameters the endpoint does not know (after the role
    check, so an anonymous caller still gets 401 first)."""

    allowed_query_params: tuple[str, ...] = ()
    content_negotiation_class = StrictFormatNegotiation

    def known_query_params(self) -> set[str]:
        names = set(self.allowed_query_params)
        filterset_class = getattr(self, "filterset_class", None)
        if filterset_class is not None:
            names |= set(filterset_class.base_filters)
        return names

    def repeatable_query_params(self) -> set[str]:
        filterset_class = getattr(self, "filterset_class", None)
        if filterset_class is None:
            return set()
        return {name for name, f in filterset_class.base_filters.items() if isinstance(f, MultipleChoiceFilter)}

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        unknown = sorted(set(request.query_params) - self.known_query_params())
        if unknown:
            raise ApiError(
                code="unknown_filter",
                message=f"unknown query parameter(s): {', '.join(unknown)}",
                errors={name: ["unknown query parameter"] for name in unknown},
            )
        repeatable = self.repeatable_query_params()
        repeated = sorted(name for name, values in request.query_params.lists()
                          if len(values) > 1 and name not in repeatable)
        if repeated:
            raise ApiError(
                code="invalid_filter",
                message=f"{repeated[0]}: given more than once",
                errors={name: ["given more than once"] for name in repeated},
            )


class StrictFilterBackend(DjangoFilterBackend):
    """Validate every filter value; an empty one is an error too (django-filter
    would read ``?state=`` as "no filter")."""

    def filter_queryset(self, request, queryset, view):
        empty = sorted(name for name, values in request.query_params.lists() if any(v == "" for v in values))
        if empty:
            raise ApiError(code="invalid_filter", message=f"{empty[0]}: must not be empty",
                           errors={name: ["must not be empty"] for name in empty})
        filterset = self.get_filterset(request, queryset, view)
        if not filterset.is_valid():
            errors = {name: [str(m) for m in messages] for name, messages in filterset.errors.items()}
            first, messages = next(iter(errors.items()))
            raise ApiError(code="invalid_filter", message=f"{first}: {messages[0]}", errors=errors)
        return filterset.qs


class ListSchema(AutoSchema):
    """Document the filter parameters on our (non-viewset) list endpoints."""

    def get_filter_backends(self):
        return getattr(self.view, "filter_backends", [])


class JSONLinesRenderer(BaseRenderer):
    media_type = "application/x-ndjson"
    format = "jsonl"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        rows = data if isinstance(data, list) else [data]
        return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()


class CSVRenderer(BaseRenderer):
    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return "".join(audit.csv_lines(data if isinstance(data, list) else [])).encode()


STREAMING_FORMATS = (JSONLinesRenderer.format, CSVRenderer.format)


def _refused(exc: operations.ActionRefused) -> ApiError:
    if exc.code == "reason_required":
        return ApiError(code=exc.code, message=exc.message, errors={"reason": [exc.message]})
    if exc.code == "invalid_verdict":
        return ApiError(code=exc.code, message=exc.message, errors={"verdict": [exc.message]})
    # The request was well formed; the job's state does not allow it now.
    return ApiError(code=exc.code, message=exc.message, status_code=status.HTTP_409_CONFLICT)


def _job_or_404(request, job_id: int):
    job = audit.audit_job_get(user=request.user, job_id=job_id)
    if job is None:
        raise ApiError(code="not_found", message=f"no job {job_id} in your scopes", status_code=404)
    return job


def _conversation_or_404(request, conversation_id: int):
    conversation = None
    if 1 <= conversation_id <= MAX_ID:
        conversation = conversation_selectors.conversation_get(user=request.user, conversation_id=conversation_id)
    if conversation is None:
        raise ApiError(code="not_found", message=f"no conversation {conversation_id} in your scopes", status_code=404)
    return conversation


def _record(job) -> dict:
    return audit.audit_records([job])[0]


def api_not_found(request, exception=None):
    """404 for a URL that matches no route: JSON under /api/, the usual page elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse({"code": "not_found", "message": f"no such endpoint: {request.path}"}, status=404)
    return defaults.page_not_found(request, exception)


# --- shapes (for the schema; records are built by compaction.audit) -------------------


class AttemptSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    started_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    outcome = serializers.ChoiceField(choices=["running", "succeeded", "failed"])
    failure_code = serializers.CharField(allow_null=True, help_text="null unless the attempt failed")
    failure_detail = serializers.CharField(allow_blank=True)
    finish_reason = serializers.CharField(allow_null=True)
    model = serializers.CharField(allow_blank=True)
    input_tokens = serializers.IntegerField(allow_null=True)
    output_tokens = serializers.IntegerField(allow_null=True)
    latency_ms = serializers.IntegerField(allow_null=True)


class GenerationRefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    number = serializers.IntegerField()
    text = serializers.CharField(allow_blank=True)
    created_at = serializers.DateTimeField()


class ReviewRefSerializer(serializers.Serializer):
    verdict = serializers.ChoiceField(choices=Verdict.values)
    reviewer = serializers.CharField()
    note = serializers.CharField(allow_blank=True)
    created_at = serializers.DateTimeField()


class AuditRecordSerializer(serializers.Serializer):
    job = serializers.IntegerField()
    scope = serializers.CharField()
    conversation = serializers.IntegerField()
    conversation_external_id = serializers.CharField()
    from_pair = serializers.IntegerField()
    to_pair = serializers.IntegerField()
    message_ids = serializers.ListField(
        child=serializers.CharField(), help_text="the 20 message ids, user then assistant per pair")
    source_digest = serializers.CharField(help_text="the digest the job is bound to")
    current_digest = serializers.CharField(
        allow_null=True, help_text="the range's digest now; null if no longer planned")
    source_valid = serializers.BooleanField(help_text="current_digest == source_digest")
    model = serializers.CharField()
    prompt_version = serializers.CharField()
    state = serializers.ChoiceField(choices=JobState.values)
    attempts_used = serializers.IntegerField()
    max_attempts = serializers.IntegerField()
    last_failure_code = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    attempts = AttemptSerializer(many=True)
    generation = GenerationRefSerializer(allow_null=True)
    review = ReviewRefSerializer(allow_null=True, help_text="the newest verdict")


class AuditPageSerializer(serializers.Serializer):
    next = serializers.URLField(allow_null=True, help_text="the next page, null when there is none yet")
    next_cursor = serializers.CharField(allow_null=True)
    results = AuditRecordSerializer(many=True)


class ActivitySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    actor = serializers.CharField(allow_null=True, help_text="username; null for the system")
    actor_label = serializers.CharField(allow_blank=True)
    action = serializers.CharField()
    target_type = serializers.CharField()
    target_id = serializers.CharField()
    scope = serializers.CharField(allow_blank=True)
    conversation = serializers.IntegerField(allow_null=True)
    job = serializers.IntegerField(allow_null=True)
    before = serializers.JSONField(allow_null=True)
    after = serializers.JSONField(allow_null=True)
    reason = serializers.CharField(allow_blank=True)


class ActivityPageSerializer(serializers.Serializer):
    next = serializers.URLField(allow_null=True)
    next_cursor = serializers.CharField(allow_null=True)
    results = ActivitySerializer(many=True)


class StrictCharField(serializers.CharField):
    """Text only: DRF would quietly turn a JSON number into text."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictIntegerField(serializers.IntegerField):
    """A JSON integer only: DRF would also take ``"12"``."""

    def to_internal_value(self, data):
        if isinstance(data, (str, bool)):
            self.fail("invalid")
        return super().to_internal_value(data)


class ReasonSerializer(serializers.Serializer):
    # Not trimmed before the length check, so the documented maxLength holds
    # for the text as sent; blank-only text is refused in ``_valid``.
    reason = StrictCharField(max_length=REASON_MAX_CHARS, trim_whitespace=False,
                             help_text="why; kept in the activity log")


def _valid(serializer: serializers.Serializer, *, reason_field: str) -> dict:
    """Validate a body; a missing or blank reason is ``reason_required``."""
    if serializer.is_valid():
        data = dict(serializer.validated_data)
        data[reason_field] = data[reason_field].strip()
        if data[reason_field]:
            return data
        errors = {reason_field: [serializers.ErrorDetail("blank", code="blank")]}
    else:
        errors = serializer.errors
    reason_errors = errors.get(reason_field, []) if isinstance(errors, dict) else []
    if any(getattr(e, "code", "") in ("required", "blank", "null") for e in reason_errors):
        message = "a reason is required" if reason_field == "reason" else f"a {reason_field} (the reason) is required"
        others = {k: [str(e) for e in v] for k, v in errors.items() if k != reason_field and isinstance(v, list)}
        raise ApiError(code="reason_required", message=f"{reason_field}: {message}",
                       errors={reason_field: [message], **others})
    raise serializers.ValidationError(errors)


def _reason(request) -> str:
    return _valid(ReasonSerializer(data=request.data), reason_field="reason")["reason"]


ERRORS_READ = {
    400: OpenApiResponse(ErrorSerializer, description="bad filter, cursor or format"),
    401: OpenApiResponse(ErrorSerializer, description="no or bad credentials"),
    403: OpenApiResponse(ErrorSerializer, description="the account's role may not do this"),
}
ERRORS_WRITE = {
    **ERRORS_READ,
    400: OpenApiResponse(ErrorSerializer, description="missing reason or invalid body"),
    404: OpenApiResponse(ErrorSerializer, description="not found in the caller's scopes"),
    409: OpenApiResponse(ErrorSerializer, description="the target's state does not allow this (e.g. not_rerunnable)"),
    415: OpenApiResponse(ErrorSerializer, description="unsupported body media type"),
    429: OpenApiResponse(ErrorSerializer, description="write rate exceeded; see Retry-After"),
}
_PAGE_PARAMS = [
    OpenApiParameter("cursor", {"type": "string", "minLength": 1},
                     description="the `next_cursor` of the previous page"),
    OpenApiParameter("page_size", {"type": "integer", "minimum": 1, "maximum": 500},
                     description="1 to 500 (default 50)"),
]


# --- audits -----------------------------------------------------------------------------


class AuditListApi(StrictQueryMixin, GenericAPIView):
    """One audit record per job, oldest first; or the whole result streamed
    as JSON lines or CSV."""

    permission_classes = [CanRead]
    filter_backends = [StrictFilterBackend]
    filterset_class = AuditFilter
    renderer_classes = [JSONRenderer, JSONLinesRenderer, CSVRenderer]
    allowed_query_params = ("format", *TimeCursorPagination.query_params)
    schema = ListSchema()

    def get_queryset(self):
        return audit.audit_jobs(user=self.request.user)

    def handle_exception(self, exc):
        # Errors are JSON even when the caller asked for a CSV or JSONL export.
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return super().handle_exception(exc)

    @extend_schema(
        operation_id="list_audits",
        parameters=[
            *_PAGE_PARAMS,
            OpenApiParameter(
                "format", str, enum=["json", "jsonl", "csv"],
                description="`json` (default): one page; `jsonl` / `csv`: stream every matching record "
                            "(the cursor, if given, is where the export starts; page_size does not apply)",
            ),
        ],
        responses={
            (200, "application/json"): AuditPageSerializer,
            (200, "application/x-ndjson"): OpenApiResponse(
                {"type": "string"}, description="one audit record (JSON object) per line"),
            (200, "text/csv"): OpenApiResponse(
                {"type": "string"},
                description="a header row, then one record per row; message_ids and attempts as JSON text; "
                            "cells starting with = + - @ are prefixed with a quote"),
            **{(code, "application/json"): r for code, r in ERRORS_READ.items()},
        },
    )
    def get(self, request):
        queryset = self.filter_queryset(self.get_queryset())
        paginator = TimeCursorPagination(kind="audits")
        fmt = request.accepted_renderer.format
        if fmt in STREAMING_FORMATS:
            if TimeCursorPagination.page_size_query_param in request.query_params:
                raise ApiError(code="invalid_filter", message="page_size: does not apply to an export",
                               errors={"page_size": ["does not apply to an export"]})
            records = audit.audit_records_iter(
                paginator.after(queryset, paginator.position(request)),
                chunk_size=settings.COMPACTION_API_EXPORT_CHUNK,
            )
            lines = audit.csv_lines(records) if fmt == "csv" else audit.jsonl_lines(records)
            renderer = request.accepted_renderer
            response = StreamingHttpResponse(
                (line.encode("utf-8") for line in lines),
                content_type=f"{renderer.media_type}; charset=utf-8",
            )
            response["Content-Disposition"] = f'attachment; filename="audits.{fmt}"'
            return response
        jobs = paginator.paginate(queryset, request)
        return paginator.response(audit.audit_records(jobs))


class AuditDetailApi(StrictQueryMixin, APIView):
    permission_classes = [CanRead]

    @extend_schema(
        operation_id="get_audit",
        responses={200: AuditRecordSerializer, 404: ErrorSerializer, **ERRORS_READ},
    )
    def get(self, request, job_id: int):
        return Response(_record(_job_or_404(request, job_id)))


# --- operations -------------------------------------------------------------------------


class _JobActionApi(StrictQueryMixin, APIView):
    """An operator action on one job, with a reason; answers with the audit
    record of the job it queued. Subclasses name the action (one of
    ``operations.job_*``) and the schema's operation id."""

    permission_classes = [CanOperate]
    throttle_classes = [WriteRateThrottle]
    parser_classes = [JSONParser]
    operation = None  # (job=, actor=, reason=) -> the job queued

    def post(self, request, job_id: int):
        job = _job_or_404(request, job_id)
        reason = _reason(request)
        try:
            queued = self.operation(job=job, actor=request.user, reason=reason)
        except operations.ActionRefused as exc:
            raise _refused(exc) from None
        return Response(_record(_job_or_404(request, queued.pk)), status=status.HTTP_202_ACCEPTED)


def _job_action_schema(operation_id: str):
    return extend_schema_view(post=extend_schema(operation_id=operation_id, request=ReasonSerializer,
                                                 responses={202: AuditRecordSerializer, **ERRORS_WRITE}))


@_job_action_schema("rerun_job")
class JobRerunApi(_JobActionApi):
    """Re-run a failed or exhausted job now (the desk's re-run), with a reason.
    A failed job uses the attempt it has left; an exhausted one gets one more."""

    operation = staticmethod(operations.job_rerun)


@_job_action_schema("grant_job_attempt")
class JobGrantAttemptApi(_JobActionApi):
    """Grant one more attempt to a failed or exhausted job (its limit rises by
    one) and run it now, with a reason."""

    operation = staticmethod(operations.job_grant_attempt)


@_job_action_schema("replan_job")
class JobReplanApi(_JobActionApi):
    """Bind a range whose source changed to its current source: a new job
    for that range only (current prompt version and model), queued; the old
    job and any summary stay as the record. For a stale job, or a succeeded
    one whose source changed since (``source_valid`` false). Answers with
    the new job's record."""

    operation = staticmethod(operations.job_replan)


class JobRefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    from_pair = serializers.IntegerField()
    to_pair = serializers.IntegerField()
    prompt_version = serializers.CharField()
    state = serializers.ChoiceField(choices=JobState.values)


class CompactResultSerializer(serializers.Serializer):
    conversation = serializers.IntegerField()
    jobs = JobRefSerializer(many=True, help_text="the jobs granted or planned and queued; empty if none")


class ConversationCompactApi(StrictQueryMixin, APIView):
    """Re-run every failed or exhausted range of a conversation and plan
    jobs for ranges that have none for their current source."""

    permission_classes = [CanOperate]
    throttle_classes = [WriteRateThrottle]
    parser_classes = [JSONParser]

    @extend_schema(operation_id="compact_conversation", request=ReasonSerializer,
                   responses={202: CompactResultSerializer, **ERRORS_WRITE})
    def post(self, request, conversation_id: int):
        conversation = _conversation_or_404(request, conversation_id)
        reason = _reason(request)
        try:
            jobs = operations.conversation_rerun(conversation=conversation, actor=request.user, reason=reason)
        except operations.ActionRefused as exc:
            raise _refused(exc) from None
        body = {
            "conversation": conversation.pk,
            "jobs": [
                {"id": j.pk, "from_pair": j.from_pair, "to_pair": j.to_pair,
                 "prompt_version": j.prompt_version.name, "state": j.state}
                for j in jobs
            ],
        }
        return Response(body, status=status.HTTP_202_ACCEPTED)


class ReviewSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    job = serializers.IntegerField()
    generation = serializers.IntegerField(allow_null=True, help_text="the generation judged; null if none")
    verdict = serializers.ChoiceField(choices=Verdict.values)
    reviewer = serializers.CharField()
    note = serializers.CharField()
    created_at = serializers.DateTimeField()


class ReviewInputSerializer(serializers.Serializer):
    job = StrictIntegerField(min_value=1, max_value=MAX_ID, help_text="the job's id")
    verdict = serializers.ChoiceField(choices=Verdict.values)
    note = StrictCharField(required=False, allow_blank=True, max_length=REASON_MAX_CHARS, trim_whitespace=False,
                           help_text="why this verdict, shown beside the summary; this or `reason` is required")
    reason = StrictCharField(required=False, allow_blank=True, max_length=REASON_MAX_CHARS, trim_whitespace=False,
                             help_text="the same as `note` (the name the other actions use)")

    def validate(self, data):
        note, reason = data.get("note", "").strip(), data.get("reason", "").strip()
        if note and reason and note != reason:
            raise serializers.ValidationError({"reason": ["give the note once: as `note` or as `reason`"]})
        data["note"] = note or reason
        return data


class ReviewCreateApi(StrictQueryMixin, APIView):
    """Record a verdict on a job's summary. The note is the reason and is
    required; the newest verdict is the job's current one."""

    permission_classes = [CanReview]
    throttle_classes = [WriteRateThrottle]
    parser_classes = [JSONParser]

    @extend_schema(operation_id="create_review", request=ReviewInputSerializer,
                   responses={201: ReviewSerializer, **ERRORS_WRITE})
    def post(self, request):
        serializer = ReviewInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        if not data["note"]:
            raise ApiError(code="reason_required", message="reason: a note (the reason for the verdict) is required",
                           errors={"note": ["a note (the reason for the verdict) is required"],
                                   "reason": ["a note (the reason for the verdict) is required"]})
        job = _job_or_404(request, data["job"])
        try:
            review = operations.review_record(job=job, reviewer=request.user, verdict=data["verdict"],
                                              note=data["note"])
        except operations.ActionRefused as exc:
            raise _refused(exc) from None
        body = {
            "id": review.pk,
            "job": review.job_id,
            "generation": review.generation_id,
            "verdict": review.verdict,
            "reviewer": request.user.get_username(),
            "note": review.note,
            "created_at": review.created_at,
        }
        return Response(ReviewSerializer(body).data, status=status.HTTP_201_CREATED)


# --- activity ---------------------------------------------------------------------------


class ActivityListApi(StrictQueryMixin, GenericAPIView):
    """The log of every manual action (AuditEvent), newest first."""

    permission_classes = [CanRead]
    filter_backends = [StrictFilterBackend]
    filterset_class = ActivityFilter
    allowed_query_params = TimeCursorPagination.query_params
    schema = ListSchema()

    def get_queryset(self):
        return audit.activity_events(user=self.request.user)

    @extend_schema(operation_id="list_activity", parameters=_PAGE_PARAMS,
                   responses={200: ActivityPageSerializer, **ERRORS_READ})
    def get(self, request):
        paginator = TimeCursorPagination(kind="activity", descending=True)
        events = paginator.paginate(self.filter_queryset(self.get_queryset()), request)
        return paginator.response([audit.activity_record(e) for e in events])
