"""Token authentication that honours a token's scope limit (SPEC §2: tokens
are granted the scopes they may see)."""

from rest_framework.authentication import TokenAuthentication


class ScopedTokenAuthentication(TokenAuthentication):
    def authenticate_credentials(self, key):
        user, token = super().authenticate_credentials(key)
        from conversations.models import TokenScope

        limit = TokenScope.objects.filter(token=token).first()
        user._token_scopes = frozenset(limit.scopes) if limit is not None else None
        return user, token
