"""Reads for conversations, always narrowed to the scopes a user may see."""

from __future__ import annotations

from django.db.models import QuerySet

from .models import Conversation, Pair, ScopeGrant, Segment


def user_scopes(user) -> frozenset[str] | None:
    """The scopes ``user`` may read; ``None`` means every scope (staff)."""
    if not user or not user.is_authenticated:
        return frozenset()
    # An API token may narrow what its user sees (the API's token authentication sets this),
    # a staff user's token too: staff are granted every scope, so the
    # intersection is the token's own list.
    token_scopes = getattr(user, "_token_scopes", None)
    if user.is_staff or user.is_superuser:
        return None if token_scopes is None else frozenset(token_scopes)
    cached = getattr(user, "_compaction_scopes", None)
    if cached is None:
        cached = frozenset(ScopeGrant.objects.filter(user=user).values_list("scope", flat=True))
        user._compaction_scopes = cached
    if token_scopes is not None:
        return cached & frozenset(token_scopes)
    return cached


def user_can_see_scope(user, scope: str) -> bool:
    scopes = user_scopes(user)
    return scopes is None or scope in scopes


def in_scopes_of(qs: QuerySet, *, user) -> QuerySet:
    """``qs`` (of a model with a ``scope`` field) narrowed to what ``user`` may see."""
    scopes = user_scopes(user)
    return qs if scopes is None else qs.filter(scope__in=scopes)


def conversations_visible(*, user) -> QuerySet[Conversation]:
    return in_scopes_of(Conversation.objects.all(), user=user)


def conversation_get(*, user, conversation_id: int) -> Conversation | None:
    return conversations_visible(user=user).filter(pk=conversation_id).first()


def conversation_pairs(*, conversation: Conversation) -> QuerySet[Pair]:
    return (
        Pair.objects.filter(conversation=conversation)
        .select_related("run", "user_message", "assistant_message")
        .order_by("index")
    )


def conversation_segments(*, conversation: Conversation) -> QuerySet[Segment]:
    return Segment.objects.filter(conversation=conversation).order_by("from_pair")
