"""Small, fast formatting for desk tables.

Django's ``date`` filter goes through the locale and time-zone machinery on
every call (about 0.2 ms each on a busy machine), which dominates a
50-row table; the desk shows times in UTC, so a plain ``strftime`` will do.
"""

from datetime import datetime, timezone

from django import template
from django.urls import reverse
from django.utils.html import format_html

register = template.Library()


@register.filter
def utc(value, fmt: str = "%Y-%m-%d %H:%M"):
    """A datetime as UTC text, labelled so (" UTC", unless the format is
    ISO 8601 ending in ``Z``, which says it already); ``""`` for none."""
    if not isinstance(value, datetime):
        return ""
    if value.tzinfo is not None:
        value = value.astimezone(timezone.utc)
    text = value.strftime(fmt)
    return text if fmt.endswith("Z") else f"{text} UTC"


STATE_LABELS = {"no_job": "no job yet", "needs_work": "needs work", "unplanned": "no longer planned",
                "source_changed": "source changed", "superseded": "superseded"}


@register.simple_tag
def state(value):
    """A state pill: colour and text (an include per row costs far more)."""
    value = str(value or "")
    return format_html('<span class="state state-{}" title="{}"><span class="dot" aria-hidden="true"></span>{}</span>',
                       value, value, STATE_LABELS.get(value, value))


@register.filter
def state_label(value):
    return STATE_LABELS.get(str(value), str(value))


_PREFIXES: dict[str, tuple[str, str]] = {}


def _url(name: str, pk) -> str:
    # Reverse once with a marker and substitute: same URL as {% url %},
    # without resolving the pattern for every row.
    if name not in _PREFIXES:
        head, _, tail = reverse(name, args=[987654321]).partition("987654321")
        _PREFIXES[name] = (head, tail)
    head, tail = _PREFIXES[name]
    return f"{head}{int(pk)}{tail}"


@register.filter
def job_url(pk):
    return _url("desk-job", pk)


@register.filter
def conversation_url(pk):
    return _url("desk-conversation", pk)


@register.filter
def ago(value):
    """Compact age: "45 s", "12 min", "5 h", "3 d" (cheaper than timesince)."""
    if not isinstance(value, datetime):
        return ""
    seconds = max(0, int((datetime.now(timezone.utc) - value).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return f"{seconds} s ago"
