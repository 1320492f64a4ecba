"""Sign-in throttling (issue 12 item 5): django-axes, counted per account
and per address (``AXES_LOCKOUT_PARAMETERS`` in settings).

Two small adaptations of axes to this deployment:

* ``SignInLockoutBackend`` checks the lockout of every sign-in made through
  a web request. A call to ``authenticate`` without a request (a management
  command, a test client's ``login``) has no address to count and no one to
  answer: it is not throttled, where axes' own backend would refuse it.
* ``client_address`` is the address a sign-in is counted by: ``REMOTE_ADDR``,
  or behind ``DJANGO_FORWARDED_FOR_PROXIES`` trusted proxies the address the
  outermost of them saw (``X-Forwarded-For`` read from the right, so a
  client cannot choose its own address by sending the header itself).
"""

from __future__ import annotations

from axes.backends import AxesStandaloneBackend
from django.conf import settings


class SignInLockoutBackend(AxesStandaloneBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


def forwarded_client(remote_addr: str, forwarded_for: str, proxies: int) -> str:
    """The client's address behind ``proxies`` trusted proxies, each of which
    appends the address it received from to ``X-Forwarded-For``."""
    if proxies <= 0:
        return remote_addr
    hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
    if len(hops) < proxies:
        return remote_addr  # not through all our proxies: the last one is all we know
    return hops[-proxies]


def client_address(request) -> str:
    return forwarded_client(request.META.get("REMOTE_ADDR", ""), request.META.get("HTTP_X_FORWARDED_FOR", ""),
                            settings.DJANGO_FORWARDED_FOR_PROXIES)
