"""Small, fast formatting for desk tables.

Django's ``date`` filter goes through the locale and time-zone machinery on
every call (about 0.2 ms each on a busy machine), which dominates a
50-row table; the desk shows times in UTC, so a plain ``strftime`` will do.
"""

from datetime import datetime, timezone

from django import template

register = template.Library()


@register.filter
def utc(value, fmt: str = "%Y-%m-%d %H:%M"):
    """A datetime as UTC text; ``""`` for none."""
    if not isinstance(value, datetime):
        return ""
    if value.tzinfo is not None:
        value = value.astimezone(timezone.utc)
    return value.strftime(fmt)
