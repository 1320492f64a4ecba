"""REST plumbing shared by every endpoint (SPEC §11; issues 6 and 10).

One home for what every endpoint does the same way:

* **Errors.** Every 4xx is ``{"code", "message", "errors"?}``: ``ApiError``
  and ``api_exception_handler`` (validation errors keyed by field path).
* **Strict queries.** ``StrictQueryMixin``: a query parameter the endpoint
  does not know, or one given twice that is not a repeatable filter, is
  refused, never ignored; ``StrictFilterBackend`` validates every filter
  value (an empty one too).
* **Keyset cursors.** ``KeysetPagination``: pages after a row of a
  ``compaction.keyset.Keyset`` list, the one cursor scheme of the desk and
  the API.
* **Lookups.** ``conversation_or_404`` and ``job_or_404``: only inside the
  caller's scopes, a 404 otherwise.
* **Bodies.** Strict text and integer fields, the reason every operator
  action requires.
"""

from __future__ import annotations

from django.http import JsonResponse
from django.views import defaults
from django_filters import MultipleChoiceFilter
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import exceptions, serializers, status
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param
from rest_framework.views import exception_handler

from conversations import selectors as conversation_selectors

from .. import actions, audit
from ..actions import REASON_MAX_CHARS
from ..keyset import MAX_ID, InvalidCursor, Keyset

# --- errors -------------------------------------------------------------------------

class ApiError(exceptions.APIException):
    """An error with an explicit code, message and optional field errors."""

    def __init__(self, *, code: str, message: str, status_code: int = 400, errors: dict | None = None):
        self.status_code = status_code
        self.code = code
        self.message = message
        self.errors = errors
        super().__init__(detail=message, code=code)


_CODE_BY_CLASS = {
    exceptions.NotAuthenticated: "not_authenticated",
    exceptions.AuthenticationFailed: "authentication_failed",
    exceptions.PermissionDenied: "permission_denied",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.NotAcceptable: "not_acceptable",
    exceptions.UnsupportedMediaType: "unsupported_media_type",
    exceptions.Throttled: "throttled",
    exceptions.ParseError: "malformed_request",
    exceptions.ValidationError: "invalid",
}


def _flatten(detail, prefix="") -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    if isinstance(detail, dict):
        for key, value in detail.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            for k, v in _flatten(value, path).items():
                out.setdefault(k, []).extend(v)
    elif isinstance(detail, list):
        if all(not isinstance(x, (dict, list)) for x in detail):
            out.setdefault(prefix or "non_field_errors", []).extend(str(x) for x in detail)
        else:
            for i, value in enumerate(detail):
                for k, v in _flatten(value, f"{prefix}[{i}]").items():
                    out.setdefault(k, []).extend(v)
    else:
        out.setdefault(prefix or "non_field_errors", []).append(str(detail))
    return out


def api_exception_handler(exc, context):
    if isinstance(exc, ApiError):
        body = {"code": exc.code, "message": exc.message}
        if exc.errors:
            body["errors"] = exc.errors
        return Response(body, status=exc.status_code)
    response = exception_handler(exc, context)
    if response is None:
        return None
    code = next((c for cls, c in _CODE_BY_CLASS.items() if isinstance(exc, cls)), "error")
    if isinstance(exc, exceptions.ValidationError):
        errors = _flatten(exc.detail)
        first_path, first_msgs = next(iter(errors.items()), ("", ["invalid input"]))
        body = {"code": code, "message": f"{first_path}: {first_msgs[0]}" if first_path else first_msgs[0], "errors": errors}
    else:
        detail = exc.detail if hasattr(exc, "detail") else str(exc)
        body = {"code": code, "message": str(detail)}
    response.data = body
    return response



class ErrorSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    errors = serializers.DictField(child=serializers.ListField(child=serializers.CharField()), required=False)



