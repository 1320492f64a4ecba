"""Admission slots in the database (SPEC §5 admission; see
``compaction.engine.admission``)."""

from django.db import models


class AdmissionSlot(models.Model):
    """One of COMPACTION_GLOBAL_CONCURRENCY slots for a model call, shared by
    every worker through the database (SPEC §5 admission)."""

    number = models.PositiveIntegerField(primary_key=True)
    holder = models.CharField(max_length=200, blank=True, default="")
    expires_at = models.DateTimeField(null=True, blank=True)
