"""``/activity/``: the activity log — who did what to which range, when, why
(SPEC §1)."""

from __future__ import annotations

from django.views.decorators.http import require_GET

from ... import roles
from .. import presenters
from ..activity import activity_list
from ..forms import ActivityFilterForm
from .common import PAGE_SIZE, list_page, read_listing, role_required


@require_GET
@role_required(roles.can_use_desk)
def activity(request):
    listing = read_listing(request, ActivityFilterForm, lambda f, cursor: activity_list(
        user=request.user, action=f.get("action", ""), actor=f.get("actor", ""), scope=f.get("scope", ""),
        conversation=f.get("conversation"), job=f.get("job"), since=f.get("since"), cursor=cursor,
        page_size=PAGE_SIZE,
    ))
    for event in listing.context["rows"]:
        event.changes = presenters.changed_fields(event.before, event.after)
    return list_page(request, "desk/activity.html", listing)
