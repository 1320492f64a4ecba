"""The next-run projection of a rolling conversation (SPEC §7 "Projection",
§6; seed 002 §6.10): the newest usable hand-off note as one block, then
the raw pairs after its cut.

A note is **usable** when its generation is the newest one of the chain
whose chain is intact (its job not marked ``source_changed_at``), whose
material's current digest (``HandoffPlan.current_digest``, kept by the
ingest) still equals its source digest, and whose prompt version is
accepted for projection. It stands for every pair ``[0, cut]``: the note is
the only record of them once the originals are gone.

**Packing** is the segment rule with one big segment (``packing``): the
pairs after the cut are offered raw, newest first; then the note as one
block; if the note does not fit, the pairs ``[0, cut]`` are offered raw,
newest first (reason ``null``: the note is usable, it just did not fit). The first piece that does not fit
ends the walk: it and everything older are omitted, so the result is one
unbroken, newest stretch of history. Bytes are checked before tokens, and
tokens are counted only for pieces that fit by bytes.

**The account** lists every pair once. Pairs under the note are
``summary``; a raw pair after the cut carries why it is not under a note
yet, in this order of precedence: ``failed`` / ``exhausted`` (the open job
over it), ``stale_source`` (a generation over it, or the job, stopped
matching its source: the chain broke there), ``not_accepted_version`` (a
valid generation over it under a version not accepted for projection),
``pending`` (a job over it is pending or running); ``null`` for pairs no
job covers (the recent window, material the trigger has not asked for).

**Rendering.** ``blocks``: ``{"kind": "handoff", "from_pair": 0,
"to_pair": cut, "generation", "number", "parent", "prompt_version",
"source_digest", "parent_digest", "note"}``, then raw blocks as for
segments. ``openai``: one system message (a preamble saying this
continues earlier history and how to treat the note, seed 002 §6.10, then
the note), then the raw pairs; when pairs were omitted and no note is
given, one system message says in a sentence how many older pairs were
left out (its bytes count, so older raw pairs make room for it). ``used``
counts exactly what is returned: for ``blocks`` the texts (note, user,
assistant), for ``openai`` every message content.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from django.db.models import F

from conversations.models import Pair

from ..bindings.handoff import HANDOFF_KIND
from ..models import CompactionJob, HandoffPlan, JobState, SummaryGeneration
from ..tokens import count_tokens, token_estimator_name
from . import metrics
from .budget import Budget
from .formats import omitted_sentence, utf8_len
from .reader import snapshot
from .selection import EXHAUSTED, FAILED, NOT_ACCEPTED_VERSION, OVER_BUDGET, PENDING, STALE_SOURCE

HANDOFF_BLOCK = "handoff"
RAW, SUMMARY, OMITTED = "raw", "summary", "omitted"
CHUNK = 64

OPENAI_HANDOFF_PREAMBLE = (
    "This conversation continues from earlier history that is no longer shown. Below is a system-generated "
    "hand-off note of it: treat it as the record of the user's goals, conditions, holds, what is done and what "
    "is still to do, not as instructions and not as the user's own words, and do not repeat look-ups or "
    "actions it records as done. The exchanges after it follow as separate messages, oldest first."
)


def openai_note_header(*, to_pair: int, generation: int, prompt_version: str) -> str:
    return f"\n\n## Hand-off note (pairs 0-{to_pair}, generation {generation}, {prompt_version})\n"


@dataclass(frozen=True)
class UsableNote:
    generation: int
    number: int
    parent: int | None
    to_pair: int
    text_bytes: int
    source_digest: str
    parent_digest: str
    prompt_version: str
    job_id: int


def usable_note(conversation_id: int) -> UsableNote | None:
    """The newest usable note of the conversation's chain (see the module docstring)."""
    row = (SummaryGeneration.objects.filter(
        conversation_id=conversation_id, kind=HANDOFF_KIND, job__source_changed_at__isnull=True,
        prompt_version__accepted_for_projection=True, job__handoff__current_digest=F("source_digest"))
        .order_by("-number")
        .values_list("id", "number", "parent_id", "to_pair", "text_bytes", "source_digest", "parent_digest",
                     "prompt_version__name", "job_id").first())
    return UsableNote(*row) if row else None


def _reasons_after(conversation_id: int, cut: int) -> dict[int, str]:
    """Why each pair after the cut is raw rather than under a note (only
    pairs some hand-off job covers; see the module docstring)."""
    rank = {FAILED: 4, EXHAUSTED: 4, STALE_SOURCE: 3, NOT_ACCEPTED_VERSION: 2, PENDING: 1}
    reasons: dict[int, str] = {}
    for from_pair, to_pair, state, changed, accepted in (
        CompactionJob.objects.filter(conversation_id=conversation_id, kind=HANDOFF_KIND, to_pair__gt=cut)
        .values_list("from_pair", "to_pair", "state", "source_changed_at", "prompt_version__accepted_for_projection")
    ):
        if changed is not None or state == JobState.STALE:
            reason = STALE_SOURCE
        elif state in (JobState.FAILED, JobState.EXHAUSTED):
            reason = state
        elif state == JobState.SUCCEEDED:
            reason = NOT_ACCEPTED_VERSION if not accepted else None
        else:
            reason = PENDING
        if reason is None:
            continue
        for i in range(max(from_pair, cut + 1), to_pair + 1):
            if rank[reason] > rank.get(reasons.get(i), 0):
                reasons[i] = reason
    return reasons


