"""What was said (SPEC §2–§4).

Models hold data and constraints; the rules that decide what a pair is
live in ``pairing.py``, and which ranges a segment covers is asked of the
listener registered on ``hooks`` (compaction's plan). ``Pair`` and
``Segment`` are materialised projections, rebuilt by ``services.ingest``
whenever a conversation's runs or messages change, inside the same
transaction.
"""

from django.conf import settings
from django.db import models


class RunStatus(models.TextChoices):
    COMPLETED = "completed"
    PARTIAL = "partial"
    CLARIFY_PENDING = "clarify_pending"
    RUNNING = "running"
    FAILED = "failed"
    CANCELLED = "cancelled"


class MessageRole(models.TextChoices):
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    SYSTEM = "system"


class MessageStatus(models.TextChoices):
    COMPLETED = "completed"
    STREAMING = "streaming"
    FAILED = "failed"


class Conversation(models.Model):
    scope = models.CharField(max_length=100)
    external_id = models.CharField(max_length=200)
    title = models.CharField(max_length=500, blank=True, default="")
    metadata = models.JSONField(default=dict, blank=True)
    pair_count = models.PositiveIntegerField(default=0)
    segment_count = models.PositiveIntegerField(default=0)
    message_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # When the conversation itself last saw a message (from the document).
    last_activity_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["scope", "external_id"], name="conversation_scope_external_id_unique"),
        ]
        indexes = [
            models.Index(fields=["scope", "-updated_at"], name="conversation_scope_updated"),
            models.Index(fields=["-updated_at", "-id"], name="conversation_updated"),
            models.Index(fields=["external_id"], name="conversation_external_id"),
        ]

    def __str__(self) -> str:
        return f"{self.scope}/{self.external_id}"


# A foreign key whose column leads a composite index or unique constraint of
# its table gets no index of its own (``db_index=False``): the composite one
# serves every lookup by it, and each extra index costs every insert.


class Run(models.Model):
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="runs", db_index=False)
    external_id = models.CharField(max_length=200)
    status = models.CharField(max_length=20, choices=RunStatus.choices)
    created_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["conversation", "external_id"], name="run_conversation_external_id_unique"),
        ]

    def __str__(self) -> str:
        return self.external_id


class Message(models.Model):
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages", db_index=False)
    # Null when the message has no run: it is kept, shown, never paired.
    run = models.ForeignKey(
        Run, on_delete=models.CASCADE, null=True, blank=True, related_name="messages", db_index=False
    )  # indexed as "message_run" below
    external_id = models.CharField(max_length=200)
    role = models.CharField(max_length=20, choices=MessageRole.choices)
    content = models.TextField(blank=True, default="")
    status = models.CharField(max_length=20, choices=MessageStatus.choices, default=MessageStatus.COMPLETED)
    tool_calls = models.JSONField(null=True, blank=True)
    tool_call_id = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField()
    # Order in which the message was first stored; breaks created_at ties.
    sequence = models.PositiveIntegerField(default=0)
    revision_count = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "external_id"], name="message_conversation_external_id_unique"
            ),
        ]
        indexes = [
            models.Index(fields=["conversation", "sequence"], name="message_conversation_sequence"),
            models.Index(fields=["run"], name="message_run"),
        ]

    def __str__(self) -> str:
        return self.external_id


class MessageRevision(models.Model):
    """One earlier content of a message, kept when a newer one replaced it."""

    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="revisions", db_index=False)
    number = models.PositiveIntegerField()
    content = models.TextField(blank=True, default="")
    status = models.CharField(max_length=20, choices=MessageStatus.choices)
    tool_calls = models.JSONField(null=True, blank=True)
    # When this content stopped being current, and who sent the replacement.
    replaced_at = models.DateTimeField()
    replaced_by = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["message", "number"], name="message_revision_number_unique"),
        ]
        ordering = ["message", "number"]


class Pair(models.Model):
    """A settled user–assistant exchange (SPEC §4), materialised.

    Derived data: pairs are written only by the ingest services, in the same
    transaction as the runs and messages they point at, and go with their
    conversation. So their references to runs and messages are not checked
    by the database (``db_constraint=False``) nor indexed: nothing looks a
    pair up by them, and the three checks and three index entries per pair
    were a fifth of what a bulk import cost. Reads join from pair to message
    by the message's primary key.
    """

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="pairs", db_index=False)
    index = models.PositiveIntegerField()
    run = models.ForeignKey(Run, on_delete=models.DO_NOTHING, related_name="+", db_constraint=False, db_index=False)
    user_message = models.ForeignKey(
        Message, on_delete=models.DO_NOTHING, related_name="+", db_constraint=False, db_index=False
    )
    assistant_message = models.ForeignKey(
        Message, on_delete=models.DO_NOTHING, related_name="+", db_constraint=False, db_index=False
    )
    # Known at write time so a projection can pack without reading texts.
    user_bytes = models.PositiveIntegerField(default=0)
    assistant_bytes = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["conversation", "index"], name="pair_conversation_index_unique"),
        ]
        ordering = ["conversation", "index"]


class Segment(models.Model):
    """A planned 10-pair range with its *current* source digest (SPEC §5).

    Rebuilt in the same transaction as any ingest that changes one of its
    messages, so readers compare a generation's stored digest with
    ``digest`` without re-reading texts. A range that is no longer planned
    has no row.
    """

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="segments", db_index=False)
    number = models.PositiveIntegerField()
    from_pair = models.PositiveIntegerField()
    to_pair = models.PositiveIntegerField()
    # [user_0, assistant_0, user_1, assistant_1, ...] external ids, 20 of them.
    message_ids = models.JSONField()
    digest = models.CharField(max_length=64)
    user_bytes = models.PositiveIntegerField(default=0)
    assistant_bytes = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["conversation", "from_pair"], name="segment_conversation_from_unique"),
        ]
        ordering = ["conversation", "from_pair"]


class ScopeGrant(models.Model):
    """Which scopes a (non-staff) user may see. Staff see every scope."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="scope_grants")
    scope = models.CharField(max_length=100)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "scope"], name="scope_grant_user_scope_unique"),
        ]


class TokenScope(models.Model):
    """Narrows an API token to some of its user's scopes.

    A token without a row sees every scope its user sees; with a row it sees
    only the intersection of ``scopes`` and its user's grants.
    """

    token = models.OneToOneField("authtoken.Token", on_delete=models.CASCADE, related_name="scope_limit")
    scopes = models.JSONField(default=list)
