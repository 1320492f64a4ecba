"""Give a person or an integration access: a user, a role, scopes, a token.

    python manage.py grant_access alice --role support --scope fund-research
    python manage.py grant_access acme-bot --role integrator --scope acme --token
    python manage.py grant_access acme-bot --token --token-scope acme

Creates the user if missing (without a usable password unless --password is
given), adds the role group, grants the scopes and, with --token, prints the
user's API token. --token-scope limits that token to some of the user's
scopes. Thin: ``compaction.access.access_grant`` does it.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from compaction.access import AccessRefused, access_grant
from compaction.roles import ROLES


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

    def handle(self, *args, username, role, scope, password, token, token_scope, **options):
        try:
            granted = access_grant(username=username, role_names=role, scopes=scope, password=password,
                                   token=token, token_scopes=token_scope)
        except AccessRefused as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"{'created' if granted.created else 'updated'} {username}: roles "
                          f"{granted.roles or '-'}, scopes {granted.scopes or '-'}")
        if granted.token:
            self.stdout.write(f"token: {granted.token}")