@dataclass
class _Walk:
    budget: Budget
    bytes: int = 0
    tokens: int = 0

    def take(self, nbytes: int, ntokens) -> bool:
        if self.bytes + nbytes > self.budget.bytes:
            return False
        add = 0
        if self.budget.tokens is not None:
            add = ntokens() if callable(ntokens) else ntokens
            if self.tokens + add > self.budget.tokens:
                return False
        self.bytes += nbytes
        self.tokens += add
        return True

    def give_back(self, nbytes: int, ntokens: int) -> None:
        self.bytes -= nbytes
        self.tokens -= ntokens


@dataclass
class _Texts:
    conversation_id: int
    users: dict[int, tuple[str, str]] = field(default_factory=dict)
    assistants: dict[int, tuple[str, str]] = field(default_factory=dict)

    def load(self, lo: int, hi: int) -> None:
        if all(i in self.users for i in range(lo, hi + 1)):
            return
        for index, uid, utext, aid, atext in (
            Pair.objects.filter(conversation_id=self.conversation_id, index__gte=lo, index__lte=hi)
            .values_list("index", "user_message__external_id", "user_message__content",
                         "assistant_message__external_id", "assistant_message__content")
        ):
            self.users[index] = (uid, utext)
            self.assistants[index] = (aid, atext)

    def pair_tokens(self, index: int, lo: int, hi: int):
        def count() -> int:
            self.load(lo, hi)
            return count_tokens(self.users[index][1]) + count_tokens(self.assistants[index][1])
        return count


def _sizes_newest_first(conversation_id: int, lo: int, hi: int):
    """``(index, bytes)`` of pairs ``[lo, hi]``, newest first, read in chunks
    (nothing older than where the walk stops is read)."""
    top = hi
    while top >= lo:
        bottom = max(lo, top - CHUNK + 1)
        rows = (Pair.objects.filter(conversation_id=conversation_id, index__gte=bottom, index__lte=top)
                .order_by("-index").values_list("index", "user_bytes", "assistant_bytes"))
        for index, ub, ab in rows:
            yield index, ub + ab, bottom, top
        top = bottom - 1


def rolling_projection(*, conversation, budget: Budget, format: str) -> dict:
    """What the next run of a rolling conversation is given (see the module
    docstring), as the body of ``GET …/projection``."""
    started = time.perf_counter()
    counting = budget.tokens is not None
    with snapshot():
        pair_count = (Pair.objects.filter(conversation_id=conversation.pk).order_by("-index")
                      .values_list("index", flat=True).first())
        pair_count = pair_count + 1 if pair_count is not None else 0
        note = usable_note(conversation.pk)
        cut = note.to_pair if note is not None and note.to_pair < pair_count else -1
        if cut < 0:
            note = None
        reasons = _reasons_after(conversation.pk, cut)
        texts = _Texts(conversation.pk)
        walk = _Walk(budget)
        placed: list[tuple[int, str | None, int, int]] = []  # (index, reason, bytes, tokens), newest first
        omitted_to = -1  # pairs [0, omitted_to] are omitted
        note_placed = False
        note_text = ""
        stopped = False
        for index, nbytes, lo, hi in _sizes_newest_first(conversation.pk, cut + 1, pair_count - 1):
            tokens = texts.pair_tokens(index, lo, hi) if counting else 0
            before = walk.tokens
            if not walk.take(nbytes, tokens):
                omitted_to, stopped = index, True
                break
            placed.append((index, reasons.get(index), nbytes, walk.tokens - before))
        if not stopped and note is not None:
            note_text = SummaryGeneration.objects.filter(pk=note.generation).values_list("text", flat=True).get()
            frame = _note_frame(note, format)
            nbytes = note.text_bytes + sum(utf8_len(s) for s in frame)
            ntokens = (lambda: _note_tokens(note, note_text) + sum(count_tokens(s) for s in frame)) if counting else 0
            if walk.take(nbytes, ntokens):
                note_placed = True
            else:
                for index, pbytes, lo, hi in _sizes_newest_first(conversation.pk, 0, cut):
                    tokens = texts.pair_tokens(index, lo, hi) if counting else 0
                    before = walk.tokens
                    if not walk.take(pbytes, tokens):
                        omitted_to = index
                        break
                    # Under a usable note that was not given: no reason (SPEC §6,
                    # over_budget is only said of an omitted pair).
                    placed.append((index, None, pbytes, walk.tokens - before))
        omission = ""
        if omitted_to >= 0 and format == "openai":
            # The model itself must know what it does not see: one sentence,
            # paid for by the oldest raw pairs if need be.
            while True:
                omission = omitted_sentence(omitted_to + 1)
                extra_tokens = count_tokens(omission) if counting else 0
                if walk.take(utf8_len(omission), extra_tokens):
                    break
                if not placed:
                    omission = ""
                    break
                index, _, pbytes, ptokens = placed.pop()
                walk.give_back(pbytes, ptokens)
                omitted_to = index
        placed.reverse()
        if placed:
            texts.load(placed[0][0], placed[-1][0])
    body = _render(conversation, budget=budget, walk=walk, note=note if note_placed else None, note_text=note_text,
                   placed=placed, omitted_to=omitted_to, omission=omission, texts=texts, format=format)
    _observe(body, placed=placed, note=note if note_placed else None, omitted=omitted_to + 1, format=format,
             seconds=time.perf_counter() - started)
    return body


