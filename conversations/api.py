"""REST endpoints for ingest and reading conversations (SPEC §3, §8).

Thin: each class parses input, calls one service or selector, renders.
"""

from __future__ import annotations

from datetime import timezone as dt_timezone

from django.conf import settings
from django.utils.dateparse import parse_datetime
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.pagination import CursorPagination, PageNumberPagination, _reverse_ordering
from rest_framework.parsers import BaseParser
from rest_framework.response import Response
from rest_framework.views import APIView

from compaction.keyset import rows_after
from compaction.rest import ApiError, CanIngest, CanRead

from . import selectors
from .services import ingest as services
from .documents import DocumentInvalid, parse_document_bytes


class ErrorSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    errors = serializers.DictField(child=serializers.ListField(child=serializers.CharField()), required=False)


class RawJSONParser(BaseParser):
    """Hands the body through untouched so the document is validated whole,
    with our own field-level messages (including invalid UTF-8)."""

    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.INGEST_MAX_DOCUMENT_BYTES
        data = stream.read(limit + 1) if stream is not None else b""
        return data


class SegmentSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    from_pair = serializers.IntegerField()
    to_pair = serializers.IntegerField()
    message_ids = serializers.ListField(child=serializers.CharField())
    digest = serializers.CharField(help_text="current source digest (SHA-256 hex) of the range")
    user_bytes = serializers.IntegerField()
    assistant_bytes = serializers.IntegerField()


def _document_schema() -> dict:
    """The ingest document (SPEC §3) as JSON Schema, for the OpenAPI schema
    only: the view validates the raw bytes itself (``documents``), including
    rules a schema cannot say (unique ids, run references, no NUL)."""
    from .documents import MAX_ID, MAX_SCOPE, MAX_TITLE, MESSAGE_ROLES, MESSAGE_STATUSES, RUN_STATUSES

    def text(max_length, **extra):
        return {"type": "string", "minLength": 1, "maxLength": max_length, **extra}

    timestamp = {"type": "string", "format": "date-time"}
    optional = {"nullable": True}  # null is read as "not given"
    return {
        "type": "object",
        "description": "a conversation document (SPEC §3); validated whole, written in one transaction",
        "additionalProperties": False,
        "required": ["scope", "id"],
        "properties": {
            "scope": text(MAX_SCOPE),
            "id": text(MAX_ID),
            "title": {"type": "string", "maxLength": MAX_TITLE, **optional},
            "metadata": {"type": "object", **optional},
            "runs": {"type": "array", "items": {
                "type": "object", "additionalProperties": False, "required": ["id", "status"],
                "properties": {"id": text(MAX_ID), "status": {"type": "string", "enum": sorted(RUN_STATUSES)},
                               "created_at": {**timestamp, **optional}},
            }},
            "messages": {"type": "array", "items": {
                "type": "object", "additionalProperties": False, "required": ["id", "role", "created_at"],
                "properties": {
                    "id": text(MAX_ID),
                    "run_id": text(MAX_ID, **optional),
                    "role": {"type": "string", "enum": sorted(MESSAGE_ROLES)},
                    "content": {"type": "string"},
                    "status": {"type": "string", "enum": sorted(MESSAGE_STATUSES)},
                    "created_at": timestamp,
                    "tool_calls": {**optional, "type": "array", "items": {
                        "type": "object", "required": ["id", "name"],
                        "properties": {"id": text(MAX_ID), "name": text(MAX_ID),
                                       "arguments": {"description": "JSON text, or an object or array"}},
                    }},
                    "tool_call_id": text(MAX_ID, **optional),
                },
            }},
        },
    }


