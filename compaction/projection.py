"""The next-run projection, assembled from the database (SPEC §6; seed 000 §4
and §6 cases B and C; seed 002 §6.10).

``conversation_projection`` is the one read the agent makes before every
run, so it is on the hot path and its cost follows the budget, not the
history:

1. Sizes only, newest first. The raw tail is read from ``Pair`` sizes, then
   planned segments in growing chunks (``Segment`` sizes and current digest,
   generation facts without their text, job states only for segments that
   lack a usable summary). A segment's raw pair sizes are read only when it
   falls back. ``packing.pack`` consumes these lazily and stops at the first
   piece that does not fit, so nothing older than the cut is read.
2. Texts only for what is returned: one range read of user texts, one read
   of the raw pairs' assistant texts, one read of the chosen summaries.
3. The account lists every pair; omitted ones are generated arithmetically.

Token budgets need texts, so with ``budget_tokens`` texts are read (per
chunk) for pieces that already fit by bytes, never for the rest.

All reads run in one snapshot (REPEATABLE READ on PostgreSQL) so the sizes
that were packed are the sizes of the texts returned; ``used`` is then
recomputed from the returned texts and must equal what was packed.
Selection and packing rules live in ``packing.py``.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings
from django.db import connection, transaction

from conversations.models import Conversation, Pair, Segment

from . import packing
from .models import CompactionJob, SummaryGeneration
from .planning import SEGMENT_SIZE
from .tokens import count_tokens, tokenizer_name

FORMATS = ("blocks", "openai")
TAIL_CHUNK = 64
FIRST_SEGMENT_CHUNK = 16
MAX_SEGMENT_CHUNK = 512


class ProjectionInvalid(ValueError):
    """A projection was asked for with a budget or format that makes no sense."""

    def __init__(self, *, code: str, field: str, message: str):
        super().__init__(message)
        self.code = code
        self.field = field
        self.message = message


class ProjectionInconsistent(RuntimeError):
    """The texts read do not have the sizes that were packed: never return it."""


def max_budget_bytes() -> int:
    return getattr(settings, "PROJECTION_MAX_BUDGET_BYTES", 16 * 1024 * 1024)


def max_budget_tokens() -> int:
    return getattr(settings, "PROJECTION_MAX_BUDGET_TOKENS", 4_000_000)


def projection_validate(*, budget_bytes, budget_tokens=None, format: str = "blocks") -> None:
    """Refuse budgets and formats that cannot be meant (SPEC §6, issue 4 §7).
    A budget too small for anything is *not* refused: it is honestly empty."""
    if isinstance(budget_bytes, bool) or not isinstance(budget_bytes, int):
        raise ProjectionInvalid(code="invalid_budget", field="budget_bytes", message="budget_bytes must be an integer")
    if budget_bytes <= 0:
        raise ProjectionInvalid(code="invalid_budget", field="budget_bytes", message="budget_bytes must be at least 1")
    if budget_bytes > max_budget_bytes():
        raise ProjectionInvalid(
            code="invalid_budget", field="budget_bytes",
            message=f"budget_bytes {budget_bytes} is over the limit of {max_budget_bytes()}",
        )
    if budget_tokens is not None:
        if isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int):
            raise ProjectionInvalid(code="invalid_budget", field="budget_tokens", message="budget_tokens must be an integer")
        if budget_tokens <= 0:
            raise ProjectionInvalid(code="invalid_budget", field="budget_tokens", message="budget_tokens must be at least 1")
        if budget_tokens > max_budget_tokens():
            raise ProjectionInvalid(
                code="invalid_budget", field="budget_tokens",
                message=f"budget_tokens {budget_tokens} is over the limit of {max_budget_tokens()}",
            )
    if format not in FORMATS:
        raise ProjectionInvalid(
            code="invalid_format", field="format",
            message=f"unknown format {format!r}; use one of: {', '.join(FORMATS)}",
        )


@lru_cache(maxsize=1)
def _preamble_tokens() -> int:
    return count_tokens(packing.OPENAI_PREAMBLE)


@dataclass
class _SegmentRow:
    from_pair: int
    to_pair: int
    digest: str
    user_bytes: int


class _Reader:
    """Reads for one projection, caching the texts it has seen."""

    def __init__(self, conversation_id: int, *, counting_tokens: bool, fmt: str):
        self.cid = conversation_id
        self.counting = counting_tokens
        self.fmt = fmt
        self.users: dict[int, tuple[str, str]] = {}
        self.assistants: dict[int, tuple[str, str]] = {}
        self.summaries: dict[int, str] = {}

    # -- texts ------------------------------------------------------------
    def load_users(self, lo: int, hi: int) -> None:
        """User ids and texts for pairs ``[lo, hi]`` not yet read."""
        missing = [i for i in range(lo, hi + 1) if i not in self.users]
        if not missing:
            return
        rows = Pair.objects.filter(conversation_id=self.cid, index__gte=missing[0], index__lte=missing[-1]).values_list(
            "index", "user_message__external_id", "user_message__content"
        )
        for index, ext, text in rows:
            self.users[index] = (ext, text)

    def load_pairs(self, lo: int, hi: int) -> None:
        """User and assistant ids and texts for pairs ``[lo, hi]``."""
        if all(i in self.users and i in self.assistants for i in range(lo, hi + 1)):
            return
        rows = Pair.objects.filter(conversation_id=self.cid, index__gte=lo, index__lte=hi).values_list(
            "index", "user_message__external_id", "user_message__content",
            "assistant_message__external_id", "assistant_message__content",
        )
        for index, uext, utext, aext, atext in rows:
            self.users[index] = (uext, utext)
            self.assistants[index] = (aext, atext)

    def load_assistants(self, indices: list[int]) -> None:
        missing = [i for i in indices if i not in self.assistants]
        if not missing:
            return
        rows = Pair.objects.filter(conversation_id=self.cid, index__in=missing).values_list(
            "index", "assistant_message__external_id", "assistant_message__content"
        )
        for index, ext, text in rows:
            self.assistants[index] = (ext, text)

    def load_summaries(self, ids: list[int]) -> None:
        missing = [i for i in ids if i not in self.summaries]
        if missing:
            self.summaries.update(SummaryGeneration.objects.filter(pk__in=missing).values_list("id", "text"))

    # -- lazy token counts (only called for pieces that fit by bytes) ------
    def raw_tokens(self, index: int, lo: int, hi: int):
        def count() -> int:
            self.load_pairs(lo, hi)
            return count_tokens(self.users[index][1]) + count_tokens(self.assistants[index][1])
        return count

    def summary_tokens(self, unit_from: int, unit_to: int, generation: int, frame: list[str],
                       chunk_lo: int, chunk_hi: int, chunk_generations: list[int]):
        def count() -> int:
            self.load_users(chunk_lo, chunk_hi)
            self.load_summaries(chunk_generations)
            total = count_tokens(self.summaries[generation])
            total += sum(count_tokens(self.users[i][1]) for i in range(unit_from, unit_to + 1))
            total += sum(count_tokens(s) for s in frame)
            return total
        return count

    # -- sizes ------------------------------------------------------------
    def raw_pieces(self, lo: int, hi: int) -> list[packing.RawPiece]:
        rows = (
            Pair.objects.filter(conversation_id=self.cid, index__gte=lo, index__lte=hi)
            .order_by("-index")
            .values_list("index", "user_bytes", "assistant_bytes")
        )
        return [
            packing.RawPiece(index, ub + ab, self.raw_tokens(index, lo, hi) if self.counting else None)
            for index, ub, ab in rows
        ]

    def units(self, *, pair_count: int, segment_count: int):
        """Tail pairs, then segments, newest first — read lazily in chunks."""
        tail_start = min(segment_count * SEGMENT_SIZE, pair_count)
        top = pair_count
        while top > tail_start:
            lo = max(tail_start, top - TAIL_CHUNK)
            for piece in self.raw_pieces(lo, top - 1):
                yield packing.TailUnit(piece)
            top = lo

        k_top, chunk = segment_count, FIRST_SEGMENT_CHUNK
        while k_top > 0:
            k_lo = max(0, k_top - chunk)
            yield from self._segment_chunk(k_lo, k_top)
            k_top, chunk = k_lo, min(chunk * 2, MAX_SEGMENT_CHUNK)

    def _segment_chunk(self, k_lo: int, k_top: int):
        lo, hi = k_lo * SEGMENT_SIZE, k_top * SEGMENT_SIZE - 1
        segments = {
            row["from_pair"]: _SegmentRow(row["from_pair"], row["to_pair"], row["digest"], row["user_bytes"])
            for row in Segment.objects.filter(conversation_id=self.cid, from_pair__gte=lo, from_pair__lte=hi).values(
                "from_pair", "to_pair", "digest", "user_bytes"
            )
        }
        generations: dict[int, list[packing.GenerationFacts]] = defaultdict(list)
        for row in SummaryGeneration.objects.filter(
            conversation_id=self.cid, from_pair__gte=lo, from_pair__lte=hi
        ).values_list(
            "id", "from_pair", "to_pair", "source_digest", "prompt_version__name", "prompt_version__version",
            "prompt_version__accepted_for_projection", "job__state", "number", "text_bytes",
        ):
            facts = packing.GenerationFacts(*row)
            generations[facts.from_pair].append(facts)

        chosen: dict[int, tuple[packing.GenerationFacts | None, str | None]] = {}
        undecided = []
        for k in range(k_lo, k_top):
            from_pair = k * SEGMENT_SIZE
            seg = segments.get(from_pair)
            if seg is None:
                chosen[from_pair] = (None, packing.PENDING)
                continue
            gen, _ = packing.choose_summary(
                from_pair=seg.from_pair, to_pair=seg.to_pair, digest=seg.digest, generations=generations[from_pair]
            )
            if gen is not None:
                chosen[from_pair] = (gen, None)
            else:
                undecided.append(from_pair)
        if undecided:
            jobs: dict[int, list[packing.JobFacts]] = defaultdict(list)
            for from_pair, *rest in CompactionJob.objects.filter(
                conversation_id=self.cid, from_pair__in=undecided
            ).values_list(
                "from_pair", "id", "source_digest", "state", "prompt_version__version",
                "prompt_version__accepted_for_projection",
            ):
                jobs[from_pair].append(packing.JobFacts(*rest))
            for from_pair in undecided:
                seg = segments[from_pair]
                chosen[from_pair] = packing.choose_summary(
                    from_pair=seg.from_pair, to_pair=seg.to_pair, digest=seg.digest,
                    generations=generations[from_pair], jobs=jobs[from_pair],
                )

        chunk_generations = [g.id for g, _ in chosen.values() if g is not None]
        for k in range(k_top - 1, k_lo - 1, -1):
            from_pair, to_pair = k * SEGMENT_SIZE, k * SEGMENT_SIZE + SEGMENT_SIZE - 1
            gen, reason = chosen[from_pair]
            summary = None
            if gen is not None:
                seg = segments[from_pair]
                nbytes = seg.user_bytes + gen.text_bytes
                frame: list[str] = []
                if self.fmt == "openai":
                    frame = packing.openai_section_frame(
                        from_pair=from_pair, to_pair=to_pair, generation=gen.id, prompt_version=gen.prompt_version
                    )
                    nbytes += sum(packing.utf8_len(s) for s in frame)
                tokens = (
                    self.summary_tokens(from_pair, to_pair, gen.id, frame, lo, hi, chunk_generations)
                    if self.counting else None
                )
                summary = packing.SummaryPiece(
                    generation=gen.id, prompt_version=gen.prompt_version, source_digest=gen.source_digest,
                    bytes=nbytes, tokens=tokens,
                )
            yield packing.SegmentUnit(
                from_pair=from_pair, to_pair=to_pair, summary=summary, reason=reason,
                raw_pairs=lambda a=from_pair, b=to_pair: self.raw_pieces(a, b),
            )


def _snapshot():
    """One consistent view for the whole projection. REPEATABLE READ must be
    the first statement of the transaction, so only when we open it."""
    outermost = not connection.in_atomic_block
    atomic = transaction.atomic()

    class _Ctx:
        def __enter__(self):
            atomic.__enter__()
            if outermost and connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")

        def __exit__(self, *exc):
            return atomic.__exit__(*exc)

    return _Ctx()


def conversation_projection(*, conversation: Conversation, budget_bytes: int, budget_tokens: int | None = None,
                            format: str = "blocks") -> dict:
    """What the next run is given (SPEC §6), as the response body of
    ``GET /api/v1/conversations/{id}/projection``. The caller has already
    checked that the conversation is in the reader's scopes."""
    from . import projection_metrics

    projection_validate(budget_bytes=budget_bytes, budget_tokens=budget_tokens, format=format)
    started = time.perf_counter()
    with _snapshot():
        counts = (
            Conversation.objects.filter(pk=conversation.pk).values_list("pair_count", "segment_count").first()
        )
        if counts is None:
            raise ProjectionInvalid(code="not_found", field="conversation", message=f"no conversation {conversation.pk}")
        pair_count, segment_count = counts
        budget = packing.Budget(bytes=budget_bytes, tokens=budget_tokens)
        reader = _Reader(conversation.pk, counting_tokens=budget_tokens is not None, fmt=format)
        frame_bytes = packing.utf8_len(packing.OPENAI_PREAMBLE) if format == "openai" else 0
        frame_tokens = _preamble_tokens if (format == "openai" and budget_tokens is not None) else None
        packed = packing.pack(
            reader.units(pair_count=pair_count, segment_count=segment_count), budget,
            pair_count=pair_count, summary_frame_bytes=frame_bytes, summary_frame_tokens=frame_tokens,
        )
        _read_texts(reader, packed)
    body = _render(conversation, packed, reader, format=format)
    projection_metrics.observe(packed, format=format, seconds=time.perf_counter() - started)
    return body


