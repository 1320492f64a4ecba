"""``/``: the conversations list (SPEC §1)."""

from __future__ import annotations

from django.views.decorators.http import require_GET

from ... import roles
from .. import presenters, selectors
from ..forms import ConversationFilterForm
from .common import PAGE_SIZE, list_page, read_listing, role_required


@require_GET
@role_required(roles.can_use_desk)
def conversation_list(request):
    listing = read_listing(request, ConversationFilterForm, lambda f, cursor: selectors.conversation_list(
        user=request.user, q=f.get("q", ""), scope=f.get("scope", ""), has=f.get("has", ""),
        verdict=f.get("verdict", ""), drift=f.get("drift", ""), updated_since=f.get("updated_since"),
        sort=f.get("sort") or "recent",
        cursor=cursor, page_size=PAGE_SIZE,
    ))
    for conversation in listing.context["rows"]:
        conversation.state_bar = presenters.state_bar(conversation.state_counts)
    return list_page(request, "desk/conversations.html", listing)