class IngestApi(APIView):
    """Upsert one conversation document (SPEC §3)."""

    permission_classes = [CanIngest]
    parser_classes = [RawJSONParser]

    class OutputSerializer(serializers.Serializer):
        conversation = serializers.IntegerField(help_text="the conversation's id in this service")
        scope = serializers.CharField()
        external_id = serializers.CharField()
        created = serializers.BooleanField()
        changed = serializers.BooleanField()
        pair_count = serializers.IntegerField()
        messages_created = serializers.IntegerField()
        messages_updated = serializers.IntegerField()
        revisions_created = serializers.IntegerField()
        segments = SegmentSerializer(many=True)

    @extend_schema(
        operation_id="ingest_conversation",
        request={"application/json": _document_schema()},
        responses={200: OutputSerializer, 201: OutputSerializer, 400: ErrorSerializer, 401: ErrorSerializer, 403: ErrorSerializer},
    )
    def post(self, request):
        raw = request.data if isinstance(request.data, bytes) else b""
        try:
            document = parse_document_bytes(raw)
        except DocumentInvalid as exc:
            raise ApiError(code="invalid_document", message=str(exc), errors=exc.errors) from None
        if not selectors.user_can_see_scope(request.user, document.scope):
            raise ApiError(
                code="scope_forbidden",
                message=f"this token may not write to scope {document.scope!r}",
                status_code=status.HTTP_403_FORBIDDEN,
                errors={"scope": [f"not granted: {document.scope!r}"]},
            )
        try:
            result = services.conversation_ingest(document=document, actor=request.user.get_username())
        except DocumentInvalid as exc:
            raise ApiError(code="invalid_document", message=str(exc), errors=exc.errors) from None
        conv = result.conversation
        body = {
            "conversation": conv.pk,
            "scope": conv.scope,
            "external_id": conv.external_id,
            "created": result.created,
            "changed": result.changed,
            "pair_count": result.pair_count,
            "messages_created": result.messages_created,
            "messages_updated": result.messages_updated,
            "revisions_created": result.revisions_created,
            "segments": SegmentSerializer(result.segments, many=True).data,
        }
        return Response(body, status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)


class ConversationSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    scope = serializers.CharField()
    external_id = serializers.CharField()
    title = serializers.CharField()
    metadata = serializers.JSONField()
    pair_count = serializers.IntegerField()
    segment_count = serializers.IntegerField()
    message_count = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    last_activity_at = serializers.DateTimeField(allow_null=True)


def _page_of(serializer_class, *, counted: bool):
    """The documented shape of a paginated list (schemathesis: a bare array
    was documented while an object with ``results`` was returned)."""
    fields = {
        "next": serializers.URLField(allow_null=True),
        "previous": serializers.URLField(allow_null=True),
        "results": serializer_class(many=True),
    }
    if counted:
        fields["count"] = serializers.IntegerField()
    return type(f"{serializer_class.__name__.removesuffix('Serializer')}PageSerializer", (serializers.Serializer,), fields)


