"""A generation's drift report (SPEC §8, §11: "whatever holds ... a
generation's drift findings").

Kept beside the generation, never on it (a generation is immutable):

* ``DriftReport`` — one per checked hand-off generation: that it was
  checked, when, and how many findings it gave (a generation without a
  report was never checked; one with ``finding_count`` 0 is clean);
* ``DriftFinding`` — one finding of that report (``compaction.drift.
  Finding``): its kind and code (SPEC §8's table), the note's section and
  line it is about (None for a finding about the whole note), the message
  ids that prove it, and what it says. ``position`` keeps the checkers'
  order. A reviewer's verdict may cite findings (``reviews``).

Written in the generation's transaction (``compaction.drift.services``)
and replaced whole by ``check_drift``.
"""

from django.db import models

from ..drift.findings import CODES
from .generations import SummaryGeneration
from .reviews import Review


# The kinds and codes are SPEC §8's table, whose one home is the pure
# ``compaction.drift.findings`` (``CODES``: each code and its kind); these
# are its choices for the database and the schema.
DriftKind = models.TextChoices("DriftKind", [(kind.upper(), kind) for kind in dict.fromkeys(CODES.values())])
DriftCode = models.TextChoices("DriftCode", [(code.upper(), code) for code in CODES])


class DriftReport(models.Model):
    generation = models.OneToOneField(SummaryGeneration, on_delete=models.CASCADE, primary_key=True,
                                      related_name="drift_report")
    finding_count = models.PositiveIntegerField(default=0)
    checked_at = models.DateTimeField(auto_now=True)


class DriftFinding(models.Model):
    generation = models.ForeignKey(SummaryGeneration, on_delete=models.CASCADE, related_name="drift_findings")
    position = models.PositiveIntegerField()  # the checkers' order within the report
    kind = models.CharField(max_length=10, choices=DriftKind.choices)
    code = models.CharField(max_length=40, choices=DriftCode.choices)
    section = models.CharField(max_length=20, null=True, blank=True)  # note.SECTIONS key; None: the whole note
    line = models.PositiveIntegerField(null=True, blank=True)  # 1-based note line; None: the whole note
    message_ids = models.JSONField(default=list)  # the messages that prove it (external ids)
    detail = models.TextField(blank=True, default="")
    subject = models.TextField(blank=True, default="")  # the words it is about (a quote, a value, a condition)
    reviews = models.ManyToManyField(Review, blank=True, related_name="cited_findings")

    class Meta:
        ordering = ("generation_id", "position")
        constraints = [
            models.UniqueConstraint(fields=["generation", "position"], name="drift_finding_position_unique"),
        ]
        indexes = [models.Index(fields=["code", "generation"], name="drift_finding_code")]

    def as_record(self) -> dict:
        """The audit record's shape of one finding (SPEC §11)."""
        return {"kind": self.kind, "code": self.code, "section": self.section, "line": self.line,
                "message_ids": list(self.message_ids)}
