"""The WSGI application (gunicorn's ``compaction.config.wsgi:application``).

Built once per web process; its URL configuration, views and serializers, and
the token counter's encoding (``compaction.tokens.load``), are loaded here
rather than on the first request, and then the process's startup
heap is frozen out of the collector's sight
(``compaction.collector.freeze_startup_heap``): full collections during
requests — an assembly defers one — walk what the requests made, not Django.
"""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "compaction.config.settings")
application = get_wsgi_application()


def _serving() -> None:
    from django.urls import get_resolver

    from compaction import tokens
    from compaction.collector import freeze_startup_heap

    get_resolver().url_patterns  # noqa: B018 - loads the URL configuration and the views it names
    tokens.load()  # the token counter, before the first assembly request needs it
    freeze_startup_heap()


_serving()
