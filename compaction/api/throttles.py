"""Rate limits for REST writes (issue 6).

The rate is read from settings on every request (``COMPACTION_API_WRITE_RATE``,
e.g. ``120/minute``), so an environment change or a test override applies
without re-importing DRF's settings. Counted per user, across all write
endpoints together.
"""

from django.conf import settings
from rest_framework.throttling import UserRateThrottle


class WriteRateThrottle(UserRateThrottle):
    scope = "api-write"

    def get_rate(self):
        return settings.COMPACTION_API_WRITE_RATE or None
