"""What a job is bound to: the interface every binding kind gives the one
engine (issue 10; SPEC §5, §7).

The engine (``compaction.engine``) claims, runs, finishes and reaps every
job the same way. What differs between kinds of job — fixed 10-pair
segments today (``segments``), rolling hand-off notes bound to a parent
generation next (SPEC §7) — is asked of the job's ``Binding``
(``job.kind``), and only this:

* **its claim condition**, in two halves. The *shape* of a binding
  (``shape_problem`` in Python, ``shape_sql`` in SQL: the same rule twice,
  side by side) never changes after a job is created, so the engine checks
  it before claiming and again inside the claim statement. Whether the
  binding is still *current* (``current_sql``: its source digest, and for a
  child its parent, still match what is stored) is checked inside the one
  conditional UPDATE that claims the job, again in the statement that
  finishes it, and by the reaper;
* **its material**: ``request`` turns the bound messages, as stored, into
  what the provider sees, or says why it cannot (the source moved);
* **its contract**: ``judge`` (SPEC §5's output contract unless a kind adds
  to it) and ``summary_text`` (what of an accepted answer is kept);
* **its planning**: the jobs a conversation needs (``plan``), the
  conversations that still need some (``conversations_unplanned``), and
  what follows once one of its jobs wrote a generation
  (``after_generation``: a rolling chain's next round);
* **its provider and model**, when a kind is summarised by another one.

SQL fragments use ``{job}`` for the job row (the engine names its alias)
and ``%s`` parameters, fixed for the kind; a literal percent sign is
``%%``. A fragment is a condition that is true or false, never NULL.
"""

from __future__ import annotations

from django.db import connection
from django.db.models import BooleanField
from django.db.models.expressions import RawSQL

from .. import providers
from ..contract import ContractResult, ProviderResult, check
from ..digest import digest_input, source_digest
from ..models import Attempt, CompactionJob, PromptVersion
from ..providers import Answer, SummaryRequest, render_answers


class Binding:
    kind = ""
    prompt_family = ""

    # --- planning -----------------------------------------------------------

    def prompt_version(self) -> PromptVersion:
        """The prompt version new jobs of this kind are bound to."""
        return PromptVersion.objects.get(family=self.prompt_family, is_current=True)

    def model_id(self) -> str:
        """The model id new jobs of this kind are bound to: the configured
        provider's (``extractive-v2`` offline; ``COMPACTION_MODEL`` for
        ``openai``)."""
        return providers.configured_model_id()

    def provider(self):
        return providers.provider_get()

    def plan(self, *, conversation) -> list[CompactionJob]:
        """Create the pending jobs ``conversation`` needs now; the ones created."""
        return []

    def conversations_unplanned(self, *, limit: int) -> list[int]:
        """Conversations that need a job of this kind that nobody planned."""
        return []

    def after_generation(self, *, job: CompactionJob) -> list[CompactionJob]:
        """The pending jobs to create now that ``job`` wrote its generation
        (called by whoever ran it, after the engine finished)."""
        return []

    # --- the claim condition ------------------------------------------------

    def shape_problem(self, job: CompactionJob) -> str:
        """Why the binding can never be claimed as it is ("" when it can)."""
        raise NotImplementedError

    def shape_sql(self, *, job: str, vendor: str) -> tuple[str, list]:
        """``shape_problem`` as an SQL condition."""
        raise NotImplementedError

    def current_sql(self, *, job: str) -> tuple[str, list]:
        """True while the binding matches what is stored now."""
        raise NotImplementedError

    def current(self) -> RawSQL:
        """``current_sql`` over the job table itself, for ORM filters (never
        inside a subquery, where the table has another alias)."""
        sql, params = self.current_sql(job=connection.ops.quote_name(CompactionJob._meta.db_table))
        return RawSQL(sql, params, output_field=BooleanField())

    def is_current(self, job: CompactionJob) -> bool:
        return CompactionJob.objects.filter(pk=job.pk).filter(self.current()).exists()

    # --- material and contract ----------------------------------------------

    def request(self, *, job: CompactionJob, attempt: Attempt,
                stored: dict[str, str]) -> tuple[SummaryRequest | None, str]:
        """What the provider sees for this attempt, from the bound messages
        as stored (external id -> content); ``(None, why)`` when they no
        longer give the binding, so a summary is never made of anything but
        its source."""
        raise NotImplementedError

    def judge(self, result: ProviderResult) -> ContractResult:
        return check(result)

    def summary_text(self, result: ProviderResult) -> str:
        """What of an accepted answer becomes the generation's text."""
        return result.text

    # --- beside the generation ---------------------------------------------------

    def generation_prepare(self, *, job: CompactionJob, text: str):
        """What this kind keeps beside the generation ``job`` is about to
        write with ``text``, computed before the finish's transaction (reads
        only); None when it keeps nothing."""
        return None

    def generation_record(self, *, generation_id: int, prepared) -> None:
        """Write ``prepared`` (from ``generation_prepare``, not None) beside
        the new generation, inside the transaction that writes it."""


