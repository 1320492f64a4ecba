"""Review verdicts (SPEC §1, §11; issue 16): a review belongs to the
generation it judged — the summary, not the job.

**One rule for whether a verdict still stands** (``verdict_stands`` in
Python, ``ReviewQuerySet.standing`` in SQL, with
``models.jobs.superseded_condition``;
both say the same):

* it judged a generation (a verdict needs a summary; reviews written before
  verdicts were bound to generations on a job that had none judged nothing
  and keep ``generation`` null: history only);
* that generation's job is still its range's job that counts
  (``CompactionJob.superseded_by``): a summary replaced by a newer
  generation is unreviewed again;
* the job's source did not change after the verdict
  (``source_changed_at``): a summary whose source changed after its verdict
  is unreviewed again.

The newest standing review of a generation is its current verdict; every
other review stays visible as history. "Newest" is one order,
``NEWEST_FIRST``: by ``created_at``, then id.

``ReviewClaim`` is the short claim a reviewer holds on a summary while the
review queue shows it to them, so two reviewers never get the same item at
once (``compaction.reviewclaims``); ``ReviewAwaiting`` is the queue's index
of summaries no review has judged yet, kept by the database.
"""

from django.conf import settings
from django.db import models

from .generations import SummaryGeneration
from .jobs import CompactionJob, superseded_condition


class Verdict(models.TextChoices):
    APPROVED = "approved"
    NEEDS_WORK = "needs_work"


NEWEST_FIRST = ("-created_at", "-id")


def verdict_stands(*, review_created_at, review_generation_id, superseded: bool, source_changed_at) -> bool:
    """The rule, over plain values (see the module docstring)."""
    if review_generation_id is None or superseded:
        return False
    return source_changed_at is None or review_created_at >= source_changed_at


class ReviewQuerySet(models.QuerySet):
    def newest_first(self):
        return self.order_by(*NEWEST_FIRST)

    def newest_of_job(self, job):
        """The job's reviews, newest first (``job`` may be an ``OuterRef``)."""
        return self.filter(job_id=job).newest_first()

    def standing(self):
        """Reviews whose verdict still stands (the module's rule)."""
        return (
            self.filter(generation__isnull=False)
            .filter(models.Q(job__source_changed_at__isnull=True)
                    | models.Q(created_at__gte=models.F("job__source_changed_at")))
            .exclude(superseded_condition("job__"))
        )

    def standing_of_job(self, job):
        """The job's standing reviews, newest first (``job`` may be an
        ``OuterRef``): the first is the current verdict on its summary."""
        return self.standing().filter(job_id=job).newest_first()


class Review(models.Model):
    # The job is the generation's own (``generation.job``), kept beside it for
    # the activity log and the per-job reads; ``do_review_record`` writes both.
    job = models.ForeignKey(CompactionJob, on_delete=models.PROTECT, related_name="reviews")
    # Null only on reviews written before verdicts needed a summary (migration
    # 0018 bound every other one to the generation its job had then).
    generation = models.ForeignKey(
        SummaryGeneration, on_delete=models.PROTECT, null=True, blank=True, related_name="reviews"
    )
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="reviews")
    verdict = models.CharField(max_length=20, choices=Verdict.choices)
    note = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ReviewQuerySet.as_manager()

    class Meta:
        indexes = [
            models.Index(fields=["job", "-created_at"], name="review_job_latest"),
            models.Index(fields=["generation", "-created_at"], name="review_generation_latest"),
        ]


class ReviewClaim(models.Model):
    """A reviewer's short hold on one summary of the review queue: one row
    per generation at most, taken and renewed by one conditional write,
    released when they leave it or after ``expires_at``. ``token`` names
    one taking of the claim, so a page left behind releases only its own."""

    generation = models.OneToOneField(SummaryGeneration, on_delete=models.CASCADE, primary_key=True,
                                      related_name="review_claim")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="review_claims")
    token = models.CharField(max_length=32)
    expires_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"claim on generation {self.generation_id} by {self.reviewer_id} until {self.expires_at}"


class ReviewAwaiting(models.Model):
    """One row per summary that no review has judged yet: the review queue's
    index, oldest first, so reading the queue never walks the summaries
    already reviewed. Written by the database itself (triggers of migration
    0018, PostgreSQL and SQLite): every generation inserted, by any path,
    adds its row; every review of a generation removes it. Whether the
    summary still counts for its range (not superseded, source unchanged)
    is read with it, from its job."""

    generation = models.OneToOneField(SummaryGeneration, on_delete=models.CASCADE, primary_key=True,
                                      related_name="awaiting_review")
    scope = models.CharField(max_length=100)
    created_at = models.DateTimeField()  # the generation's

    class Meta:
        indexes = [models.Index(fields=["created_at", "generation"], name="review_awaiting_order")]
