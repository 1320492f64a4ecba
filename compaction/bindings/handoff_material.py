"""A hand-off job's material as stored (SPEC §7, §8): the pairs of a range
and their source digest, the tool results of their runs, the note's
language, and every pair's tokens for the trigger. Reads only; the binding
(``handoff``) and the drift checks (``compaction.drift.services``) build
``handoff.material.Material`` from them."""

from __future__ import annotations

import json

from django.db.models import Case, F, OuterRef, Subquery, TextField, Value, When

from conversations.models import Message, MessageRole, Pair

from ..handoff import note as notes
from ..handoff.material import Material, ToolResult
from ..models import CompactionJob, MessageTokens
from ..tokens import count_tokens

_IN_CHUNK = 500  # ids per IN list (SQLite's variable limit)


def stored_pairs(conversation_id: int, lo: int, hi: int) -> dict[int, tuple[str, str, str, str]]:
    """Pairs ``[lo, hi]`` as stored: index -> (user id, user text, assistant id, assistant text)."""
    rows = (Pair.objects.filter(conversation_id=conversation_id, index__gte=lo, index__lte=hi)
            .values_list("index", "user_message__external_id", "user_message__content",
                         "assistant_message__external_id", "assistant_message__content"))
    return {index: (uid, utext, aid, atext) for index, uid, utext, aid, atext in rows}


def _ok(text: str) -> bool | None:
    """What a tool result says of itself: its JSON's ``ok`` / ``success``
    flag, else nothing (the builder then reads its words)."""
    try:
        payload = json.loads(text)
    except (TypeError, ValueError):
        return None
    if isinstance(payload, dict):
        for key in ("ok", "success"):
            if isinstance(payload.get(key), bool):
                return payload[key]
    return None


def tool_results(job: CompactionJob) -> list[ToolResult]:
    """The tool results of the material's runs, each with the call it
    answers: not material, but what the builder confirms a done line with
    (and the drift checks tell a tool's words from the user's by)."""
    return tool_results_between(job.conversation_id, job.from_pair, job.to_pair)


def tool_results_between(conversation_id: int, lo: int, hi: int) -> list[ToolResult]:
    """The tool results of the runs of pairs ``[lo, hi]`` (``tool_results``)."""
    runs = dict(Pair.objects.filter(conversation_id=conversation_id, index__gte=lo,
                                    index__lte=hi).values_list("run_id", "index"))
    if not runs:
        return []
    calls: dict[str, tuple[str, str]] = {}
    results = []
    in_range = Pair.objects.filter(conversation_id=conversation_id, index__gte=lo, index__lte=hi).values("run_id")
    # Only a tool message's content is read: an answer's calls name the tool, its text is not needed here.
    # (A run belongs to one conversation: its messages are found by run alone, on the run index.)
    for run_id, role, external_id, content, tool_calls, call_id in (
        Message.objects.filter(run_id__in=Subquery(in_range), role__in=(MessageRole.ASSISTANT, MessageRole.TOOL))
        .annotate(result=Case(When(role=MessageRole.TOOL, then=F("content")), default=Value(""),
                              output_field=TextField()))
        .order_by("sequence").values_list("run_id", "role", "external_id", "result", "tool_calls", "tool_call_id")
    ):
        if role == MessageRole.ASSISTANT:
            for call in tool_calls or ():
                if isinstance(call, dict) and call.get("id"):
                    calls[call["id"]] = (str(call.get("name") or ""), str(call.get("arguments") or ""))
            continue
        name, arguments = calls.get(call_id, ("", ""))
        results.append(ToolResult(pair_index=runs[run_id], message_id=external_id, call_id=call_id, tool=name,
                                  arguments=arguments, text=content, ok=_ok(content)))
    return results


def note_language(parent_note: str | None, material: Material) -> str:
    """The note's language: the parent's (a chain keeps one language), else
    the material's — Chinese when its CJK characters are at least a quarter
    of its Latin letters (``note.detect_language``)."""
    if parent_note:
        try:
            return notes.parse(parent_note).language
        except notes.MalformedNote:
            pass
    return notes.detect_language([t for p in material.pairs for t in (p.user_text, p.assistant_text)])


def pair_token_counts(conversation_id: int, first: int) -> list[int]:
    """Tokens of every pair from ``first`` on (user text plus answer, as the
    next run would carry them raw; ``trigger.pair_token_count``). Each
    message is counted once per revision and kept (``MessageTokens``): one
    read gives the pairs with the counts kept for their messages' current
    revisions, and only messages without one are read and counted."""
    def kept(message: str):
        return Subquery(MessageTokens.objects.filter(
            message_id=OuterRef(f"{message}_message_id"),
            revision=OuterRef(f"{message}_message__revision_count")).values("tokens")[:1])

    rows = list(Pair.objects.filter(conversation_id=conversation_id, index__gte=first).order_by("index")
                .annotate(user_tokens=kept("user"), assistant_tokens=kept("assistant"))
                .values_list("user_message_id", "user_tokens", "assistant_message_id", "assistant_tokens"))
    tokens = {m: t for u, ut, a, at in rows for m, t in ((u, ut), (a, at)) if t is not None}
    missing = list(dict.fromkeys(m for u, ut, a, at in rows for m, t in ((u, ut), (a, at)) if t is None))
    if missing:
        counted = []
        for start in range(0, len(missing), _IN_CHUNK):
            for pk, content, revision in Message.objects.filter(pk__in=missing[start:start + _IN_CHUNK]).values_list(
                    "pk", "content", "revision_count"):
                tokens[pk] = count_tokens(content)
                counted.append(MessageTokens(message_id=pk, revision=revision, tokens=tokens[pk]))
        MessageTokens.objects.bulk_create(counted, update_conflicts=True, unique_fields=["message"],
                                          update_fields=["revision", "tokens"], batch_size=_IN_CHUNK)
    return [tokens[u] + tokens[a] for u, _, a, _ in rows]