def _ids_sql(*, job: str, vendor: str, count: str) -> str:
    """The binding lists ``count`` distinct, non-empty message ids (the JSON
    functions differ per database)."""
    if vendor == "postgresql":
        return (f"(SELECT count(DISTINCT x) FROM jsonb_array_elements_text({job}.message_ids) AS x WHERE x <> '') "
                f"= {count} AND jsonb_array_length({job}.message_ids) = {count}")
    return (f"(SELECT count(DISTINCT value) FROM json_each({job}.message_ids) WHERE type = 'text' AND value <> '') "
            f"= {count} AND json_array_length({job}.message_ids) = {count}")


class PairRangeBinding(Binding):
    """A binding to consecutive pairs ``[from_pair, to_pair]``: the message
    ids are each pair's user then assistant message, the source digest is
    SPEC §5's over those pairs, and the provider sees only the assistant
    answers, each under its message id (never user text). A kind says which
    ranges it accepts (``range_problem`` / ``range_sql``) and when it is
    current."""

    def range_problem(self, from_pair: int, to_pair: int) -> str:
        raise NotImplementedError

    def range_sql(self, *, job: str) -> str:
        raise NotImplementedError

    def shape_problem(self, job: CompactionJob) -> str:
        problem = self.range_problem(job.from_pair, job.to_pair)
        if problem:
            return problem
        count = 2 * (job.to_pair - job.from_pair + 1)
        ids = job.message_ids if isinstance(job.message_ids, list) else []
        if len(ids) != count or any(not isinstance(i, str) or not i for i in ids) or len(set(ids)) != count:
            return f"the binding does not list {count} distinct, non-empty message ids"
        return ""

    def shape_sql(self, *, job: str, vendor: str) -> tuple[str, list]:
        count = f"(2 * ({job}.to_pair - {job}.from_pair + 1))"
        return f"{self.range_sql(job=job)} AND {_ids_sql(job=job, vendor=vendor, count=count)}", []

    def bound_pairs(self, *, job, stored: dict[str, str]) -> tuple[list[tuple] | None, str | None]:
        """The job's bound pairs as stored now — ``(index, user id, user text,
        assistant id, assistant text)`` each — or why they can no longer be
        read as what the job is bound to (a message gone, the digest moved)."""
        ids = job.message_ids
        if any(i not in stored for i in ids):
            return None, "a bound message no longer exists"
        pairs = [(job.from_pair + k, ids[2 * k], stored[ids[2 * k]], ids[2 * k + 1], stored[ids[2 * k + 1]])
                 for k in range(job.to_pair - job.from_pair + 1)]
        if source_digest([digest_input(*p) for p in pairs]) != job.source_digest:
            return None, "the stored messages no longer give the bound digest"
        return pairs, None

    def request(self, *, job, attempt, stored):
        bound, problem = self.bound_pairs(job=job, stored=stored)
        if bound is None:
            return None, problem
        pairs = [digest_input(*p) for p in bound]
        answers = tuple(Answer(p["assistant"]["id"], p["assistant"]["text"]) for p in pairs)
        pv = job.prompt_version
        return SummaryRequest(
            answers=answers,
            system=pv.system_template,
            user=pv.user_template.replace("{answers}", render_answers(answers)),
            prompt_version=pv.name,
            job_id=job.pk,
            attempt=attempt.number,
        ), ""
