"""Turns hand-written exchanges into ingest documents (SPEC §3–§4).

The demo conversations are written as a list of *turns*: plain question and
answer, a run with tool calls, a clarifying question, a failed run, a
streaming answer, a message outside any run. ``build`` numbers the runs and
messages and gives them monotonic timestamps, deterministically, so the same
source always yields the same document (seed_demo relies on this to be
idempotent).

A turn may carry a *later* version of its answer: an edit ingested after the
first load (it makes a ``MessageRevision``). Each later version has a key
(``"tail"`` or ``"after-compaction"``) so seed_demo decides which edits to
send.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone


@dataclass(frozen=True)
class Call:
    """One tool call inside a run and the result the tool returned."""

    name: str
    arguments: dict
    result: str


@dataclass(frozen=True)
class Turn:
    kind: str  # pair | clarify | failed | streaming | note
    user: str = ""
    answer: str = ""
    calls: tuple[Call, ...] = ()
    preface: str = ""  # an assistant remark before the tool calls; never the answer
    later: str | None = None
    later_key: str | None = None
    role: str = "system"  # for notes


def ask(user: str, answer: str, *, later: str | None = None, later_key: str | None = None) -> Turn:
    """A completed run: the user's message and the assistant's final answer."""
    return Turn("pair", user=user, answer=answer, later=later, later_key=later_key)


def tool(user: str, calls: list[Call] | tuple[Call, ...], answer: str, *, preface: str = "") -> Turn:
    """A completed run in which the assistant calls tools before answering.

    Each call is an assistant message with ``tool_calls`` and empty content,
    then a ``tool`` message carrying ``tool_call_id``; the final assistant
    message (no tool calls) is the pair's answer. ``preface`` is an optional
    assistant remark sent before the first call (it is not the answer).
    """
    return Turn("pair", user=user, answer=answer, calls=tuple(calls), preface=preface)


def clarify(user: str, question: str) -> Turn:
    """A ``clarify_pending`` run: the assistant asks back. It still makes a pair."""
    return Turn("clarify", user=user, answer=question)


def failed(user: str, partial: str = "", calls: tuple[Call, ...] = ()) -> Turn:
    """A ``failed`` run: whatever the assistant produced is marked failed; no pair."""
    return Turn("failed", user=user, answer=partial, calls=tuple(calls))


def streaming(user: str, partial: str) -> Turn:
    """A ``running`` run whose answer is still streaming: no pair (yet)."""
    return Turn("streaming", user=user, answer=partial)


def note(text: str, *, role: str = "system") -> Turn:
    """A message that belongs to no run (a system prompt, an operator note)."""
    return Turn("note", answer=text, role=role)


@dataclass
class Conversation:
    scope: str
    id: str
    title: str
    language: str
    start: datetime
    turns: list[Turn]
    metadata: dict = field(default_factory=dict)


@dataclass
class Edit:
    """A later content for one message, to be ingested after the first load."""

    key: str
    message_id: str
    content: str
    pair_index: int  # the pair this message answers, counted as the builder sees it


@dataclass
class Built:
    document: dict
    edits: list[Edit]
    pair_count: int


def _gap_minutes(n: int) -> float:
    # Varied but deterministic pauses between runs: people do not type on a clock.
    return (2, 5, 3, 11, 4, 7, 2, 26, 6, 3, 9, 1)[n % 12]


def _ts(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def build(conv: Conversation) -> Built:
    runs: list[dict] = []
    messages: list[dict] = []
    edits: list[Edit] = []
    clock = conv.start
    run_no = msg_no = call_no = 0
    pair_index = 0

    def message(role: str, content: str, *, run_id: str | None, status: str = "completed", **extra) -> dict:
        nonlocal msg_no, clock
        msg_no += 1
        clock += timedelta(seconds=20 + (msg_no * 7) % 40)
        m = {"id": f"{conv.id}-m{msg_no:03d}", "run_id": run_id, "role": role, "content": content,
             "status": status, "created_at": _ts(clock)}
        if run_id is None:
            del m["run_id"]
        m.update(extra)
        messages.append(m)
        return m

    for turn in conv.turns:
        clock += timedelta(minutes=_gap_minutes(run_no + msg_no))
        if turn.kind == "note":
            message(turn.role, turn.answer, run_id=None)
            continue
        run_no += 1
        run_id = f"{conv.id}-r{run_no:03d}"
        status = {"pair": "completed", "clarify": "clarify_pending", "failed": "failed",
                  "streaming": "running"}[turn.kind]
        runs.append({"id": run_id, "status": status, "created_at": _ts(clock)})
        message("user", turn.user, run_id=run_id)
        if turn.preface:
            message("assistant", turn.preface, run_id=run_id)
        for call in turn.calls:
            call_no += 1
            call_id = f"call_{conv.id}_{call_no:03d}"
            message("assistant", "", run_id=run_id, tool_calls=[
                {"id": call_id, "name": call.name,
                 "arguments": json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)}])
            message("tool", call.result, run_id=run_id, tool_call_id=call_id)
        if turn.kind == "failed":
            if turn.answer:
                message("assistant", turn.answer, run_id=run_id, status="failed")
            continue
        if turn.kind == "streaming":
            message("assistant", turn.answer, run_id=run_id, status="streaming")
            continue
        answer = message("assistant", turn.answer, run_id=run_id)
        if turn.later is not None:
            edits.append(Edit(key=turn.later_key or "tail", message_id=answer["id"], content=turn.later,
                              pair_index=pair_index))
        pair_index += 1

    document = {
        "scope": conv.scope,
        "id": conv.id,
        "title": conv.title,
        "metadata": {"language": conv.language, "source": "written for the Compaction Desk demo", **conv.metadata},
        "runs": runs,
        "messages": messages,
    }
    return Built(document=document, edits=edits, pair_count=pair_index)
