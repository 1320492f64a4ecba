from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from compaction import views as desk
from compaction.metrics import metrics_view

desk_urls = [
    path("", desk.conversation_list, name="desk-conversations"),
    path("conversations/<int:conversation_id>/", desk.conversation_detail, name="desk-conversation"),
    path("conversations/<int:conversation_id>/rerun/", desk.conversation_rerun, name="desk-conversation-rerun"),
    path("jobs/<int:job_id>/", desk.job_detail, name="desk-job"),
    path("jobs/<int:job_id>/rerun/", desk.job_rerun, name="desk-job-rerun"),
    path("jobs/<int:job_id>/grant/", desk.job_grant_attempt, name="desk-job-grant"),
    path("jobs/<int:job_id>/replan/", desk.job_replan, name="desk-job-replan"),
    path("jobs/<int:job_id>/review/", desk.job_review, name="desk-job-review"),
    path("queue/", desk.queue, name="desk-queue"),
    path("queue/rerun/", desk.queue_rerun, name="desk-queue-rerun"),
    path("activity/", desk.activity, name="desk-activity"),
]

urlpatterns = [
    path("admin/", admin.site.urls),
    path("metrics", metrics_view, name="metrics"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/v1/", include("compaction.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("", include(desk_urls)),
]

# JSON 404s under /api/ (unmatched URLs), the usual page elsewhere.
handler404 = "compaction.api.plumbing.api_not_found"
