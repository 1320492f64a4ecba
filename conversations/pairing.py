"""Which runs make pairs (SPEC §4, seed 000 §2).

Pure: plain data in, plain data out, no database. A pair is the user message
that started a run plus that run's final, completed assistant answer. Pairs
are projected from the stored snapshot, never typed in.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Iterable, Sequence

PAIRABLE_RUN_STATUSES = frozenset({"completed", "partial", "clarify_pending"})


@dataclass(frozen=True)
class RunView:
    key: object  # whatever identifies the run to the caller (a primary key)
    external_id: str
    status: str


@dataclass(frozen=True)
class MessageView:
    key: object
    external_id: str
    run_key: object | None
    role: str
    content: str
    status: str
    has_tool_calls: bool
    created_at: datetime
    sequence: int  # position in the conversation as stored; breaks created_at ties


@dataclass(frozen=True)
class PairView:
    index: int
    run_key: object
    user: MessageView
    assistant: MessageView


def _is_blank(text: str) -> bool:
    return not text or not text.strip()


def run_pair(run: RunView, messages: Sequence[MessageView]) -> tuple[MessageView, MessageView] | None:
    """The (user, assistant) pair a run makes, or None when it makes none.

    ``messages`` are the run's messages in stored order.
    """
    if run.status not in PAIRABLE_RUN_STATUSES:
        return None
    users = [m for m in messages if m.role == "user"]
    if not users:
        return None
    user = users[0]
    if not user.external_id or _is_blank(user.content):
        return None
    # SPEC §4 read literally: the answer is the run's last assistant message
    # that is completed, non-blank and carries no tool calls. A streaming
    # message, a tool-call request or a blank one is never the answer.
    answers = [
        m
        for m in messages
        if m.role == "assistant"
        and m.status == "completed"
        and not m.has_tool_calls
        and not _is_blank(m.content)
        and m.external_id
    ]
    if not answers:
        return None
    answer = answers[-1]
    return user, answer


def project_pairs(runs: Iterable[RunView], messages: Iterable[MessageView]) -> list[PairView]:
    """All eligible pairs of one conversation, numbered from 0 without gaps.

    Messages without a valid run never enter a pair. Runs are ordered by the
    user message's ``created_at``, then by run external id.
    """
    by_run: dict[object, list[MessageView]] = {}
    for message in messages:
        if message.run_key is None:
            continue
        by_run.setdefault(message.run_key, []).append(message)
    found: list[tuple[datetime, str, RunView, MessageView, MessageView]] = []
    for run in runs:
        run_messages = sorted(by_run.get(run.key, ()), key=lambda m: (m.created_at, m.sequence))
        pair = run_pair(run, run_messages)
        if pair is not None:
            user, answer = pair
            found.append((user.created_at, run.external_id, run, user, answer))
    found.sort(key=lambda item: (item[0], item[1]))
    return [
        PairView(index=i, run_key=run.key, user=user, assistant=answer)
        for i, (_, _, run, user, answer) in enumerate(found)
    ]
