"""Shared REST plumbing: the error shape and role permissions.

Every 4xx carries a machine-readable ``code`` and a human ``message``;
validation errors add ``errors`` keyed by field path.
"""

from __future__ import annotations

from rest_framework import exceptions, permissions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler

from . import roles


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


class CanRead(permissions.BasePermission):
    message = "your account has no role that may read this"

    def has_permission(self, request, view):
        return roles.can_read(request.user)


class CanIngest(permissions.BasePermission):
    message = "only integrators, operators and staff may ingest conversations"

    def has_permission(self, request, view):
        return roles.can_ingest(request.user)


class CanReview(permissions.BasePermission):
    message = "only support staff, operators and staff may record verdicts"

    def has_permission(self, request, view):
        return roles.can_review(request.user)


class CanOperate(permissions.BasePermission):
    message = "only operators and staff may do this"

    def has_permission(self, request, view):
        return roles.can_operate(request.user)


__all__ = ["ApiError", "api_exception_handler", "CanRead", "CanIngest", "CanReview", "CanOperate", "status"]
