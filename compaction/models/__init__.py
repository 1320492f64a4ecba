"""What we made of what was said (SPEC §5, §8, §11).

One module per kind of record; every model name is importable from
``compaction.models`` as before:

* ``prompts``      PromptVersion (frozen once used)
* ``jobs``         CompactionJob, Attempt and their states
* ``generations``  SummaryGeneration (immutable)
* ``reviews``      Review, its Verdict and the rule for whether it stands; ReviewClaim, ReviewAwaiting
* ``audit``        AuditEvent: the log of human actions
* ``admission``    AdmissionSlot (the global bound on model calls)
* ``policies``     ScopePolicy: a scope's policy, segments or rolling (SPEC §7)
* ``handoff``      what the rolling hand-off binding keeps beside its jobs
* ``drift``        DriftReport, DriftFinding: a generation's drift findings (SPEC §8)

Models hold data and constraints; the engine decides.
"""

from .admission import AdmissionSlot
from .audit import AuditEvent
from .drift import DriftCode, DriftFinding, DriftKind, DriftReport
from .generations import GenerationQuerySet, ImmutableGenerationError, SummaryGeneration
from .handoff import HandoffCheck, HandoffPlan, MessageTokens
from .jobs import (SEGMENT_KIND, SETTLED_STATES, Attempt, AttemptOutcome, CompactionJob, CompactionJobQuerySet,
                   FailureCode, JobState, attempt_limit)
from .policies import Policy, ScopePolicy
from .prompts import FROZEN_PROMPT_FIELDS, FrozenPromptError, PromptVersion
from .reviews import Review, ReviewAwaiting, ReviewClaim, Verdict, verdict_stands

__all__ = [
    "AdmissionSlot", "Attempt", "AttemptOutcome", "AuditEvent", "CompactionJob", "CompactionJobQuerySet",
    "DriftCode", "DriftFinding", "DriftKind", "DriftReport",
    "FROZEN_PROMPT_FIELDS", "FailureCode", "FrozenPromptError", "GenerationQuerySet", "HandoffCheck", "HandoffPlan",
    "ImmutableGenerationError", "JobState", "MessageTokens", "Policy", "PromptVersion", "Review", "ReviewAwaiting",
    "ReviewClaim", "SEGMENT_KIND",
    "SETTLED_STATES", "ScopePolicy", "SummaryGeneration", "Verdict",
    "attempt_limit", "verdict_stands",
]
