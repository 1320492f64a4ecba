"""What the rolling hand-off binding keeps beside its jobs (SPEC §7; seed
002 §6.5–§6.6, §11.2). Jobs and generations themselves are the engine's
(``jobs``, ``generations``); these rows are the binding's own:

* ``HandoffPlan`` — one per hand-off job: why it was planned (the trigger
  rule that fired, its counts, which planning pass and round), the
  material's digest as stored *now* (kept current by the ingest, in its
  transaction, like a segment's ``Segment.digest``), and, once the chain
  broke at or above it, where it broke;
* ``HandoffCheck`` — one per rolling conversation: the trigger's last
  decision and what it was made over (pair count, the chain's tip), so the
  periodic scan only re-asks conversations that changed since;
* ``MessageTokens`` — each message's token count for the revision it was
  counted at, so planning counts only pairs it has not seen (its cost
  stays flat however long the chain grows).
"""

from django.db import models
from django.utils import timezone

from .generations import SummaryGeneration
from .jobs import CompactionJob

# What asked for a hand-off job to be planned.
TRIGGER_PLAN = "plan"  # planning after an ingest, the periodic scan, or ``compact``: round 1 of a pass
TRIGGER_CHAIN = "chain"  # the next round of a planning pass, once its parent was written
TRIGGER_OPERATOR = "operator"  # an operator's re-plan or re-run of a conversation


class HandoffPlan(models.Model):
    job = models.OneToOneField(CompactionJob, on_delete=models.PROTECT, primary_key=True, related_name="handoff")
    round = models.PositiveIntegerField(default=1)  # within its planning pass (at most max_rounds_per_request)
    trigger = models.CharField(max_length=20, default=TRIGGER_PLAN)
    reason = models.CharField(max_length=40)  # the rule that fired: tokens / window
    material_messages = models.PositiveIntegerField(default=0)
    material_tokens = models.PositiveIntegerField(default=0)
    estimate_tokens = models.PositiveIntegerField(default=0)  # last note + every unsummarised pair
    # The digest of the job's pair range as stored now (SPEC §5 digest);
    # equal to the job's source digest while its material is unchanged.
    current_digest = models.CharField(max_length=64, blank=True, default="")
    # Tokens of the note this job wrote (counted once, when it is a parent).
    note_tokens = models.PositiveIntegerField(null=True, blank=True)
    # Where the chain broke when this job stopped being current: the
    # generation whose own material changed (this job's, or an ancestor's)
    # and the first pair the ingest changed.
    break_generation = models.ForeignKey(SummaryGeneration, on_delete=models.PROTECT, null=True, blank=True,
                                         related_name="+")
    break_pair = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)


class HandoffCheck(models.Model):
    conversation = models.OneToOneField("conversations.Conversation", on_delete=models.CASCADE, primary_key=True,
                                        related_name="handoff_check")
    pair_count = models.PositiveIntegerField(default=0)
    parent = models.ForeignKey(SummaryGeneration, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    decision = models.CharField(max_length=40, blank=True, default="")  # a trigger reason, or why nothing was asked
    material_messages = models.PositiveIntegerField(default=0)
    material_tokens = models.PositiveIntegerField(default=0)
    estimate_tokens = models.PositiveIntegerField(default=0)
    checked_at = models.DateTimeField(default=timezone.now)


class MessageTokens(models.Model):
    message = models.OneToOneField("conversations.Message", on_delete=models.CASCADE, primary_key=True,
                                   related_name="+")
    revision = models.PositiveIntegerField()  # the message's revision_count when counted
    tokens = models.PositiveIntegerField()