class ConversationCursor(CursorPagination):
    """DRF's cursor pagination, keyed by the whole ordering.

    DRF positions a cursor by ``updated_at`` alone and steps over ties with
    an offset, so when a conversation already read that shares the last
    timestamp of a page (one COPY import group shares one) gets new
    activity, the offset skips a conversation that never changed. Here a
    position is ``updated_at|id``, unique, so the next page is the rows after
    that row in ``(updated_at, id)`` order (``compaction.keyset``), however
    the rows around it move. A position without ``|id`` (a cursor issued
    before) still reads as DRF read it.
    """

    ordering = ("-updated_at", "-id")
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500

    def decode_cursor(self, request):
        # DRF answers a malformed cursor with 404; it is a bad request.
        try:
            cursor = super().decode_cursor(request)
        except NotFound:
            raise self._invalid() from None
        if cursor is None or cursor.position is None:
            return cursor
        # A position that is no time (or an offset PostgreSQL refuses) would
        # be a server error once compared with updated_at.
        text, _, pk = cursor.position.partition("|")
        try:
            moment = parse_datetime(text)
            moment = moment.astimezone(dt_timezone.utc) if moment is not None and moment.tzinfo else None
            pk = int(pk) if pk else None
        except (ValueError, OverflowError):
            moment = None
        if moment is None or (pk is not None and not 1 <= pk <= 2**63 - 1):
            raise self._invalid()
        return cursor._replace(position=self._position(moment, pk))

    @staticmethod
    def _invalid() -> ApiError:
        return ApiError(code="invalid_cursor", message="cursor: not a cursor this API issued",
                        errors={"cursor": ["not a cursor this API issued"]})

    @staticmethod
    def _position(moment, pk) -> str:
        return str(moment) if pk is None else f"{moment}|{pk}"

    def _get_position_from_instance(self, instance, ordering):
        return self._position(instance.updated_at, instance.pk)

    def _after(self, queryset, position: str, *, reverse: bool):
        """The rows after ``position`` in the order read (DRF filtered by
        ``updated_at`` alone)."""
        text, _, pk = position.partition("|")
        moment = parse_datetime(text)
        order = list(self.ordering if not reverse else _reverse_ordering(self.ordering))
        if pk:
            return rows_after(queryset, order=order, position=[moment, int(pk)])
        lookup = "updated_at__lt" if order[0].startswith("-") else "updated_at__gt"
        return queryset.filter(**{lookup: moment}).order_by(*order)

    def paginate_queryset(self, queryset, request, view=None):
        # DRF's, but for the filter on the position (see _after).
        self.request = request
        self.page_size = self.get_page_size(request)
        if not self.page_size:
            return None
        self.base_url = request.build_absolute_uri()
        self.ordering = self.get_ordering(request, queryset, view)
        self.cursor = self.decode_cursor(request)
        if self.cursor is None:
            (offset, reverse, current_position) = (0, False, None)
        else:
            (offset, reverse, current_position) = self.cursor
        if current_position is not None:
            queryset = self._after(queryset, current_position, reverse=reverse)
        else:
            queryset = queryset.order_by(*(_reverse_ordering(self.ordering) if reverse else self.ordering))
        results = list(queryset[offset:offset + self.page_size + 1])
        self.page = list(results[:self.page_size])
        if len(results) > len(self.page):
            has_following_position = True
            following_position = self._get_position_from_instance(results[-1], self.ordering)
        else:
            has_following_position = False
            following_position = None
        if reverse:
            self.page = list(reversed(self.page))
            self.has_next = (current_position is not None) or (offset > 0)
            self.has_previous = has_following_position
            if self.has_next:
                self.next_position = current_position
            if self.has_previous:
                self.previous_position = following_position
        else:
            self.has_next = has_following_position
            self.has_previous = (current_position is not None) or (offset > 0)
            if self.has_next:
                self.next_position = following_position
            if self.has_previous:
                self.previous_position = current_position
        if (self.has_previous or self.has_next) and self.template is not None:
            self.display_page_controls = True
        return self.page


class ConversationListApi(APIView):
    permission_classes = [CanRead]

    class FilterSerializer(serializers.Serializer):
        scope = serializers.CharField(required=False)
        external_id = serializers.CharField(required=False)
        cursor = serializers.CharField(required=False)
        page_size = serializers.IntegerField(required=False, min_value=1, max_value=500)

    @extend_schema(
        operation_id="list_conversations",
        parameters=[
            OpenApiParameter("scope", str, description="only this scope"),
            OpenApiParameter("external_id", str, description="only this external id"),
            OpenApiParameter("cursor", str),
            OpenApiParameter("page_size", int),
        ],
        responses={200: _page_of(ConversationSerializer, counted=False), 400: ErrorSerializer, 401: ErrorSerializer},
    )
    def get(self, request):
        unknown = set(request.query_params) - set(self.FilterSerializer().fields)
        if unknown:
            raise ApiError(code="unknown_filter", message=f"unknown query parameter(s): {', '.join(sorted(unknown))}")
        repeated = sorted(name for name, values in request.query_params.lists() if len(values) > 1)
        if repeated:
            raise ApiError(code="invalid", message=f"{repeated[0]}: given more than once",
                           errors={name: ["given more than once"] for name in repeated})
        if request.query_params.get("page_size") == "":
            # DRF reads an empty optional value as "not given"; the schema says integer.
            raise ApiError(code="invalid", message="page_size: must be an integer",
                           errors={"page_size": ["must be an integer"]})
        filters = self.FilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        qs = selectors.conversations_visible(user=request.user)
        if "scope" in filters.validated_data:
            qs = qs.filter(scope=filters.validated_data["scope"])
        if "external_id" in filters.validated_data:
            qs = qs.filter(external_id=filters.validated_data["external_id"])
        paginator = ConversationCursor()
        page = paginator.paginate_queryset(qs, request, view=self)
        return paginator.get_paginated_response(ConversationSerializer(page, many=True).data)


