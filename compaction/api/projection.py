"""``GET /api/v1/conversations/{id}/projection`` (SPEC §6).

Thin: parse and validate the query, check the conversation is in the
caller's scopes, call ``context.projection.conversation_projection``, render. Every
refusal is a 4xx with a code and a message naming what is wrong.
"""

from __future__ import annotations

import logging
import re

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer
from rest_framework.settings import api_settings
from rest_framework.response import Response
from rest_framework.views import APIView

from ..context.budget import ProjectionInvalid, max_budget_bytes, max_budget_tokens
from ..context.formats import FORMATS
from ..context.packing import DEFAULT_PREFER, PREFERENCES
from ..context.omitted import Account
from ..context.projection import ProjectionInconsistent, conversation_projection, projection_validate
from .permissions import CanRead
from .plumbing import ApiError, StrictQueryMixin, conversation_or_404

logger = logging.getLogger(__name__)

_WHOLE_NUMBER = re.compile(r"-?[0-9]+")


def _int_param(request, name: str, *, required: bool) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        if required:
            raise ApiError(code="missing_budget", message=f"{name} is required: the UTF-8 byte budget for the projection",
                           errors={name: ["this parameter is required"]})
        return None
    # ASCII digits only: int() would also take "1_000" or non-ASCII digits.
    if not _WHOLE_NUMBER.fullmatch(raw) or len(raw) > 20:
        shown = raw if len(raw) <= 40 else raw[:40] + "…"
        raise ApiError(code="invalid_budget", message=f"{name} must be a whole number, got {shown!r}",
                       errors={name: [f"not a whole number: {shown!r}"]})
    return int(raw)


_ERROR = inline_serializer(
    "ProjectionError",
    fields={"code": serializers.CharField(), "message": serializers.CharField(),
            "errors": serializers.DictField(required=False)},
)


class ProjectionJSONRenderer(JSONRenderer):
    """JSON, with the account's shared omitted prefix spliced in from its
    cached encoding instead of encoded again entry by entry: the response
    for a 10,000-pair history under a small budget then costs about what
    the budget costs. The bytes are the same JSON an encoder would write."""

    def render(self, data, accepted_media_type=None, renderer_context=None):
        pairs = data.get("pairs") if isinstance(data, dict) else None
        if (
            not isinstance(pairs, Account)
            or not pairs.omitted
            or pairs.omitted_json is None
            or self.get_indent(accepted_media_type, renderer_context or {})
            or next(reversed(data)) != "pairs"
        ):
            return super().render(data, accepted_media_type, renderer_context)
        head = super().render({k: v for k, v in data.items() if k != "pairs"}, accepted_media_type, renderer_context)
        rest = super().render(list(pairs[pairs.omitted:]), accepted_media_type, renderer_context)[1:-1]
        return b"".join([
            head[:-1], b',"pairs":[', pairs.omitted_json.encode("utf-8"), b"," if rest else b"", rest, b"]}",
        ])


class _NoFormatOverride:
    URL_FORMAT_OVERRIDE = None

    def __getattr__(self, name):
        return getattr(api_settings, name)


class ProjectionNegotiation(DefaultContentNegotiation):
    """``format`` is this endpoint's own parameter (blocks|openai), not DRF's
    renderer override; the response is always JSON-negotiated by Accept."""

    settings = _NoFormatOverride()


class ConversationProjectionApi(StrictQueryMixin, APIView):
    """What the agent's next run is given: summaries and raw pairs within a
    budget, with an account of every pair (SPEC §6)."""

    permission_classes = [CanRead]
    allowed_query_params = ("budget_bytes", "budget_tokens", "format", "prefer")
    content_negotiation_class = ProjectionNegotiation
    renderer_classes = [ProjectionJSONRenderer, BrowsableAPIRenderer]

    @extend_schema(
        operation_id="get_projection",
        parameters=[
            OpenApiParameter("budget_bytes", int, required=True,
                             description=f"UTF-8 byte budget, 1..{max_budget_bytes()}"),
            OpenApiParameter("budget_tokens", int, description=f"optional cl100k token budget, 1..{max_budget_tokens()}"),
            OpenApiParameter("format", str, enum=list(FORMATS), description="blocks (default) or openai"),
            OpenApiParameter(
                "prefer", str, enum=list(PREFERENCES),
                description=(
                    "raw (default): the whole history raw when it fits; otherwise the longest unbroken history, "
                    "the oldest segments as their summaries and the newest raw. summary: every usable summary "
                    "in place of its pairs (a stable, prompt-cache-friendly prefix). Either way a summary not "
                    "cheaper than its raw pairs is never given."
                ),
            ),
        ],
        responses={
            200: inline_serializer(
                "Projection",
                fields={
                    "conversation": serializers.IntegerField(),
                    "scope": serializers.CharField(),
                    "external_id": serializers.CharField(),
                    "format": serializers.ChoiceField(choices=FORMATS),
                    "budget": serializers.DictField(help_text="{bytes, tokens}"),
                    "used": serializers.DictField(help_text="{bytes, tokens}: what the returned texts use"),
                    "complete": serializers.BooleanField(help_text="false whenever any pair was omitted"),
                    "prefer": serializers.ChoiceField(choices=PREFERENCES, help_text="the packing preference used"),
                    "tokenizer": serializers.CharField(allow_null=True),
                    "blocks": serializers.ListField(child=serializers.DictField(), required=False,
                                                    help_text="format=blocks: summary and raw blocks, chronological"),
                    "messages": serializers.ListField(child=serializers.DictField(), required=False,
                                                      help_text="format=openai: Chat Completions messages"),
                    "pairs": serializers.ListField(child=serializers.DictField(),
                                                   help_text="every pair index once: {index, as, reason}"),
                },
            ),
            400: _ERROR, 401: _ERROR, 403: _ERROR, 404: _ERROR,
        },
    )
    def get(self, request, conversation_id: int):
        budget_bytes = _int_param(request, "budget_bytes", required=True)
        budget_tokens = _int_param(request, "budget_tokens", required=False)
        fmt = request.query_params.get("format", "blocks")
        prefer = request.query_params.get("prefer", DEFAULT_PREFER)
        try:
            projection_validate(budget_bytes=budget_bytes, budget_tokens=budget_tokens, format=fmt, prefer=prefer)
        except ProjectionInvalid as exc:
            raise ApiError(code=exc.code, message=exc.message, errors={exc.field: [exc.message]}) from None
        conversation = conversation_or_404(request, conversation_id)
        try:
            body = conversation_projection(
                conversation=conversation, budget_bytes=budget_bytes, budget_tokens=budget_tokens, format=fmt,
                prefer=prefer,
            )
        except ProjectionInvalid as exc:
            raise ApiError(code=exc.code, message=exc.message, errors={exc.field: [exc.message]}) from None
        except ProjectionInconsistent as exc:
            # Stored sizes disagree with stored texts: a bug upstream. Say so
            # rather than hand the agent a budget that is not true.
            logger.error("projection refused: %s", exc)
            raise ApiError(code="projection_inconsistent", message=str(exc), status_code=500) from None
        return Response(body)
