from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from compaction.metrics import metrics_view

urlpatterns = [
    path("admin/", admin.site.urls),
    path("metrics", metrics_view, name="metrics"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/v1/", include("compaction.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("", include("compaction.desk.urls")),
]

# JSON 404s under /api/ (unmatched URLs), the usual page elsewhere.
handler404 = "compaction.api.plumbing.api_not_found"
