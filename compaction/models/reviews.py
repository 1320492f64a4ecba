"""Review verdicts (SPEC §1, §11): a review belongs to the generation it
judged; the newest review of a job is its current verdict."""

from django.conf import settings
from django.db import models

from .generations import SummaryGeneration
from .jobs import CompactionJob


class Verdict(models.TextChoices):
    APPROVED = "approved"
    NEEDS_WORK = "needs_work"


class Review(models.Model):
    job = models.ForeignKey(CompactionJob, on_delete=models.PROTECT, related_name="reviews")
    generation = models.ForeignKey(
        SummaryGeneration, on_delete=models.PROTECT, null=True, blank=True, related_name="reviews"
    )
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="reviews")
    verdict = models.CharField(max_length=20, choices=Verdict.choices)
    note = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["job", "-created_at"], name="review_job_latest")]


