"""Conversations: the list, one conversation, its pairs and segments, and
re-running its failed ranges (SPEC §1, §4, §5, §11).

Thin: reads through ``conversations.selectors`` (narrowed to the caller's
scopes), the re-run through ``compaction.operations``.
"""

from __future__ import annotations

from datetime import timezone as dt_timezone

from django.utils.dateparse import parse_datetime
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.pagination import CursorPagination, _reverse_ordering
from rest_framework.parsers import JSONParser
from rest_framework.response import Response
from rest_framework.views import APIView

from conversations import selectors

from .. import operations
from ..keyset import rows_after
from ..models import JobState
from .ingest import SegmentSerializer
from .permissions import CanOperate, CanRead
from .plumbing import (ERRORS_WRITE, ApiError, CheckedPagePagination, ErrorSerializer, ReasonSerializer,
                       StrictQueryMixin, conversation_or_404, reason_from, refused)
from .throttles import WriteRateThrottle


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


class ConversationDetailApi(APIView):
    permission_classes = [CanRead]

    @extend_schema(operation_id="get_conversation", responses={200: ConversationSerializer, 404: ErrorSerializer})
    def get(self, request, conversation_id: int):
        return Response(ConversationSerializer(conversation_or_404(request, conversation_id)).data)


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


class PairPagination(CheckedPagePagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200


class ConversationPairsApi(APIView):
    permission_classes = [CanRead]

    @extend_schema(operation_id="list_pairs",
                   responses={200: _page_of(PairSerializer, counted=True), 400: ErrorSerializer, 404: ErrorSerializer})
    def get(self, request, conversation_id: int):
        conversation = conversation_or_404(request, conversation_id)
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
        conversation = conversation_or_404(request, conversation_id)
        paginator = SegmentPagination()
        page = paginator.paginate_queryset(
            selectors.conversation_segments(conversation=conversation), request, view=self
        )
        return paginator.get_paginated_response(SegmentSerializer(page, many=True).data)


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
        conversation = conversation_or_404(request, conversation_id)
        reason = reason_from(request)
        try:
            jobs = operations.conversation_rerun(conversation=conversation, actor=request.user, reason=reason)
        except operations.ActionRefused as exc:
            raise refused(exc) from None
        body = {
            "conversation": conversation.pk,
            "jobs": [
                {"id": j.pk, "from_pair": j.from_pair, "to_pair": j.to_pair,
                 "prompt_version": j.prompt_version.name, "state": j.state}
                for j in jobs
            ],
        }
        return Response(body, status=status.HTTP_202_ACCEPTED)
