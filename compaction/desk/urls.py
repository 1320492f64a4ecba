"""The desk's pages at their stable, bookmarkable paths (SPEC §11), one
views module per page."""

from django.urls import path

from .views import activity, assembly, conversation, conversations, job, queue, review

urlpatterns = [
    path("", conversations.conversation_list, name="desk-conversations"),
    path("conversations/<int:conversation_id>/", conversation.conversation_detail, name="desk-conversation"),
    path("conversations/<int:conversation_id>/rerun/", conversation.conversation_rerun,
         name="desk-conversation-rerun"),
    path("conversations/<int:conversation_id>/assembly/", assembly.conversation_assembly,
         name="desk-conversation-assembly"),
    path("jobs/<int:job_id>/", job.job_detail, name="desk-job"),
    path("jobs/<int:job_id>/rerun/", job.job_rerun, name="desk-job-rerun"),
    path("jobs/<int:job_id>/grant/", job.job_grant_attempt, name="desk-job-grant"),
    path("jobs/<int:job_id>/replan/", job.job_replan, name="desk-job-replan"),
    path("jobs/<int:job_id>/review/", job.job_review, name="desk-job-review"),
    path("queue/", queue.queue, name="desk-queue"),
    path("queue/rerun/", queue.queue_rerun, name="desk-queue-rerun"),
    path("activity/", activity.activity, name="desk-activity"),
    path("review/", review.review_queue, name="desk-review"),
    path("review/next/", review.review_next, name="desk-review-next"),
    path("review/release/", review.review_release, name="desk-review-release"),
    path("review/renew/", review.review_renew, name="desk-review-renew"),
]