def _read_texts(reader: _Reader, packed: packing.Packing) -> None:
    if packed.placed:
        reader.load_users(packed.cut, packed.pair_count - 1)
    reader.load_assistants([p.piece.index for p in packed.raw_pieces()])
    reader.load_summaries([u.summary.generation for u in packed.summaries()])


def _render(conversation: Conversation, packed: packing.Packing, reader: _Reader, *, format: str) -> dict:
    texts_bytes = 0
    blocks = []
    for p in packed.placed:
        if isinstance(p, packing.PlacedRaw):
            i = p.piece.index
            (uid, utext), (aid, atext) = reader.users[i], reader.assistants[i]
            blocks.append({"kind": "raw", "pair": i, "user": {"id": uid, "text": utext},
                           "assistant": {"id": aid, "text": atext}})
            texts_bytes += packing.utf8_len(utext) + packing.utf8_len(atext)
        else:
            unit = p.unit
            users = [reader.users[i] for i in range(unit.from_pair, unit.to_pair + 1)]
            summary = reader.summaries[unit.summary.generation]
            blocks.append({
                "kind": "summary", "from_pair": unit.from_pair, "to_pair": unit.to_pair,
                "generation": unit.summary.generation, "prompt_version": unit.summary.prompt_version,
                "source_digest": unit.summary.source_digest,
                "user_messages": [{"id": uid, "text": text} for uid, text in users],
                "summary": summary,
            })
            texts_bytes += sum(packing.utf8_len(text) for _, text in users) + packing.utf8_len(summary)

    body: dict = {
        "conversation": conversation.pk,
        "scope": conversation.scope,
        "external_id": conversation.external_id,
        "format": format,
        "budget": {"bytes": packed.budget.bytes, "tokens": packed.budget.tokens},
        "used": {"bytes": packed.used_bytes, "tokens": packed.used_tokens},
        "complete": packed.complete,
        "tokenizer": tokenizer_name() if packed.budget.tokens is not None else None,
    }
    if format == "openai":
        messages = openai_messages(blocks)
        returned_bytes = sum(packing.utf8_len(m["content"]) for m in messages)
        body["messages"] = messages
    else:
        returned_bytes = texts_bytes
        body["blocks"] = blocks
    # Never pretend: what is reported as used is what is returned.
    if returned_bytes != packed.used_bytes or returned_bytes > packed.budget.bytes:
        raise ProjectionInconsistent(
            f"conversation {conversation.pk}: packed {packed.used_bytes} bytes but returning {returned_bytes}"
        )
    body["pairs"] = [{"index": a.index, "as": a.as_, "reason": a.reason} for a in packed.account()]
    return body


def openai_messages(blocks: list[dict]) -> list[dict]:
    """The same selection as Chat Completions messages (seed 002 §6.10): one
    system message with every summary and its original user messages, then
    the raw pairs as user/assistant messages, oldest first."""
    sections = [
        packing.openai_section(
            from_pair=b["from_pair"], to_pair=b["to_pair"], generation=b["generation"],
            prompt_version=b["prompt_version"], user_texts=[m["text"] for m in b["user_messages"]],
            summary=b["summary"],
        )
        for b in blocks if b["kind"] == "summary"
    ]
    messages = []
    if sections:
        messages.append({"role": "system", "content": packing.OPENAI_PREAMBLE + "".join(sections)})
    for b in blocks:
        if b["kind"] == "raw":
            messages.append({"role": "user", "content": b["user"]["text"]})
            messages.append({"role": "assistant", "content": b["assistant"]["text"]})
    return messages