def _conversation_or_404(request, conversation_id: int):
    conversation = selectors.conversation_get(user=request.user, conversation_id=conversation_id)
    if conversation is None:
        raise ApiError(code="not_found", message=f"no conversation {conversation_id} in your scopes", status_code=404)
    return conversation


class ConversationDetailApi(APIView):
    permission_classes = [CanRead]

    @extend_schema(operation_id="get_conversation", responses={200: ConversationSerializer, 404: ErrorSerializer})
    def get(self, request, conversation_id: int):
        return Response(ConversationSerializer(_conversation_or_404(request, conversation_id)).data)


class MessageRefSerializer(serializers.Serializer):
    id = serializers.CharField()
    text = serializers.CharField()


class PairSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    run = serializers.CharField(source="run.external_id")
    run_status = serializers.CharField(source="run.status")
    user = serializers.SerializerMethodField()
    assistant = serializers.SerializerMethodField()

    @extend_schema_field(MessageRefSerializer)
    def get_user(self, pair) -> dict:
        return {"id": pair.user_message.external_id, "text": pair.user_message.content}

    @extend_schema_field(MessageRefSerializer)
    def get_assistant(self, pair) -> dict:
        return {"id": pair.assistant_message.external_id, "text": pair.assistant_message.content}


class CheckedPagePagination(PageNumberPagination):
    """DRF's page numbers, but a ``page`` or ``page_size`` that is not a
    positive number is a 400 naming the parameter (DRF answers the first
    with 404 "Invalid page." and ignores the second); a page past the last
    stays a 404."""

    def paginate_queryset(self, queryset, request, view=None):
        for name in (self.page_query_param, self.page_size_query_param):
            value = request.query_params.get(name)
            if value is None or (name == self.page_query_param and value in self.last_page_strings):
                continue
            if not (value.isascii() and value.isdigit() and int(value) >= 1):
                message = f"{name} must be a whole number from 1"
                raise ApiError(code="invalid_page", message=message, errors={name: [message]})
        return super().paginate_queryset(queryset, request, view)


class PairPagination(CheckedPagePagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200


class ConversationPairsApi(APIView):
    permission_classes = [CanRead]

    @extend_schema(operation_id="list_pairs",
                   responses={200: _page_of(PairSerializer, counted=True), 400: ErrorSerializer, 404: ErrorSerializer})
    def get(self, request, conversation_id: int):
        conversation = _conversation_or_404(request, conversation_id)
        paginator = PairPagination()
        page = paginator.paginate_queryset(selectors.conversation_pairs(conversation=conversation), request, view=self)
        return paginator.get_paginated_response(PairSerializer(page, many=True).data)


class SegmentPagination(CheckedPagePagination):
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000


class ConversationSegmentsApi(APIView):
    permission_classes = [CanRead]

    @extend_schema(operation_id="list_segments",
                   responses={200: _page_of(SegmentSerializer, counted=True), 400: ErrorSerializer,
                              404: ErrorSerializer})
    def get(self, request, conversation_id: int):
        conversation = _conversation_or_404(request, conversation_id)
        paginator = SegmentPagination()
        page = paginator.paginate_queryset(
            selectors.conversation_segments(conversation=conversation), request, view=self
        )
        return paginator.get_paginated_response(SegmentSerializer(page, many=True).data)
