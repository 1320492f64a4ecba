"""``/api/v1/audits/``: one audit record per job, as a page or streamed as
JSON lines or CSV (SPEC §11, issue 6).

Thin: the records are built by ``compaction.audit``; this module parses the
query (``plumbing``), picks the format and renders.
"""

from __future__ import annotations

import itertools
import json

from django.conf import settings
from django.http import StreamingHttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.generics import GenericAPIView
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import audit, audit_export
from ..keyset import ID, TIME, Keyset
from ..models import AttemptOutcome, DriftCode, DriftKind, JobState, Verdict
from .filters import AuditFilter
from .permissions import CanRead
from .plumbing import (ERRORS_READ, PAGE_PARAMS, ApiError, ErrorSerializer, KeysetPagination, ListSchema,
                       StrictFilterBackend,
                       StrictQueryMixin, job_or_404)


# Records are read (and exported) from the oldest job.
AUDITS = Keyset("audits", ("created_at", "id"), (TIME, ID))


def audit_record_of(job) -> dict:
    return audit.audit_records([job])[0]


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

# ``?bom=1``: the CSV export starts with a UTF-8 byte order mark, so a
# spreadsheet that guesses the encoding (Excel) opens Chinese text correctly.
UTF8_BOM = "\ufeff".encode("utf-8")
BOM_PARAM = "bom"


def bom_wanted(request, fmt: str) -> bool:
    """``?bom=1`` (or ``0``, the default); only the CSV export takes it."""
    raw = request.query_params.get(BOM_PARAM)
    if raw is None or raw == "0":
        return False
    if raw != "1":
        raise ApiError(code="invalid_filter", message=f"{BOM_PARAM}: must be 1 or 0, got {raw[:20]!r}",
                       errors={BOM_PARAM: ["must be 1 or 0"]})
    if fmt != CSVRenderer.format:
        raise ApiError(code="invalid_filter", message=f"{BOM_PARAM}: applies to the csv export only",
                       errors={BOM_PARAM: ["applies to the csv export only"]})
    return True


class AttemptSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    started_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    outcome = serializers.ChoiceField(choices=AttemptOutcome.values)
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


class ChainBreakSerializer(serializers.Serializer):
    generation = serializers.IntegerField(allow_null=True,
                                          help_text="the generation whose own material stopped matching")
    pair = serializers.IntegerField(help_text="the first pair the ingest that broke it changed")


class DriftFindingRefSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=DriftKind.choices, help_text="wrong, extra, lost or length (SPEC §8)")
    code = serializers.ChoiceField(choices=DriftCode.choices)
    section = serializers.CharField(allow_null=True, help_text="the note's section; null: the whole note")
    line = serializers.IntegerField(allow_null=True, help_text="1-based line of the note; null: the whole note")
    message_ids = serializers.ListField(child=serializers.CharField(), help_text="the messages that prove it")


class AuditRecordSerializer(serializers.Serializer):
    job = serializers.IntegerField()
    scope = serializers.CharField()
    conversation = serializers.IntegerField()
    conversation_external_id = serializers.CharField()
    from_pair = serializers.IntegerField()
    to_pair = serializers.IntegerField()
    message_ids = serializers.ListField(
        child=serializers.CharField(), help_text="the bound message ids, user then assistant per pair "
                                                 "(20 for a segment)")
    source_digest = serializers.CharField(help_text="the digest the job is bound to")
    current_digest = serializers.CharField(
        allow_null=True, help_text="the range's digest now; null if no longer planned")
    source_valid = serializers.BooleanField(
        help_text="current_digest == source_digest (and, for a hand-off job, its chain is intact)")
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
    review = ReviewRefSerializer(
        allow_null=True,
        help_text="the verdict that stands on the job's summary; null when unreviewed (never, or again: "
                  "replaced by a newer generation, or its source changed after the verdict)")
    kind = serializers.ChoiceField(choices=["segment", "handoff"],
                                   help_text="the binding kind: a 10-pair segment, or a rolling hand-off note")
    parent_generation = serializers.IntegerField(
        allow_null=True, help_text="rolling hand-off jobs: the generation whose note it is written from; "
                                   "null for segments and a chain's first note")
    parent_digest = serializers.CharField(allow_null=True, help_text="SHA-256 of the parent note's text")
    chain_break = ChainBreakSerializer(
        allow_null=True, help_text="rolling hand-off jobs whose chain broke: where (null while intact)")
    drift = DriftFindingRefSerializer(
        many=True, allow_null=True,
        help_text="rolling hand-off jobs: the drift findings of the job's generation (empty when it has none "
                  "or no generation yet); null for segments")


