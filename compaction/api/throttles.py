"""Rate limits for REST writes (issue 6).

The rate is read from settings on every request (``COMPACTION_API_WRITE_RATE``,
e.g. ``120/minute``), so an environment change or a test override applies
without re-importing DRF's settings. Counted per user, across all write
endpoints together, in Django's default cache: Redis when configured, else
the database's cache table (settings.CACHES) — shared by every web process,
so the limit holds however many there are (issue 12 item 5).
"""

from django.conf import settings
from rest_framework.throttling import UserRateThrottle


class WriteRateThrottle(UserRateThrottle):
    scope = "api-write"

    def get_rate(self):
        return settings.COMPACTION_API_WRITE_RATE or None
