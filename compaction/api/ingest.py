"""``POST /api/v1/ingest/``: upsert one conversation document (SPEC §3).

Thin: the raw body is validated whole by ``conversations.documents`` (with
its own field-level messages, invalid UTF-8 included) and written by
``conversations.services.ingest``.
"""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import BaseParser
from rest_framework.response import Response
from rest_framework.views import APIView

from conversations import selectors
from conversations.documents import DocumentInvalid, parse_document_bytes
from conversations.services.ingest import conversation_ingest

from .permissions import CanIngest
from .plumbing import ApiError, ErrorSerializer, StrictQueryMixin


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
    only: the view validates the raw bytes itself (``documents``). Every
    rule of one field is here (no NUL, not blank, lengths, which roles may
    carry what); what spans fields is said in the descriptions: ids unique
    in the document, a ``run_id`` naming a run of the document or one
    already stored, a key never given twice, byte limits (a byte limit is
    stated as the same number of characters, the most it can allow)."""
    from conversations.documents import MAX_ID, MAX_SCOPE, MAX_TITLE, MESSAGE_ROLES, MESSAGE_STATUSES, RUN_STATUSES

    from .schema import NO_NUL, NOT_BLANK

    def text(max_length, **extra):
        return {"type": "string", "minLength": 1, "maxLength": max_length, "pattern": NOT_BLANK, **extra}

    timestamp = {"type": "string", "format": "date-time"}
    optional = {"nullable": True}  # null is read as "not given"
    content_limit = settings.INGEST_MAX_CONTENT_BYTES
    arguments_limit = settings.INGEST_MAX_TOOL_ARGUMENTS_BYTES
    metadata_limit = settings.INGEST_MAX_METADATA_BYTES
    no_calls = {"nullable": True, "type": "array", "maxItems": 0}
    message = {
        "type": "object", "additionalProperties": False, "required": ["id", "role", "created_at"],
        "properties": {
            "id": text(MAX_ID, description="unique among the document's messages"),
            "run_id": text(MAX_ID, **optional, description="a run of this document or one already stored"),
            "role": {"type": "string", "enum": sorted(MESSAGE_ROLES)},
            "content": {"type": "string", "maxLength": content_limit, "pattern": NO_NUL,
                        "description": f"at most {content_limit} bytes of UTF-8 (INGEST_MAX_CONTENT_BYTES)"},
            "status": {"type": "string", "enum": sorted(MESSAGE_STATUSES)},
            "created_at": timestamp,
            "tool_calls": {**optional, "type": "array", "description": "assistant messages only", "items": {
                "type": "object", "additionalProperties": False, "required": ["id", "name"],
                "properties": {
                    "id": text(MAX_ID), "name": text(MAX_ID),
                    "arguments": {
                        "description": f"JSON text, or an object or array (stored as its JSON text); at most "
                                       f"{arguments_limit} bytes of UTF-8 (INGEST_MAX_TOOL_ARGUMENTS_BYTES)",
                        "nullable": True,
                        "oneOf": [{"type": "string", "maxLength": arguments_limit, "pattern": NO_NUL},
                                  {"type": "object"}, {"type": "array"}],
                    },
                },
            }},
            "tool_call_id": text(MAX_ID, **optional, description="required (not null) on a tool message"),
        },
    }
    return {
        "type": "object",
        "description": "a conversation document (SPEC §3); validated whole, written in one transaction; "
                       "a key given twice in any object is refused",
        "additionalProperties": False,
        "required": ["scope", "id"],
        "properties": {
            "scope": text(MAX_SCOPE),
            "id": text(MAX_ID),
            "title": {"type": "string", "maxLength": MAX_TITLE, "pattern": NO_NUL, **optional},
            "metadata": {"type": "object", **optional,
                         "description": f"any JSON object without NUL in its texts; at most {metadata_limit} "
                                        "bytes as compact JSON (INGEST_MAX_METADATA_BYTES)"},
            "runs": {"type": "array", "items": {
                "type": "object", "additionalProperties": False, "required": ["id", "status"],
                "properties": {"id": text(MAX_ID, description="unique among the document's runs"),
                               "status": {"type": "string", "enum": sorted(RUN_STATUSES)},
                               "created_at": {**timestamp, **optional}},
            }},
            # Which role may carry what: a tool message answers a call
            # (tool_call_id required), only an assistant message makes calls.
            "messages": {"type": "array", "items": {"allOf": [message, {"oneOf": [
                {"properties": {"role": {"enum": ["assistant"]}}},
                {"properties": {"role": {"enum": sorted(MESSAGE_ROLES - {"assistant", "tool"})},
                                "tool_calls": no_calls}},
                {"properties": {"role": {"enum": ["tool"]}, "tool_calls": no_calls,
                                "tool_call_id": text(MAX_ID)},
                 "required": ["tool_call_id"]},
            ]}]}},
        },
    }


class IngestApi(StrictQueryMixin, APIView):
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
            result = conversation_ingest(document=document, actor=request.user.get_username())
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
