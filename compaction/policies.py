"""Which policy a scope follows (SPEC §7): reads of ``ScopePolicy``.

A scope without a row follows segments (SPEC §5, the default). Changing a
policy is an administrator's action (``actions.do_scope_policy_set``: the
admin and ``manage.py scope_policy``), recorded in the activity log.
"""

from __future__ import annotations

from collections.abc import Iterable

from .handoff.trigger import DEFAULT_THRESHOLDS, RollingThresholds
from .models import Policy, ScopePolicy


def scope_policy_get(scope: str) -> ScopePolicy | None:
    return ScopePolicy.objects.filter(scope=scope).first()


def is_rolling(scope: str) -> bool:
    return ScopePolicy.objects.filter(scope=scope, policy=Policy.ROLLING).exists()


def rolling_scopes(scopes: Iterable[str] | None = None) -> set[str]:
    """The scopes (of ``scopes``, or all) that follow the rolling policy: one query."""
    qs = ScopePolicy.objects.filter(policy=Policy.ROLLING)
    if scopes is not None:
        scopes = set(scopes)
        if not scopes:
            return set()
        qs = qs.filter(scope__in=scopes)
    return set(qs.values_list("scope", flat=True))


def thresholds_for(scope: str) -> RollingThresholds:
    policy = scope_policy_get(scope)
    return policy.thresholds() if policy is not None else DEFAULT_THRESHOLDS
