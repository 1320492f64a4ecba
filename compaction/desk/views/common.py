"""What every desk page shares (SPEC §1; issue 5): the role check, and how
the list pages read a filtered keyset page and render it.

Thin views: parse input with a form, call one selector or one action from
``compaction.actions``, render. Every view checks the role on the server
(``compaction.roles``) and reads only through scope-limited selectors, so
another scope's rows answer 404. When ``request.htmx`` the view renders the
named partial of the same page template; otherwise the whole page (every
page reads without JavaScript; actions redirect after POST).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import render

from ...keyset import InvalidCursor
from .. import selectors

PAGE_SIZE = 50


def role_required(check):
    """Anonymous users go to the login page; signed-in users without the
    role get 403 and nothing happens."""

    def decorator(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not check(request.user):
                raise PermissionDenied("your role does not allow this")
            return view(request, *args, **kwargs)

        return wrapper

    return decorator


def _query_without(request, *names) -> str:
    params = request.GET.copy()
    for name in names:
        params.pop(name, None)
    return params.urlencode()


# --- list pages ---------------------------------------------------------------------
# The conversations, failed-ranges and activity pages read the same way: filters
# from the query string, one keyset page after ``?cursor=``, a pager that keeps the
# filters. A view only says which form, which selector and which template.

BAD_CURSOR_TEXT = "The page cursor is not valid."


@dataclass
class Listing:
    context: dict
    refused: str = ""  # "filters" or "cursor" when the query string was refused


def read_listing(request, form_class, fetch) -> Listing:
    """Bind ``form_class`` to the query string (its scope menu limited to the
    user's scopes) and read the page with ``fetch(filters, cursor)``, where
    ``filters`` is the cleaned data, empty when nothing was asked."""
    form = form_class(request.GET or None, scopes=selectors.visible_scopes(user=request.user))
    context = {"form": form, "rows": [], "next_url": None}
    if form.is_bound and not form.is_valid():
        return Listing(context, refused="filters")
    cursor = request.GET.get("cursor") or None
    try:
        page = fetch(form.cleaned_data if form.is_bound else {}, cursor)
    except InvalidCursor:
        return Listing(context, refused="cursor")
    base = _query_without(request, "cursor")
    context.update(
        rows=page.rows,
        first_url=f"?{base}" if base else "?",
        next_url=(f"?{base}&cursor={page.next_cursor}" if base else f"?cursor={page.next_cursor}")
        if page.next_cursor else None,
        paged=bool(cursor),
    )
    return Listing(context)


def list_page(request, template: str, listing: Listing, *, extra=None, bad_cursor_as_page=False):
    """A refused filter answers 400 with the whole page, so the filter bar can
    name the field; a refused cursor answers 400 in plain text (or with the
    empty page, where the page asks for that). Otherwise the ``#results``
    partial for HTMX and the whole page for everyone else."""
    context = {**listing.context, **(extra or {})}
    if listing.refused == "cursor" and not bad_cursor_as_page:
        return HttpResponse(BAD_CURSOR_TEXT, status=400, content_type="text/plain")
    if listing.refused:
        return render(request, template, context, status=400)
    return render(request, f"{template}#results" if request.htmx else template, context)
