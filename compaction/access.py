"""Giving people and integrations access (SPEC §1, §2): a user, role groups
(``compaction.roles``), scope grants and an API token, optionally limited to
some of the user's scopes. ``grant_access`` and ``seed_demo`` call these.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import Group, User
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import transaction
from rest_framework.authtoken.models import Token

from conversations.models import ScopeGrant, TokenScope

from . import roles


class AccessRefused(ValueError):
    """A grant that cannot be made; nothing was written."""


@dataclass
class Granted:
    user: User
    created: bool
    roles: list[str]
    scopes: list[str]
    token: str | None = None


@transaction.atomic
def access_grant(*, username: str, role_names=(), scopes=(), password: str | None = None, token: bool = False,
                 token_scopes=()) -> Granted:
    """Create or update ``username`` with these roles and scope grants (and,
    with ``token``, make sure it has an API token, limited to
    ``token_scopes`` when given). A user created without a password cannot
    sign in to the desk."""
    if token_scopes and not token:
        raise AccessRefused("--token-scope needs --token")
    user, created = User.objects.get_or_create(username=username)
    if created and not password:
        user.set_unusable_password()
    if password:
        # Django's password validators (settings.AUTH_PASSWORD_VALIDATORS), as
        # createsuperuser and the admin apply them.
        try:
            validate_password(password, user=user)
        except ValidationError as exc:
            raise AccessRefused(f"--password: {' '.join(exc.messages)}") from None
        user.set_password(password)
    user.save()
    for name in role_names:
        user.groups.add(Group.objects.get(name=name))
    for scope in scopes:
        ScopeGrant.objects.get_or_create(user=user, scope=scope)
    granted = set(ScopeGrant.objects.filter(user=user).values_list("scope", flat=True))
    result = Granted(user, created, sorted(user.groups.values_list("name", flat=True)), sorted(granted))
    if token:
        key = Token.objects.get_or_create(user=user)[0]
        if token_scopes:
            missing = set(token_scopes) - granted
            if missing and not user.is_staff:
                raise AccessRefused(f"token scope(s) {sorted(missing)} are not granted to {username}")
            TokenScope.objects.update_or_create(token=key, defaults={"scopes": sorted(set(token_scopes))})
        result.token = key.key
    return result


# Known, printed passwords: only for a local demo (``seed_demo`` refuses
# them unless DJANGO_DEBUG is on or it is told to).
DEMO_USERS = (
    # username, password, group, staff
    ("admin", "admin-demo", None, True),
    ("operator", "operator-demo", roles.OPERATOR, False),
    ("support", "support-demo", roles.SUPPORT, False),
    ("integrator", "integrator-demo", roles.INTEGRATOR, False),
)


@dataclass
class DemoUser:
    user: User
    password: str
    created: bool
    token: str | None


def demo_users_ensure(*, scopes: list[str]) -> list[DemoUser]:
    """Create the demo users once; later runs only make sure their groups,
    scope grants and the integrator's token exist (passwords are left alone)."""
    out = []
    with transaction.atomic():
        for username, password, group, staff in DEMO_USERS:
            user = User.objects.filter(username=username).first()
            created = user is None
            if created:
                user = User(username=username, is_staff=staff, is_superuser=staff)
                user.set_password(password)
                user.save()
            if group:
                user.groups.add(Group.objects.get_or_create(name=group)[0])
            for scope in scopes:
                ScopeGrant.objects.get_or_create(user=user, scope=scope)
            token = Token.objects.get_or_create(user=user)[0].key if group == roles.INTEGRATOR else None
            out.append(DemoUser(user=user, password=password, created=created, token=token))
    return out
