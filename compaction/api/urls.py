"""The REST API under ``/api/v1/`` (SPEC §11): one module per resource."""

from django.urls import path

from . import activity, assembly, audits, conversations, ingest, jobs, projection, reviews

urlpatterns = [
    path("ingest/", ingest.IngestApi.as_view(), name="api-ingest"),
    path("conversations/", conversations.ConversationListApi.as_view(), name="api-conversations"),
    path("conversations/<int:conversation_id>/", conversations.ConversationDetailApi.as_view(),
         name="api-conversation"),
    path("conversations/<int:conversation_id>/pairs/", conversations.ConversationPairsApi.as_view(),
         name="api-conversation-pairs"),
    path("conversations/<int:conversation_id>/segments/", conversations.ConversationSegmentsApi.as_view(),
         name="api-conversation-segments"),
    path("conversations/<int:conversation_id>/generations/", conversations.ConversationGenerationsApi.as_view(),
         name="api-conversation-generations"),
    path("conversations/<int:conversation_id>/generations/<int:generation_id>/",
         conversations.ConversationGenerationApi.as_view(), name="api-conversation-generation"),
    path("conversations/<int:conversation_id>/projection", projection.ConversationProjectionApi.as_view(),
         name="api-conversation-projection"),
    path("audits/", audits.AuditListApi.as_view(), name="api-audits"),
    path("audits/<int:job_id>/", audits.AuditDetailApi.as_view(), name="api-audit"),
    path("jobs/<int:job_id>/rerun/", jobs.JobRerunApi.as_view(), name="api-job-rerun"),
    path("jobs/<int:job_id>/grant-attempt/", jobs.JobGrantAttemptApi.as_view(), name="api-job-grant-attempt"),
    path("jobs/<int:job_id>/replan/", jobs.JobReplanApi.as_view(), name="api-job-replan"),
    path("conversations/<int:conversation_id>/compact/", conversations.ConversationCompactApi.as_view(),
         name="api-conversation-compact"),
    path("reviews/", reviews.ReviewCreateApi.as_view(), name="api-reviews"),
    path("activity/", activity.ActivityListApi.as_view(), name="api-activity"),
    path("context/assemble", assembly.ContextAssembleApi.as_view(), name="api-context-assemble"),
]
