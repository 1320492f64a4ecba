from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from compaction import api as compaction_api
from compaction import projection_api
from compaction import views as desk
from compaction.metrics import metrics_view
from conversations import api as conversations_api

api_v1 = [
    path("ingest/", conversations_api.IngestApi.as_view(), name="api-ingest"),
    path("conversations/", conversations_api.ConversationListApi.as_view(), name="api-conversations"),
    path("conversations/<int:conversation_id>/", conversations_api.ConversationDetailApi.as_view(), name="api-conversation"),
    path("conversations/<int:conversation_id>/pairs/", conversations_api.ConversationPairsApi.as_view(), name="api-conversation-pairs"),
    path(
        "conversations/<int:conversation_id>/segments/",
        conversations_api.ConversationSegmentsApi.as_view(),
        name="api-conversation-segments",
    ),
    path(
        "conversations/<int:conversation_id>/projection",
        projection_api.ConversationProjectionApi.as_view(),
        name="api-conversation-projection",
    ),
    path("audits/", compaction_api.AuditListApi.as_view(), name="api-audits"),
    path("audits/<int:job_id>/", compaction_api.AuditDetailApi.as_view(), name="api-audit"),
    path("jobs/<int:job_id>/rerun/", compaction_api.JobRerunApi.as_view(), name="api-job-rerun"),
    path("jobs/<int:job_id>/grant-attempt/", compaction_api.JobGrantAttemptApi.as_view(), name="api-job-grant-attempt"),
    path("jobs/<int:job_id>/replan/", compaction_api.JobReplanApi.as_view(), name="api-job-replan"),
    path(
        "conversations/<int:conversation_id>/compact/",
        compaction_api.ConversationCompactApi.as_view(),
        name="api-conversation-compact",
    ),
    path("reviews/", compaction_api.ReviewCreateApi.as_view(), name="api-reviews"),
    path("activity/", compaction_api.ActivityListApi.as_view(), name="api-activity"),
]

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
    path("api/v1/", include(api_v1)),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("", include(desk_urls)),
]

# JSON 404s under /api/ (unmatched URLs), the usual page elsewhere.
handler404 = "compaction.api.api_not_found"