def api_not_found(request, exception=None):
    """404 for a URL that matches no route: JSON under /api/, the usual page elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse({"code": "not_found", "message": f"no such endpoint: {request.path}"}, status=404)
    return defaults.page_not_found(request, exception)


def api_bad_request(request, exception=None):
    """400 Django itself answers (a suspicious request, e.g. a body over the
    upload limit or a bad Host): JSON under /api/."""
    if request.path.startswith("/api/"):
        return JsonResponse({"code": "bad_request", "message": "the request was refused as malformed"}, status=400)
    return defaults.bad_request(request, exception)


def api_permission_denied(request, exception=None):
    """403 Django itself answers outside DRF: JSON under /api/."""
    if request.path.startswith("/api/"):
        return JsonResponse({"code": "permission_denied", "message": "permission denied"}, status=403)
    return defaults.permission_denied(request, exception)


def api_server_error(request):
    """500: under /api/ in the API's error shape too, so a client can always
    read ``code``; the usual page elsewhere. Says nothing of the cause (it is
    in the server's log)."""
    if request.path.startswith("/api/"):
        return JsonResponse({"code": "server_error", "message": "the server failed to answer; try again"},
                            status=500)
    return defaults.server_error(request)


# --- strict queries ----------------------------------------------------------------

class StrictFormatNegotiation(DefaultContentNegotiation):
    """``?format=`` must name one of the endpoint's formats (DRF would 404)."""

    def filter_renderers(self, renderers, format):
        matching = [r for r in renderers if r.format == format]
        if not matching:
            formats = ", ".join(r.format for r in renderers)
            raise ApiError(code="invalid_format", message=f"format must be one of: {formats}",
                           errors={"format": [f"must be one of: {formats}"]})
        return matching


# The one strict-query rule. Every endpoint refuses a query parameter it
# does not know (``unknown_filter``) and one given twice that is not a
# repeatable filter (``invalid_filter``), after the role check, so an
# anonymous caller still gets 401 first. (A comment, not a docstring: the
# schema would show it as the description of every endpoint without one.)
class StrictQueryMixin:
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


# --- keyset cursors -----------------------------------------------------------------

class KeysetPagination:
    """Pages of a ``Keyset`` list (``compaction.keyset``, the one cursor
    scheme): ``page_size`` rows (1 to 500, default 50) after the row the
    ``cursor`` names. The answer links the next page (``next`` and
    ``next_cursor``), or, for a list that can be read back
    (``previous=True``), the next and the previous page."""

    cursor_query_param = "cursor"
    page_size_query_param = "page_size"
    query_params = (cursor_query_param, page_size_query_param)

    def __init__(self, keyset: Keyset, *, previous: bool = False, page_size: int = 50, max_page_size: int = 500):
        self.keyset = keyset
        self.previous = previous
        self.page_size = page_size
        self.max_page_size = max_page_size
        self.page = None
        self.request = None

    def page_size_of(self, request) -> int:
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        size = int(raw) if raw.isascii() and raw.isdigit() else 0
        if not 1 <= size <= self.max_page_size:
            message = f"page_size must be an integer from 1 to {self.max_page_size}"
            raise ApiError(code="invalid_filter", message=f"page_size: {message}", errors={"page_size": [message]})
        return size

    def _cursor(self, request) -> str | None:
        raw = request.query_params.get(self.cursor_query_param)
        if raw is None:
            return None
        try:
            _, backwards = self.keyset.decode(raw)
            if backwards and not self.previous:
                raise InvalidCursor("this list is only read forwards")
        except InvalidCursor as exc:
            raise ApiError(code="invalid_cursor", message=f"cursor: {exc}", errors={"cursor": [str(exc)]}) from None
        return raw

    def rows_from_cursor(self, queryset, request):
        """Every row after the cursor's (the start of an export)."""
        raw = self._cursor(request)
        return self.keyset.after(queryset, self.keyset.decode(raw)[0] if raw else None)

    def paginate(self, queryset, request) -> list:
        self.request = request
        size = self.page_size_of(request)
        self.page = self.keyset.page(queryset, cursor=self._cursor(request), size=size)
        return self.page.rows

    def _link(self, cursor: str | None) -> str | None:
        if cursor is None:
            return None
        return replace_query_param(self.request.build_absolute_uri(), self.cursor_query_param, cursor)

    def response(self, results: list) -> Response:
        if self.previous:
            return Response({"next": self._link(self.page.next_cursor),
                             "previous": self._link(self.page.previous_cursor), "results": results})
        return Response({"next": self._link(self.page.next_cursor), "next_cursor": self.page.next_cursor,
                         "results": results})


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
                raise ApiError(code="invalid_filter", message=f"{name}: {message}", errors={name: [message]})
            if name == self.page_size_query_param and int(value) > self.max_page_size:
                # Refused like every out-of-range value, not quietly cut to the maximum (DRF's way).
                message = f"page_size must be a whole number from 1 to {self.max_page_size}"
                raise ApiError(code="invalid_filter", message=f"page_size: {message}", errors={name: [message]})
        return super().paginate_queryset(queryset, request, view)

    @classmethod
    def schema_parameters(cls) -> list:
        """``page`` and ``page_size`` with the bounds the pagination enforces."""
        return [
            OpenApiParameter(cls.page_query_param, {"type": "string", "pattern": "^(0*[1-9][0-9]*|last)$"},
                             description="a page number from 1, or `last` (a page past the last is a 404)"),
            OpenApiParameter(cls.page_size_query_param,
                             {"type": "integer", "minimum": 1, "maximum": cls.max_page_size},
                             description=f"1 to {cls.max_page_size} (default {cls.page_size})"),
        ]


# --- lookups and action refusals ---------------------------------------------------

def refused(exc: actions.ActionRefused) -> ApiError:
    """An action's refusal as the API answers it."""
    if exc.code in ("reason_required", "reason_too_long"):
        return ApiError(code=exc.code, message=exc.message, errors={"reason": [exc.message]})
    if exc.code == "invalid_verdict":
        return ApiError(code=exc.code, message=exc.message, errors={"verdict": [exc.message]})
    if exc.code == actions.INVALID_CITATION:
        return ApiError(code=exc.code, message=exc.message, errors={"cited_findings": [exc.message]})
    # The request was well formed; the job's state does not allow it now.
    return ApiError(code=exc.code, message=exc.message, status_code=status.HTTP_409_CONFLICT)


def act(action, **kwargs):
    """Call one of ``compaction.actions``' ``do_*``; its refusal becomes the
    API's answer (``refused``)."""
    try:
        return action(**kwargs)
    except actions.ActionRefused as exc:
        raise refused(exc) from None


def job_or_404(request, job_id: int):
    job = audit.audit_job_get(user=request.user, job_id=job_id)
    if job is None:
        raise ApiError(code="not_found", message=f"no job {job_id} in your scopes", status_code=404)
    return job


def conversation_or_404(request, conversation_id: int):
    conversation = None
    if 1 <= conversation_id <= MAX_ID:
        conversation = conversation_selectors.conversation_get(user=request.user, conversation_id=conversation_id)
    if conversation is None:
        raise ApiError(code="not_found", message=f"no conversation {conversation_id} in your scopes", status_code=404)
    return conversation


# --- bodies and documented errors ---------------------------------------------------

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
    # for the text as sent; blank-only text is refused in ``valid_body``.
    reason = StrictCharField(max_length=REASON_MAX_CHARS, trim_whitespace=False,
                             help_text="why; kept in the activity log")


def valid_body(serializer: serializers.Serializer, *, reason_field: str) -> dict:
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


def reason_from(request) -> str:
    """The required reason of an operator action's body."""
    return valid_body(ReasonSerializer(data=request.data), reason_field="reason")["reason"]


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
# A cursor is opaque: base64url without padding, as this API issued it in a
# previous page's `next_cursor` (or `next` / `previous` link); any other is
# `400 invalid_cursor`.
CURSOR_SCHEMA = {"type": "string", "minLength": 1, "pattern": "^[A-Za-z0-9_-]+$"}
PAGE_PARAMS = [
    OpenApiParameter("cursor", CURSOR_SCHEMA,
                     description="the `next_cursor` of the previous page (base64url; only cursors this API issued)"),
    OpenApiParameter("page_size", {"type": "integer", "minimum": 1, "maximum": 500},
                     description="1 to 500 (default 50)"),
]
