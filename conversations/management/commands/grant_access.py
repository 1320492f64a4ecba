"""Give a person or an integration access: a user, a role, scopes, a token.

    python manage.py grant_access alice --role support --scope fund-research
    python manage.py grant_access acme-bot --role integrator --scope acme --token
    python manage.py grant_access acme-bot --token --token-scope acme

Creates the user if missing (without a usable password unless --password is
given), adds the role group, grants the scopes and, with --token, prints the
user's API token. --token-scope limits that token to some of the user's scopes.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from rest_framework.authtoken.models import Token

from compaction.roles import ROLES
from conversations.models import ScopeGrant, TokenScope


class Command(BaseCommand):
    help = "Create or update a user with a role, scope grants and (optionally) an API token."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--role", action="append", choices=ROLES, default=[], help="role group (repeatable)")
        parser.add_argument("--scope", action="append", default=[], help="scope the user may see (repeatable)")
        parser.add_argument("--password", help="set this password (for desk sign-in)")
        parser.add_argument("--token", action="store_true", help="print the user's API token, creating it if needed")
        parser.add_argument("--token-scope", action="append", default=[],
                            help="limit the token to these scopes (repeatable; must be granted to the user)")

    @transaction.atomic
    def handle(self, *args, username, role, scope, password, token, token_scope, **options):
        User = get_user_model()
        user, created = User.objects.get_or_create(username=username)
        if created and not password:
            user.set_unusable_password()
        if password:
            user.set_password(password)
        user.save()
        for name in role:
            user.groups.add(Group.objects.get(name=name))
        for name in scope:
            ScopeGrant.objects.get_or_create(user=user, scope=name)
        granted = set(ScopeGrant.objects.filter(user=user).values_list("scope", flat=True))
        self.stdout.write(
            f"{'created' if created else 'updated'} {username}: roles "
            f"{sorted(user.groups.values_list('name', flat=True)) or '-'}, scopes {sorted(granted) or '-'}"
        )
        if token_scope and not token:
            raise CommandError("--token-scope needs --token")
        if token:
            key = Token.objects.get_or_create(user=user)[0]
            if token_scope:
                missing = set(token_scope) - granted
                if missing and not user.is_staff:
                    raise CommandError(f"token scope(s) {sorted(missing)} are not granted to {username}")
                TokenScope.objects.update_or_create(token=key, defaults={"scopes": sorted(set(token_scope))})
            self.stdout.write(f"token: {key.key}")
