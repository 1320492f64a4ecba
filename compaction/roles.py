"""Who may do what (SPEC §1).

Roles are Django groups: ``support`` reads its scopes and records verdicts,
``operator`` does everything support does plus re-runs and attempt grants,
``integrator`` pushes conversations in and pulls projections and audits out.
Staff users administer and may do everything, in every scope.
"""

from __future__ import annotations

SUPPORT = "support"
OPERATOR = "operator"
INTEGRATOR = "integrator"
ROLES = (SUPPORT, OPERATOR, INTEGRATOR)


def _groups(user) -> frozenset[str]:
    cached = getattr(user, "_compaction_groups", None)
    if cached is None:
        cached = frozenset(user.groups.values_list("name", flat=True))
        user._compaction_groups = cached
    return cached


def is_staff(user) -> bool:
    return bool(user and user.is_authenticated and (user.is_staff or user.is_superuser))


def can_read(user) -> bool:
    """Reading conversations and summaries: every role."""
    return is_staff(user) or bool(user and user.is_authenticated and _groups(user) & set(ROLES))


def can_use_desk(user) -> bool:
    """The desk's pages are for the people who review and repair: support,
    operators and staff. Integrators work through the API."""
    return is_staff(user) or bool(user and user.is_authenticated and _groups(user) & {SUPPORT, OPERATOR})


def can_review(user) -> bool:
    return is_staff(user) or bool(user and user.is_authenticated and _groups(user) & {SUPPORT, OPERATOR})


def can_operate(user) -> bool:
    return is_staff(user) or bool(user and user.is_authenticated and OPERATOR in _groups(user))


def can_assemble(user) -> bool:
    """``POST /api/v1/context/assemble`` (SPEC §9): integrators, operators and
    staff. Support staff look at assembly through the desk inspector only."""
    return is_staff(user) or bool(user and user.is_authenticated and _groups(user) & {INTEGRATOR, OPERATOR})


def can_ingest(user) -> bool:
    return is_staff(user) or bool(user and user.is_authenticated and _groups(user) & {INTEGRATOR, OPERATOR})
