"""A binding kind that exists only in the test suite (issue 10): proof that
the engine takes a second kind of job without a change to its claim,
finish, lease or admission code.

A *quintet* job summarises five consecutive pairs ``[5k, 5k+4]`` (ten
message ids, SPEC §5's digest over them) and, like the rolling hand-off
notes of SPEC §7, may be written from a parent generation: it is claimable
only while that parent is the newest quintet generation of its
conversation (a first job, without a parent, only while there is none).
Its contract is stricter than a segment's: at most 2,000 characters.
"""

from __future__ import annotations

import hashlib

from compaction import bindings
from compaction.bindings.base import PairRangeBinding
from compaction.contract import check
from compaction.digest import digest_input, source_digest
from compaction.models import CompactionJob, PromptVersion, SummaryGeneration
from compaction.providers.extractive import EXTRACTIVE_MODEL_ID
from conversations.models import Pair

KIND = "test-quintet"
SIZE = 5


class QuintetBinding(PairRangeBinding):
    kind = KIND
    prompt_family = KIND

    def range_problem(self, from_pair, to_pair):
        if from_pair % SIZE == 0 and to_pair == from_pair + SIZE - 1:
            return ""
        return f"range {from_pair}-{to_pair} is not {SIZE} pairs starting on a multiple of {SIZE}"

    def range_sql(self, *, job):
        return f"{job}.from_pair %% {SIZE} = 0 AND {job}.to_pair = {job}.from_pair + {SIZE - 1}"

    def current_sql(self, *, job):
        newest = (f"(SELECT max(g.id) FROM compaction_summarygeneration g "
                  f"WHERE g.conversation_id = {job}.conversation_id AND g.kind = %s)")
        return (f"{job}.source_changed_at IS NULL AND ("
                f"({job}.parent_generation_id IS NULL AND {newest} IS NULL) "
                f"OR {job}.parent_generation_id = {newest})"), [KIND, KIND]

    def judge(self, result):
        return check(result, max_chars=2000)


QUINTETS = QuintetBinding()


def register() -> None:
    bindings.register(QUINTETS)


def unregister() -> None:
    bindings.unregister(KIND)


def prompt_version() -> PromptVersion:
    return PromptVersion.objects.get_or_create(
        name=f"{KIND}@1",
        defaults={"family": KIND, "version": 1, "system_template": "Summarise five answers.",
                  "user_template": "{answers}", "is_current": True},
    )[0]


def quintet_job(conversation, *, k: int, parent: SummaryGeneration | None = None,
                model_id: str = EXTRACTIVE_MODEL_ID,
                **overrides) -> CompactionJob:
    """A pending quintet job bound to pairs ``[5k, 5k+4]`` as stored now."""
    pairs = list(Pair.objects.filter(conversation=conversation, index__gte=SIZE * k, index__lt=SIZE * (k + 1))
                 .select_related("user_message", "assistant_message").order_by("index"))
    binding = {
        "kind": KIND, "scope": conversation.scope, "conversation": conversation,
        "from_pair": SIZE * k, "to_pair": SIZE * k + SIZE - 1,
        "message_ids": [x for p in pairs for x in (p.user_message.external_id, p.assistant_message.external_id)],
        "source_digest": source_digest(
            digest_input(p.index, p.user_message.external_id, p.user_message.content,
                         p.assistant_message.external_id, p.assistant_message.content) for p in pairs),
        "model_id": model_id, "prompt_version": prompt_version(),
        "parent_generation": parent,
        "parent_digest": hashlib.sha256(parent.text.encode()).hexdigest() if parent else "",
    }
    return CompactionJob.objects.create(**{**binding, **overrides})
