"""Jobs and their attempts (SPEC §5).

A ``CompactionJob`` is the work of summarising one range under one prompt
version, bound to its exact source. ``Attempt`` rows record every try.
"""

from django.conf import settings
from django.db import models

from .. import contract
from .prompts import PromptVersion

# The binding kind of every job planned before there were others (SPEC §5:
# fixed 10-pair segments; ``compaction.bindings.segments``).
SEGMENT_KIND = "segment"


def attempt_limit() -> int:
    """Attempts a new job gets per range and prompt version before it is
    exhausted (SPEC §5: 2; ``COMPACTION_MAX_ATTEMPTS``). What a failure does
    with it is ``compaction.engine.attempts``'s."""
    return settings.COMPACTION_MAX_ATTEMPTS


class JobState(models.TextChoices):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    EXHAUSTED = "exhausted"
    STALE = "stale"


# A job in one of these states waits for nothing more (until someone acts).
SETTLED_STATES = (JobState.SUCCEEDED, JobState.FAILED, JobState.EXHAUSTED, JobState.STALE)

# One failure code per contract violation; the pure contract module owns the list.
FailureCode = models.TextChoices("FailureCode", [(code.upper(), code) for code in contract.FAILURE_CODES])


def _bound_to_current_source() -> models.Q:
    return models.Q(source_changed_at__isnull=True) & ~models.Q(state=JobState.STALE)


# What the desk shows for a job besides its own state (issue 16 §5): a job
# another job of its range replaced, and a summary whose source changed
# after it was written (the projection no longer uses it). Python's rule is
# ``CompactionJob.display_state``; ``with_display_state`` is the same in SQL.
SUPERSEDED = "superseded"
SOURCE_CHANGED = "source_changed"


def _superseded_conditions():
    """The two SQL conditions under which a job is superseded (the rule of
    ``CompactionJob.superseded_by``): a newer job of its range is bound to
    the current source; or its own source changed and another job is bound
    to the current source, or a newer one exists."""
    others = CompactionJob.objects.filter(
        kind=models.OuterRef("kind"), conversation_id=models.OuterRef("conversation_id"),
        from_pair=models.OuterRef("from_pair"),
    ).exclude(pk=models.OuterRef("pk"))
    current = _bound_to_current_source()
    newer = models.Q(pk__gt=models.OuterRef("pk"))
    return (models.Exists(others.filter(current, newer)),
            ~current & (models.Exists(others.filter(current)) | models.Exists(others.filter(newer))))


class CompactionJobQuerySet(models.QuerySet):
    def not_superseded(self):
        """Jobs that are their range's job that counts (see
        ``CompactionJob.superseded_by``): what an operator acts on and what
        the scanner retries. Two index lookups per row
        (``job_conversation_range``)."""
        newer_current, own_changed = _superseded_conditions()
        return self.exclude(newer_current).exclude(own_changed)

    def with_display_state(self):
        """Each job annotated ``shown_state``: ``superseded``, else
        ``source_changed`` for a succeeded job whose source changed, else its
        state (``CompactionJob.display_state`` in SQL)."""
        newer_current, own_changed = _superseded_conditions()
        return self.annotate(shown_state=models.Case(
            models.When(newer_current, then=models.Value(SUPERSEDED)),
            models.When(own_changed, then=models.Value(SUPERSEDED)),
            models.When(models.Q(state=JobState.SUCCEEDED, source_changed_at__isnull=False),
                        then=models.Value(SOURCE_CHANGED)),
            default=models.F("state"), output_field=models.CharField(),
        ))


class SourceBinding(models.Model):
    """The source binding (SPEC §2): what a job is bound to, copied onto its
    generation so the generation stands on its own. ``kind`` names the
    binding (``compaction.bindings``) that says what the rest means, how a
    job is claimed and what the provider sees; the engine reads nothing
    else about a source. A job written from an earlier generation (SPEC §7:
    a rolling hand-off note) is bound to that generation (each model's own
    foreign key) and to its text's digest (``parent_digest``) too."""

    kind = models.CharField(max_length=30, default=SEGMENT_KIND, db_default=SEGMENT_KIND)
    scope = models.CharField(max_length=100)
    from_pair = models.PositiveIntegerField()
    to_pair = models.PositiveIntegerField()
    message_ids = models.JSONField()
    source_digest = models.CharField(max_length=64)
    model_id = models.CharField(max_length=200)
    parent_digest = models.CharField(max_length=64, blank=True, default="", db_default="")

    class Meta:
        abstract = True


