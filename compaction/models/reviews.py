"""Review verdicts (SPEC §1, §11): a review belongs to the generation it
judged; the newest review of a job is its current verdict.

"Newest" is one order, ``NEWEST_FIRST``: by ``created_at``, then id. Every
read of a job's current verdict goes through ``ReviewQuerySet``.
"""

from django.conf import settings
from django.db import models

from .generations import SummaryGeneration
from .jobs import CompactionJob


class Verdict(models.TextChoices):
    APPROVED = "approved"
    NEEDS_WORK = "needs_work"


NEWEST_FIRST = ("-created_at", "-id")


class ReviewQuerySet(models.QuerySet):
    def newest_first(self):
        return self.order_by(*NEWEST_FIRST)

    def newest_of_job(self, job):
        """The job's reviews, newest first (``job`` may be an ``OuterRef``)."""
        return self.filter(job_id=job).newest_first()

    def newest_per_job(self):
        """Each job's newest review only: those no later review of the same
        job follows."""
        later = self.model.objects.filter(job_id=models.OuterRef("job_id")).filter(
            models.Q(created_at__gt=models.OuterRef("created_at"))
            | models.Q(created_at=models.OuterRef("created_at"), id__gt=models.OuterRef("id")))
        return self.exclude(models.Exists(later))


class Review(models.Model):
    job = models.ForeignKey(CompactionJob, on_delete=models.PROTECT, related_name="reviews")
    generation = models.ForeignKey(
        SummaryGeneration, on_delete=models.PROTECT, null=True, blank=True, related_name="reviews"
    )
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="reviews")
    verdict = models.CharField(max_length=20, choices=Verdict.choices)
    note = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ReviewQuerySet.as_manager()

    class Meta:
        indexes = [models.Index(fields=["job", "-created_at"], name="review_job_latest")]


