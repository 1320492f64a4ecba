"""Reads for the assembly inspector (SPEC §9, §11): a conversation's runs,
and the stored messages the next request after one of them would carry, as
Chat Completions messages."""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.db.models import Count, Min, Q

from conversations.models import Conversation, Message


@dataclass
class InspectedRun:
    run: object  # conversations.models.Run
    messages: int
    tool_calls: int


def assembly_runs(*, conversation: Conversation) -> list[InspectedRun]:
    """The conversation's runs in the order their messages came, with how many
    messages and tool calls each holds: the inspector's run menu. One query."""
    from conversations.models import Run

    rows = (Run.objects.filter(conversation=conversation)
            .annotate(n_messages=Count("messages"),
                      n_calls=Count("messages", filter=Q(messages__role="assistant", messages__tool_calls__isnull=False)),
                      first_at=Min("messages__created_at"), first_seq=Min("messages__sequence"))
            .order_by("first_at", "first_seq", "id"))
    return [InspectedRun(run=r, messages=r.n_messages, tool_calls=r.n_calls) for r in rows]


def stored_message_to_openai(message: Message) -> dict:
    """A stored message (SPEC §3) as a Chat Completions message: tool calls as
    ``tool_calls`` entries (arguments as JSON text), results as ``role: tool``."""
    out: dict = {"role": message.role}
    if message.role == "tool":
        out["tool_call_id"] = message.tool_call_id
        out["content"] = message.content
        return out
    calls = message.tool_calls if isinstance(message.tool_calls, list) else []
    if calls and message.role == "assistant":
        out["content"] = message.content if message.content.strip() else None
        out["tool_calls"] = []
        for call in calls:
            arguments = call.get("arguments") if isinstance(call, dict) else None
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments if arguments is not None else {}, ensure_ascii=False,
                                       separators=(",", ":"))
            out["tool_calls"].append({"id": str(call.get("id", "")) if isinstance(call, dict) else "",
                                      "type": "function",
                                      "function": {"name": str(call.get("name", "")) if isinstance(call, dict) else "",
                                                   "arguments": arguments}})
        return out
    out["content"] = message.content
    return out


def assembly_input(*, conversation: Conversation, run, limit: int) -> tuple[list[dict], list[Message], bool]:
    """What the next request after ``run`` would carry: every stored message of
    the conversation up to the run's last one (system messages of no run,
    earlier runs, the run itself), oldest first, as Chat Completions
    messages — with the rows they came from, and whether the oldest were
    left out to stay within ``limit`` messages."""
    last = (Message.objects.filter(conversation=conversation, run=run)
            .order_by("-created_at", "-sequence", "-id").values_list("created_at", "sequence", "id").first())
    if last is None:
        return [], [], False
    at, sequence, pk = last
    before = (Q(created_at__lt=at) | Q(created_at=at, sequence__lt=sequence)
              | Q(created_at=at, sequence=sequence, id__lte=pk))
    rows = list(Message.objects.filter(before, conversation=conversation)
                .only("id", "external_id", "role", "content", "tool_calls", "tool_call_id", "run_id", "created_at",
                      "sequence", "status")
                .order_by("-created_at", "-sequence", "-id")[:limit + 1])
    cut = len(rows) > limit
    rows = rows[:limit][::-1]
    return [stored_message_to_openai(m) for m in rows], rows, cut
