"""The next-run projection (SPEC §6; seed 000 §4 and §6 cases B and C;
seed 002 §6.10): what the agent's next run is given within a budget, with
an exact account of everything left out.

``conversation_projection`` is the one read the agent makes before every
run, so its cost follows the budget, not the history: ``reader`` reads
sizes newest first and lazily, ``selection`` decides which summary a
segment may use, ``packing`` chooses each segment's form under ``prefer``
(``choice``: ``raw`` by default, ``summary`` for a stable prefix),
``reader`` then reads texts only for what is returned, ``formats`` renders
them, and the account's omitted prefix is shared (``omitted``). With a
64 KiB budget over 100 or 10,000 pairs this is the same handful of round
trips: BEGIN, newest segments with their generations' facts, newest pair
sizes (under ``prefer=summary``, the fallback segment's pair sizes), texts,
summaries, COMMIT.

``used`` is recomputed from the returned texts and must equal what was
packed: the projection never claims the model saw what it did not.
"""

from __future__ import annotations

import time
from functools import lru_cache

from conversations.models import Conversation

from ..policies import is_rolling
from ..tokens import count_tokens, token_estimator_name
from . import metrics
from .budget import Budget, ProjectionInvalid, budget_validate
from .formats import FORMATS, OPENAI_PREAMBLE, blocks_of, openai_messages, openai_omission_parts, utf8_len
from .handoff import rolling_projection
from .omitted import account_entries
from .packing import DEFAULT_PREFER, PREFERENCES, Packing, pack
from .reader import Reader, snapshot


class ProjectionInconsistent(RuntimeError):
    """The texts read do not have the sizes that were packed: never return it."""


def projection_validate(*, budget_bytes, budget_tokens=None, format: str = "blocks",
                        prefer: str = DEFAULT_PREFER) -> Budget:
    """Refuse budgets, formats and preferences that cannot be meant (SPEC §6,
    issue 4 §7). A budget too small for anything is *not* refused: it is
    honestly empty."""
    budget = budget_validate(budget_bytes=budget_bytes, budget_tokens=budget_tokens)
    if format not in FORMATS:
        raise ProjectionInvalid(
            code="invalid_format", field="format",
            message=f"unknown format {format!r}; use one of: {', '.join(FORMATS)}",
        )
    if prefer not in PREFERENCES:
        raise ProjectionInvalid(
            code="invalid_prefer", field="prefer",
            message=f"unknown preference {prefer!r}; use one of: {', '.join(PREFERENCES)}",
        )
    return budget


@lru_cache(maxsize=1)
def _preamble_tokens() -> int:
    return count_tokens(OPENAI_PREAMBLE)


def _omission_cost(counting: bool):
    """``(bytes, tokens)`` of the openai system message's sentence about ``n`` omitted pairs."""
    def cost(n: int, after_summaries: bool):
        parts = openai_omission_parts(n, after_summaries=after_summaries)
        tokens = (lambda: sum(count_tokens(p) for p in parts)) if counting else 0
        return sum(utf8_len(p) for p in parts), tokens
    return cost


def conversation_projection(*, conversation: Conversation, budget_bytes: int, budget_tokens: int | None = None,
                            format: str = "blocks", prefer: str = DEFAULT_PREFER) -> dict:
    """What the next run is given (SPEC §6), as the response body of
    ``GET /api/v1/conversations/{id}/projection``. The caller has already
    checked that the conversation is in the reader's scopes."""
    budget = projection_validate(budget_bytes=budget_bytes, budget_tokens=budget_tokens, format=format,
                                 prefer=prefer)
    if is_rolling(conversation.scope):
        # A rolling scope's history is its newest hand-off note plus the raw
        # pairs after its cut (SPEC §7): ``context.handoff``. It has one
        # summary at most, so both preferences give the same.
        body = rolling_projection(conversation=conversation, budget=budget, format=format)
        body["prefer"] = prefer
        body["pairs"] = body.pop("pairs")  # the account stays last
        return body
    started = time.perf_counter()
    with snapshot():
        reader = Reader(conversation.pk, counting_tokens=budget_tokens is not None, fmt=format)
        pair_count = reader.start(budget_bytes=budget_bytes)
        frame_bytes = utf8_len(OPENAI_PREAMBLE) if format == "openai" else 0
        frame_tokens = _preamble_tokens if (format == "openai" and budget_tokens is not None) else None
        packed = pack(
            reader.tail(), reader.segments(), budget, pair_count=pair_count, prefer=prefer,
            summary_frame_bytes=frame_bytes, summary_frame_tokens=frame_tokens,
            omission=_omission_cost(budget_tokens is not None) if format == "openai" else None,
        )
        reader.load_texts(packed.cut, pair_count - 1,
                          summarised=[(u.from_pair, u.to_pair) for u in packed.summaries()])
        reader.load_summaries([u.summary.generation for u in packed.summaries()])
    body = _render(conversation, packed, reader, format=format)
    metrics.observe(packed, format=format, seconds=time.perf_counter() - started)
    return body


def _render(conversation: Conversation, packed: Packing, reader: Reader, *, format: str) -> dict:
    blocks, texts_bytes = blocks_of(packed.placed, users=reader.users, assistants=reader.assistants,
                                    summaries=reader.summaries)

    body: dict = {
        "conversation": conversation.pk,
        "scope": conversation.scope,
        "external_id": conversation.external_id,
        "format": format,
        "budget": {"bytes": packed.budget.bytes, "tokens": packed.budget.tokens},
        "used": {"bytes": packed.used_bytes, "tokens": packed.used_tokens},
        "complete": packed.complete,
        "prefer": packed.prefer,
        "tokenizer": token_estimator_name() if packed.budget.tokens is not None else None,
    }
    if format == "openai":
        messages = openai_messages(blocks, omitted=packed.cut if packed.told_omitted else 0)
        returned_bytes = sum(utf8_len(m["content"]) for m in messages)
        body["messages"] = messages
    else:
        returned_bytes = texts_bytes
        body["blocks"] = blocks
    # Never pretend: what is reported as used is what is returned.
    if returned_bytes != packed.used_bytes or returned_bytes > packed.budget.bytes:
        raise ProjectionInconsistent(
            f"conversation {conversation.pk}: packed {packed.used_bytes} bytes but returning {returned_bytes}"
        )
    body["pairs"] = account_entries(packed)
    return body