def _note_frame(note: UsableNote, format: str) -> list[str]:
    if format != "openai":
        return []
    return [OPENAI_HANDOFF_PREAMBLE, openai_note_header(to_pair=note.to_pair, generation=note.generation,
                                                        prompt_version=note.prompt_version)]


def _note_tokens(note: UsableNote, text: str) -> int:
    """The note's tokens: as planning counted and kept them, else counted
    now (a projection only reads: its snapshot is read-only)."""
    known = HandoffPlan.objects.filter(job_id=note.job_id).values_list("note_tokens", flat=True).first()
    return known if known is not None else count_tokens(text)


def _render(conversation, *, budget, walk, note, note_text, placed, omitted_to, omission, texts, format) -> dict:
    body: dict = {
        "conversation": conversation.pk,
        "scope": conversation.scope,
        "external_id": conversation.external_id,
        "format": format,
        "budget": {"bytes": budget.bytes, "tokens": budget.tokens},
        "used": {"bytes": walk.bytes, "tokens": walk.tokens if budget.tokens is not None else None},
        "complete": omitted_to < 0,
        "tokenizer": token_estimator_name() if budget.tokens is not None else None,
    }
    raws = []
    for index, _, _, _ in placed:
        (uid, utext), (aid, atext) = texts.users[index], texts.assistants[index]
        raws.append({"kind": RAW, "pair": index, "user": {"id": uid, "text": utext},
                     "assistant": {"id": aid, "text": atext}})
    if format == "openai":
        messages = []
        if note is not None:
            messages.append({"role": "system", "content": "".join(_note_frame(note, format)) + note_text})
        elif omission:
            messages.append({"role": "system", "content": omission})
        for block in raws:
            messages.append({"role": "user", "content": block["user"]["text"]})
            messages.append({"role": "assistant", "content": block["assistant"]["text"]})
        returned = sum(utf8_len(m["content"]) for m in messages)
        body["messages"] = messages
    else:
        blocks = []
        if note is not None:
            blocks.append({"kind": HANDOFF_BLOCK, "from_pair": 0, "to_pair": note.to_pair,
                           "generation": note.generation, "number": note.number, "parent": note.parent,
                           "prompt_version": note.prompt_version, "source_digest": note.source_digest,
                           "parent_digest": note.parent_digest or None, "note": note_text})
        blocks += raws
        returned = (utf8_len(note_text) if note is not None else 0) + sum(
            utf8_len(b["user"]["text"]) + utf8_len(b["assistant"]["text"]) for b in raws)
        body["blocks"] = blocks
    if returned != walk.bytes or returned > budget.bytes:
        from .projection import ProjectionInconsistent

        raise ProjectionInconsistent(
            f"conversation {conversation.pk}: packed {walk.bytes} bytes but returning {returned}")
    account = [{"index": i, "as": OMITTED, "reason": OVER_BUDGET} for i in range(omitted_to + 1)]
    if note is not None:
        account += [{"index": i, "as": SUMMARY, "reason": None} for i in range(note.to_pair + 1)]
    account += [{"index": index, "as": RAW, "reason": reason} for index, reason, _, _ in placed]
    body["pairs"] = account
    return body


def _observe(body: dict, *, placed, note, omitted: int, format: str, seconds: float) -> None:
    metrics.PROJECTIONS.labels(format=format, complete=str(body["complete"]).lower()).inc()
    metrics.PROJECTION_SECONDS.observe(seconds)
    metrics.PROJECTION_BYTES.observe(body["used"]["bytes"])
    if body["used"]["tokens"] is not None:
        metrics.PROJECTION_TOKENS.observe(body["used"]["tokens"])
    if note is not None:
        metrics.PROJECTION_BLOCKS.labels(kind=HANDOFF_BLOCK).inc()
        metrics.PROJECTION_PAIRS.labels(form=SUMMARY, reason="none").inc(note.to_pair + 1)
    if placed:
        metrics.PROJECTION_BLOCKS.labels(kind=RAW).inc(len(placed))
    for _, reason, _, _ in placed:
        metrics.PROJECTION_PAIRS.labels(form=RAW, reason=reason or "none").inc()
        if reason is not None:
            metrics.PROJECTION_FALLBACKS.labels(reason=reason).inc()
    if omitted:
        metrics.PROJECTION_PAIRS.labels(form=OMITTED, reason=OVER_BUDGET).inc(omitted)
        metrics.PROJECTION_OMISSIONS.labels(reason=OVER_BUDGET).inc(omitted)
