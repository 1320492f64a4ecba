"""The API's browsable documentation (issue 12 item 7): Swagger UI at
``/api/docs/`` and ReDoc at ``/api/redoc/``, both from our own static files
(drf-spectacular-sidecar, ``SWAGGER_UI_DIST = "SIDECAR"``), so they work
offline and load no third-party script on the desk's origin.

Both pages run under the site's Content-Security-Policy: no inline script
(Swagger UI's start-up script is its own request, drf-spectacular's split
view; ReDoc starts from its ``<redoc>`` element). The two UIs style what
they draw at run time, so their pages alone also allow inline styles, and
ReDoc's search runs in a worker it makes from a ``blob:``.
"""

from __future__ import annotations

from csp.decorators import csp_update
from django.utils.decorators import method_decorator
from drf_spectacular.views import SpectacularRedocView, SpectacularSwaggerSplitView

DOCS_CSP = {"style-src": ["'unsafe-inline'"], "worker-src": ["'self'", "blob:"]}


@method_decorator(csp_update(DOCS_CSP), name="dispatch")
class SwaggerDocs(SpectacularSwaggerSplitView):
    template_name = "api/swagger_ui.html"


@method_decorator(csp_update(DOCS_CSP), name="dispatch")
class RedocDocs(SpectacularRedocView):
    template_name = "api/redoc.html"
