"""Conversations: the list, one conversation, its pairs, segments and
generations (with their chain links, SPEC §7), and re-running its failed
ranges (SPEC §1, §4, §5, §11).

Thin: reads through ``conversations.selectors`` (narrowed to the caller's
scopes), the re-run through ``compaction.actions``.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field, extend_schema_view
from rest_framework import serializers, status
from rest_framework.parsers import JSONParser
from rest_framework.response import Response
from rest_framework.views import APIView

from conversations import selectors

from .. import actions
from ..generations import conversation_generation_get, conversation_generations
from ..keyset import ID, TIME, Keyset
from ..bindings.handoff import HANDOFF_KIND
from ..models import DriftCode, DriftKind, JobState
from .filters import ConversationFilter
from .ingest import SegmentSerializer
from .permissions import CanOperate, CanRead
from .plumbing import (ERRORS_READ, ERRORS_WRITE, PAGE_PARAMS, ApiError, CheckedPagePagination, ErrorSerializer,
                       KeysetPagination, ReasonSerializer,
                       StrictFilterBackend, StrictQueryMixin, act, conversation_or_404, reason_from)
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


# Newest activity first; the list can be read back (``previous``).
CONVERSATIONS = Keyset("conversations", ("-updated_at", "-id"), (TIME, ID))


class ConversationListApi(StrictQueryMixin, APIView):
    permission_classes = [CanRead]
    filterset_class = ConversationFilter
    allowed_query_params = KeysetPagination.query_params

    @extend_schema(
        operation_id="list_conversations",
        parameters=[
            OpenApiParameter("scope", {"type": "string", "minLength": 1}, description="only this scope"),
            OpenApiParameter("external_id", {"type": "string", "minLength": 1}, description="only this external id"),
            *PAGE_PARAMS,
        ],
        responses={200: _page_of(ConversationSerializer, counted=False), 400: ErrorSerializer, 401: ErrorSerializer},
    )
    def get(self, request):
        qs = StrictFilterBackend().filter_queryset(request, selectors.conversations_visible(user=request.user), self)
        paginator = KeysetPagination(CONVERSATIONS, previous=True)
        page = paginator.paginate(qs, request)
        return paginator.response(ConversationSerializer(page, many=True).data)


class ConversationDetailApi(StrictQueryMixin, APIView):
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


# A conversation's rows by page number; a subclass names its rows, their
# pagination and their serializer. (A comment: the schema would show a
# docstring as each endpoint's description.)
class _ConversationRowsApi(StrictQueryMixin, APIView):
    permission_classes = [CanRead]
    allowed_query_params = ("page", "page_size")
    rows_pagination = None
    rows_serializer = None

    def rows(self, conversation):
        raise NotImplementedError

    def get(self, request, conversation_id: int):
        conversation = conversation_or_404(request, conversation_id)
        paginator = self.rows_pagination()
        page = paginator.paginate_queryset(self.rows(conversation), request, view=self)
        return paginator.get_paginated_response(self.rows_serializer(page, many=True).data)


def _rows_api(name: str, *, operation_id: str, page_size: int, max_page_size: int, serializer, rows):
    """An endpoint listing ``rows(conversation=...)`` of one conversation,
    ``page_size`` rows a page by default, at most ``max_page_size``."""
    pagination = type(name.removesuffix("Api") + "Pagination", (CheckedPagePagination,), {
        "page_size": page_size, "page_size_query_param": "page_size", "max_page_size": max_page_size,
        "__module__": __name__,
    })
    view = type(name, (_ConversationRowsApi,), {
        "rows_pagination": pagination, "rows_serializer": serializer,
        "rows": lambda self, conversation: rows(conversation=conversation), "__module__": __name__,
    })
    return extend_schema_view(get=extend_schema(
        operation_id=operation_id, parameters=pagination.schema_parameters(),
        responses={200: _page_of(serializer, counted=True), 400: ErrorSerializer, 404: ErrorSerializer}))(view)


ConversationPairsApi = _rows_api("ConversationPairsApi", operation_id="list_pairs", page_size=50, max_page_size=200,
                                 serializer=PairSerializer, rows=selectors.conversation_pairs)


ConversationSegmentsApi = _rows_api("ConversationSegmentsApi", operation_id="list_segments",
                                    page_size=100, max_page_size=1000, serializer=SegmentSerializer,
                                    rows=selectors.conversation_segments)


class ChainBreakRefSerializer(serializers.Serializer):
    generation = serializers.IntegerField(allow_null=True)
    pair = serializers.IntegerField()


class DriftFindingSerializer(serializers.Serializer):
    """One drift finding of a hand-off note (SPEC §8)."""

    id = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=DriftKind.choices, help_text="wrong, extra, lost or length")
    code = serializers.ChoiceField(choices=DriftCode.choices)
    section = serializers.CharField(allow_null=True, help_text="the note's section; null: the whole note")
    line = serializers.IntegerField(allow_null=True, help_text="1-based line of the note's text; null: the "
                                                               "whole note")
    message_ids = serializers.ListField(child=serializers.CharField(), help_text="the messages that prove it")
    detail = serializers.CharField(allow_blank=True, help_text="what the finding says, in words")
    subject = serializers.CharField(allow_blank=True, help_text="the words it is about (a quote, a value, "
                                                                "a condition)")


class GenerationSerializer(serializers.Serializer):
    """One generation and its place in its chain (SPEC §7, §11)."""

    id = serializers.IntegerField()
    number = serializers.IntegerField(help_text="numbered per conversation, in the order written")
    kind = serializers.CharField(help_text="segment, or handoff (a rolling hand-off note)")
    job = serializers.IntegerField(source="job_id")
    from_pair = serializers.IntegerField()
    to_pair = serializers.IntegerField()
    parent = serializers.IntegerField(source="parent_id", allow_null=True,
                                      help_text="the generation whose note this one was written from")
    parent_digest = serializers.SerializerMethodField(help_text="SHA-256 of the parent note's text")
    message_ids = serializers.ListField(child=serializers.CharField())
    source_digest = serializers.CharField()
    current_digest = serializers.CharField(allow_null=True,
                                           help_text="the digest of the same pairs as stored now")
    valid = serializers.BooleanField(help_text="its source still matches (and, for a hand-off note, its chain "
                                               "is intact): projections may use it")
    chain_break = serializers.SerializerMethodField()
    model = serializers.CharField(source="model_id")
    prompt_version = serializers.CharField(source="prompt_version.name")
    text = serializers.CharField()
    text_bytes = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    drift_checked = serializers.SerializerMethodField(
        help_text="hand-off notes: whether its drift report was computed (null for segment summaries)")
    drift = serializers.SerializerMethodField(
        help_text="hand-off notes: its drift findings (SPEC §8), in the note's order; null for segment summaries")

    def get_parent_digest(self, generation) -> str | None:
        return generation.parent_digest or None

    @extend_schema_field(ChainBreakRefSerializer(allow_null=True))
    def get_chain_break(self, generation) -> dict | None:
        if generation.break_pair is None:
            return None
        return {"generation": generation.break_generation_id, "pair": generation.break_pair}

    def get_drift_checked(self, generation) -> bool | None:
        if generation.kind != HANDOFF_KIND:
            return None
        return hasattr(generation, "drift_report")

    @extend_schema_field(DriftFindingSerializer(many=True, allow_null=True))
    def get_drift(self, generation) -> list | None:
        if generation.kind != HANDOFF_KIND:
            return None
        return DriftFindingSerializer(generation.drift_findings.all(), many=True).data


ConversationGenerationsApi = _rows_api("ConversationGenerationsApi", operation_id="list_generations",
                                       page_size=50, max_page_size=200, serializer=GenerationSerializer,
                                       rows=conversation_generations)


class ConversationGenerationApi(StrictQueryMixin, APIView):
    """One generation of a conversation, with its drift findings."""

    permission_classes = [CanRead]

    @extend_schema(operation_id="get_generation",
                   responses={200: GenerationSerializer, 404: ErrorSerializer, **ERRORS_READ})
    def get(self, request, conversation_id: int, generation_id: int):
        conversation = conversation_or_404(request, conversation_id)
        generation = conversation_generation_get(conversation=conversation, generation_id=generation_id)
        if generation is None:
            raise ApiError(code="not_found", message=f"no generation {generation_id} in conversation "
                                                     f"{conversation_id}", status_code=404)
        return Response(GenerationSerializer(generation).data)


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
        jobs = act(actions.do_conversation_rerun, conversation=conversation, actor=request.user, reason=reason)
        body = {
            "conversation": conversation.pk,
            "jobs": [
                {"id": j.pk, "from_pair": j.from_pair, "to_pair": j.to_pair,
                 "prompt_version": j.prompt_version.name, "state": j.state}
                for j in jobs
            ],
        }
        return Response(body, status=status.HTTP_202_ACCEPTED)