class AuditPageSerializer(serializers.Serializer):
    next = serializers.URLField(allow_null=True, help_text="the next page, null when there is none yet")
    next_cursor = serializers.CharField(allow_null=True)
    results = AuditRecordSerializer(many=True)



# --- endpoints ---------------------------------------------------------------------

class AuditListApi(StrictQueryMixin, GenericAPIView):
    """One audit record per job, oldest first; or the whole result streamed
    as JSON lines or CSV."""

    permission_classes = [CanRead]
    filter_backends = [StrictFilterBackend]
    filterset_class = AuditFilter
    renderer_classes = [JSONRenderer, JSONLinesRenderer, CSVRenderer]
    allowed_query_params = ("format", BOM_PARAM, *KeysetPagination.query_params)
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
            *PAGE_PARAMS,
            OpenApiParameter(
                "format", str, enum=["json", "jsonl", "csv"],
                description="`json` (default): one page; `jsonl` / `csv`: stream every matching record "
                            "(the cursor, if given, is where the export starts; page_size does not apply)",
            ),
            OpenApiParameter(
                BOM_PARAM, str, enum=["0", "1"],
                description="`csv` only: `1` starts the file with a UTF-8 byte order mark (EF BB BF), so "
                            "spreadsheets that guess the encoding (Excel) show Chinese and other non-ASCII "
                            "text correctly; `0` (default): no mark. With another format it is refused "
                            "(`invalid_filter`)",
            ),
        ],
        responses={
            (200, "application/json"): AuditPageSerializer,
            (200, "application/x-ndjson"): OpenApiResponse(
                {"type": "string"}, description="one audit record (JSON object) per line"),
            (200, "text/csv"): OpenApiResponse(
                {"type": "string"},
                description="a header row, then one record per row; message_ids, attempts, chain_break and drift "
                            "(the findings) as JSON text; cells starting with = + - @ are prefixed with a quote; "
                            "with bom=1 the file starts with a UTF-8 byte order mark"),
            **{(code, "application/json"): r for code, r in ERRORS_READ.items()},
        },
    )
    def get(self, request):
        queryset = self.filter_queryset(self.get_queryset())
        paginator = KeysetPagination(AUDITS)
        fmt = request.accepted_renderer.format
        bom = bom_wanted(request, fmt)
        if fmt in STREAMING_FORMATS:
            if KeysetPagination.page_size_query_param in request.query_params:
                raise ApiError(code="invalid_filter", message="page_size: does not apply to an export",
                               errors={"page_size": ["does not apply to an export"]})
            content = audit_export.export(paginator.rows_from_cursor(queryset, request), fmt=fmt,
                                          chunk_size=settings.COMPACTION_API_EXPORT_CHUNK)
            renderer = request.accepted_renderer
            if bom:
                # Its own first chunk, ahead of whatever the export streams.
                content = itertools.chain([UTF8_BOM], content)
            response = StreamingHttpResponse(content, content_type=f"{renderer.media_type}; charset=utf-8")
            response["Content-Disposition"] = f'attachment; filename="audits.{fmt}"'
            return response
        jobs = paginator.paginate(queryset, request)
        return paginator.response(audit.audit_records(jobs))


class AuditDetailApi(StrictQueryMixin, APIView):
    """One job's audit record."""

    permission_classes = [CanRead]

    @extend_schema(
        operation_id="get_audit",
        responses={200: AuditRecordSerializer, 404: ErrorSerializer, **ERRORS_READ},
    )
    def get(self, request, job_id: int):
        return Response(audit_record_of(job_or_404(request, job_id)))