class CompactionJob(SourceBinding):
    conversation = models.ForeignKey(
        "conversations.Conversation", on_delete=models.PROTECT, related_name="compaction_jobs"
    )
    prompt_version = models.ForeignKey(PromptVersion, on_delete=models.PROTECT, related_name="jobs")
    parent_generation = models.ForeignKey("SummaryGeneration", on_delete=models.PROTECT, null=True, blank=True,
                                          related_name="child_jobs")
    state = models.CharField(max_length=20, choices=JobState.choices, default=JobState.PENDING)
    attempts_used = models.PositiveIntegerField(default=0)
    # COMPACTION_MAX_ATTEMPTS when created (SPEC §5); an operator's grant raises it by one.
    max_attempts = models.PositiveIntegerField(default=attempt_limit)
    last_failure_code = models.CharField(max_length=30, choices=FailureCode.choices, blank=True, default="")
    lease_owner = models.CharField(max_length=200, blank=True, default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # When the range's current digest stopped being this job's binding; null
    # while they match. Kept by the ingest that moves the digest, in its own
    # transaction, whatever the job's state, so a succeeded summary whose
    # source changed is found by an index instead of by comparing digests.
    source_changed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = CompactionJobQuerySet.as_manager()

    class Meta:
        # One job per binding, so concurrent planners create each job once.
        # Two constraints because NULLs are distinct in a unique index: one
        # for jobs without a parent, one for jobs bound to a parent too.
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "from_pair", "to_pair", "prompt_version", "model_id", "source_digest", "kind"],
                condition=models.Q(parent_generation__isnull=True), name="job_binding_unique",
            ),
            models.UniqueConstraint(
                fields=["conversation", "parent_generation", "from_pair", "to_pair", "prompt_version", "model_id",
                        "source_digest", "kind"],
                condition=models.Q(parent_generation__isnull=False), name="job_binding_parent_unique",
            ),
        ]
        indexes = [
            models.Index(fields=["conversation", "from_pair"], name="job_conversation_range"),
            models.Index(fields=["conversation", "state"], name="job_conversation_state"),
            models.Index(fields=["state", "updated_at"], name="job_state_updated"),
            models.Index(fields=["scope", "state"], name="job_scope_state"),
            models.Index(fields=["lease_expires_at"], name="job_lease_expiry"),
            models.Index(fields=["updated_at", "id"], name="job_updated"),
            models.Index(fields=["created_at", "id"], name="job_created"),
            # The queue's succeeded-but-source-changed rows, newest first.
            models.Index(fields=["-updated_at", "-id"], condition=models.Q(source_changed_at__isnull=False),
                         name="job_source_changed"),
        ]

    def __str__(self) -> str:
        return f"job {self.pk} {self.conversation_id}[{self.from_pair}-{self.to_pair}] {self.state}"

    @property
    def bound_to_current_source(self) -> bool:
        return self.source_changed_at is None and self.state != JobState.STALE

    def superseded_by(self, others) -> "CompactionJob | None":
        """The job of the same range that counts instead of this one, among
        ``others`` (the range's other jobs): a newer job bound to the current
        source; or, if this one's source changed, any job bound to the
        current source (an undone edit revives an older job) or else a newer
        one. None when this job is the one that counts."""
        others = sorted(others, key=lambda j: j.pk, reverse=True)
        current = [j for j in others if j.bound_to_current_source]
        for job in current:
            if job.pk > self.pk or not self.bound_to_current_source:
                return job
        if not self.bound_to_current_source:
            return next((j for j in others if j.pk > self.pk), None)
        return None

    def display_state(self, *, superseded: bool = False) -> str:
        """What the desk shows for this job (``SUPERSEDED`` when another job
        of its range replaced it, ``superseded_by``); the same rule as
        ``CompactionJobQuerySet.with_display_state``."""
        if superseded:
            return SUPERSEDED
        if self.state == JobState.SUCCEEDED and self.source_changed_at is not None:
            return SOURCE_CHANGED
        return self.state


class AttemptOutcome(models.TextChoices):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    # An outage (database or broker), not the model, ended the attempt before
    # its end could be recorded: it does not count (``engine.attempts``).
    INFRASTRUCTURE = "infrastructure"


class Attempt(models.Model):
    job = models.ForeignKey(CompactionJob, on_delete=models.PROTECT, related_name="attempts")
    number = models.PositiveIntegerField()
    worker = models.CharField(max_length=200)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=20, choices=AttemptOutcome.choices, default=AttemptOutcome.RUNNING)
    failure_code = models.CharField(max_length=30, choices=FailureCode.choices, blank=True, default="")
    failure_detail = models.TextField(blank=True, default="")
    model = models.CharField(max_length=200, blank=True, default="")
    finish_reason = models.CharField(max_length=50, blank=True, default="")
    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    # What the model actually returned, kept for review up to a cap.
    raw_output = models.TextField(blank=True, default="")
    raw_output_truncated = models.BooleanField(default=False)
    tool_calls = models.JSONField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["job", "number"], name="attempt_job_number_unique"),
        ]
        ordering = ["job", "number"]


