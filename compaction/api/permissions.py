"""Who may call what (SPEC §1; ``compaction.roles`` holds the rules)."""

from __future__ import annotations

from rest_framework import permissions

from .. import roles


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


class CanAssemble(permissions.BasePermission):
    message = "only integrators, operators and staff may assemble context (support: the desk inspector)"

    def has_permission(self, request, view):
        return roles.can_assemble(request.user)
