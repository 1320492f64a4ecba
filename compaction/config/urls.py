from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from compaction.api.docs import RedocDocs, SwaggerDocs

from compaction.metrics import metrics_view

urlpatterns = [
    path("admin/", admin.site.urls),
    path("metrics", metrics_view, name="metrics"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/v1/", include("compaction.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SwaggerDocs.as_view(url_name="api-schema"), name="api-docs"),
    path("api/redoc/", RedocDocs.as_view(url_name="api-schema"), name="api-redoc"),
    path("", include("compaction.desk.urls")),
]

# Every error Django answers itself is JSON under /api/ (the API's error
# shape), the usual page elsewhere.
handler400 = "compaction.api.plumbing.api_bad_request"
handler403 = "compaction.api.plumbing.api_permission_denied"
handler404 = "compaction.api.plumbing.api_not_found"
handler500 = "compaction.api.plumbing.api_server_error"
