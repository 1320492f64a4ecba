"""The tool-pairing validator (SPEC §9 "Pairing invariant", seed 004 §1 消息配对不变量).

A provider refuses a request whose tool calls and results do not pair up,
and a request that only looks right can make the model act on a result it
never asked for. The validator states what each format accepts and
returns EVERY violation (never only the first), each with the position of
the message in the list it was given, the call id and a stable problem
code. It runs on the input and after every assembly step; the output of
assembly always passes it.

Rules, OpenAI Chat Completions
  - a call (``tool_calls`` entry) belongs to an ``assistant`` message;
  - every call is answered by exactly one ``role: "tool"`` message with its
    ``tool_call_id``, and that message stands in the unbroken run of
    ``tool`` messages right after the call's assistant message (in any
    order within the run). A result after another assistant, user or
    system message is not adjacent. This is the provider's rule and is
    stricter than "before the next assistant message" (SPEC §9's wording):
    Chat Completions rejects an assistant ``tool_calls`` message that is
    not directly followed by the tool messages answering it.

Rules, Anthropic Messages
  - a ``tool_use`` block belongs to an assistant message and a
    ``tool_result`` block to a user message;
  - every ``tool_use`` is answered by exactly one ``tool_result`` in the
    very next message, which is a user message; in that message the
    ``tool_result`` blocks come before any other block.

Rules, both
  - ids are present and non-empty; a result names a call that exists, and
    comes after it;
  - no two calls share an id — except that in OpenAI requests a later
    assistant message may reuse an id of an earlier one. Chat Completions
    pairs a ``tool`` message with the assistant message whose run it is in,
    so such a reuse is not ambiguous, and the provider accepts it: 49 of the
    200 recorded τ-bench airline trajectories (gpt-4o) reuse ids this way
    and every later request of those runs was answered. It is reported as
    the warning ``reused_call_id``, not as a violation. Two calls with one
    id in the same message, or any repeated ``tool_use`` id in Anthropic
    requests, remain ``duplicate_call_id``.

Problem codes (stable; the REST body and the desk show them):

=====================  ======================================================
``missing_id``         a call or result without an id (absent or empty)
``duplicate_call_id``  a second call with an id already used (index: the later one;
                       see the rule on reuse above)
``missing_result``     a call that no result answers (index: the call's message)
``pending_call_at_end``  a call that no result answers, at the very end of the
                       input (the tools have not run yet; the caller must
                       run them before the next model request)
``result_without_call``  a result whose id no call has
``result_before_call``  a result that comes before the call it names
``duplicate_result``   a second result for the same call
``result_not_adjacent``  a result that is not where the format requires
                       (see the rules above); it still counts as the call's
                       answer, so the call is not also reported missing
``call_in_wrong_role``  a call on a message that is not an assistant message
``result_in_wrong_role``  an Anthropic ``tool_result`` in an assistant message
``result_after_content``  an Anthropic ``tool_result`` after a text or other block
=====================  ======================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from .neutral import ANTHROPIC, OPENAI, Message, ToolResult

MISSING_ID = "missing_id"
DUPLICATE_CALL_ID = "duplicate_call_id"
MISSING_RESULT = "missing_result"
PENDING_CALL_AT_END = "pending_call_at_end"
RESULT_WITHOUT_CALL = "result_without_call"
RESULT_BEFORE_CALL = "result_before_call"
DUPLICATE_RESULT = "duplicate_result"
RESULT_NOT_ADJACENT = "result_not_adjacent"
CALL_IN_WRONG_ROLE = "call_in_wrong_role"
RESULT_IN_WRONG_ROLE = "result_in_wrong_role"
RESULT_AFTER_CONTENT = "result_after_content"
REUSED_CALL_ID = "reused_call_id"  # a warning, not a violation (OpenAI only)

PROBLEMS = (
    MISSING_ID, DUPLICATE_CALL_ID, MISSING_RESULT, PENDING_CALL_AT_END, RESULT_WITHOUT_CALL,
    RESULT_BEFORE_CALL, DUPLICATE_RESULT, RESULT_NOT_ADJACENT, CALL_IN_WRONG_ROLE,
    RESULT_IN_WRONG_ROLE, RESULT_AFTER_CONTENT,
)
# What ``on_pairing_error: synthesize_error_results`` may answer: a call
# with no result at all. Everything else stays a refusal.
REPAIRABLE = frozenset({MISSING_RESULT, PENDING_CALL_AT_END})

_DETAIL = {
    MISSING_ID: "has no id",
    DUPLICATE_CALL_ID: "reuses a call id already used by an earlier call",
    MISSING_RESULT: "no result answers this call",
    PENDING_CALL_AT_END: "the input ends before this call was answered",
    RESULT_WITHOUT_CALL: "no call has this id",
    RESULT_BEFORE_CALL: "comes before the call it answers",
    DUPLICATE_RESULT: "answers a call that another result already answered",
    RESULT_NOT_ADJACENT: "is not directly after the message that made the call",
    CALL_IN_WRONG_ROLE: "a tool call must be in an assistant message",
    RESULT_IN_WRONG_ROLE: "a tool_result must be in a user message",
    RESULT_AFTER_CONTENT: "tool_result blocks must come before any other block of the message",
    REUSED_CALL_ID: "reuses the id of a call in an earlier assistant message (each is answered in its own run)",
}


@dataclass(frozen=True, slots=True)
class Violation:
    index: int
    id: str | None
    problem: str

    @property
    def detail(self) -> str:
        return _DETAIL[self.problem]

    def as_dict(self) -> dict:
        return {"index": self.index, "id": self.id, "problem": self.problem, "message": self.detail}


def validate(messages: Sequence[Message], format: str, *, warnings: list | None = None,
             pairs: dict | None = None) -> list[Violation]:
    """Every pairing violation of ``messages`` in ``format``, in message order.

    ``warnings``, when given, receives the ``reused_call_id`` findings
    (OpenAI only: an id a later assistant message uses again, each answered
    in its own run; see the module docstring). ``pairs``, when given,
    receives each call's answer where the format requires it: (position of
    the call's message, call id) -> (the result, its message, its position),
    the first such result (``pair_results``), so a caller that validates
    need not pair the calls again.
    """
    if format not in (OPENAI, ANTHROPIC):
        raise ValueError(f"unknown format {format!r}")
    anthropic = format == ANTHROPIC
    found: list[tuple[int, int, Violation]] = []  # (index, order, violation) to sort stably

    def report(index: int, call_id: str | None, problem: str) -> None:
        found.append((index, len(found), Violation(index, call_id, problem)))

    # Every call: (message position, id). ``first`` keeps each id's first
    # message; ``by_message`` the ids of each message.
    first: dict[str, int] = {}
    by_message: dict[int, set[str]] = {}
    occurrences: dict[str, list[int]] = {}
    n = len(messages)
    for i, m in enumerate(messages):
        if not m.calls:
            continue
        if m.role != "assistant":
            report(i, None, CALL_IN_WRONG_ROLE)
        own = by_message[i] = set()
        for call in m.calls:
            cid = call.id
            if not cid:
                report(i, None, MISSING_ID)
            elif cid in own:
                report(i, cid, DUPLICATE_CALL_ID)
            elif cid in first:
                if anthropic or messages[first[cid]].role != "assistant":
                    report(i, cid, DUPLICATE_CALL_ID)
                    continue
                if warnings is not None:
                    warnings.append(Violation(i, cid, REUSED_CALL_ID))
                own.add(cid)
                occurrences[cid].append(i)
            else:
                first[cid] = i
                own.add(cid)
                occurrences[cid] = [i]

    # owner: the message whose calls a result at i may answer, or -1.
    # OpenAI: the assistant message before an unbroken run of tool messages.
    # Anthropic: the message right before, when it is an assistant message
    # with calls.
    accounted: set[tuple[int, str]] = set()  # (call message, id) answered or given a misplaced answer
    answered: set[tuple[int, str]] = set()
    owner = -1
    for i, m in enumerate(messages):
        if anthropic:
            prev = messages[i - 1] if i > 0 else None
            owner = i - 1 if prev is not None and prev.role == "assistant" and prev.calls else -1
            if m.results:
                if m.role != "user":
                    report(i, None, RESULT_IN_WRONG_ROLE)
                else:
                    seen_other = False
                    for b in m.blocks:
                        if type(b) is ToolResult:
                            if seen_other:
                                report(i, b.call_id or None, RESULT_AFTER_CONTENT)
                        else:
                            seen_other = True
        elif m.role != "tool":
            owner = i if (m.role == "assistant" and m.calls) else -1
            continue
        for result in m.results:
            cid = result.call_id
            if not cid:
                report(i, None, MISSING_ID)
                continue
            at_list = occurrences.get(cid)
            if at_list is None:
                report(i, cid, RESULT_WITHOUT_CALL)
                continue
            if owner != -1 and cid in by_message.get(owner, ()):
                key = (owner, cid)
                if key in answered:
                    report(i, cid, DUPLICATE_RESULT)
                else:
                    answered.add(key)
                    accounted.add(key)
                    if pairs is not None:
                        pairs[key] = (result, m, i)
                continue
            earlier = [a for a in at_list if a < i]
            if not earlier:
                report(i, cid, RESULT_BEFORE_CALL)
                accounted.add((at_list[0], cid))
                continue
            open_calls = [a for a in earlier if (a, cid) not in accounted]
            if not open_calls:
                report(i, cid, DUPLICATE_RESULT)
            else:
                report(i, cid, RESULT_NOT_ADJACENT)
                accounted.add((open_calls[-1], cid))

    # Every key in ``accounted`` is a call's (message, id): when they are as
    # many as the calls, none is left unanswered and the walk is skipped (the
    # common case, a valid run: 1,137 calls in the 5,000-message benchmark).
    calls = sum(map(len, occurrences.values()))
    for cid, at_list in occurrences.items() if len(accounted) < calls else ():
        for at in at_list:
            if (at, cid) in accounted:
                continue
            # Pending at the end: nothing but (OpenAI) tool messages follows
            # the call's message, so the tools simply have not run yet.
            if anthropic:
                at_end = at == n - 1
            else:
                at_end = all(messages[j].role == "tool" for j in range(at + 1, n))
            report(at, cid, PENDING_CALL_AT_END if at_end else MISSING_RESULT)

    found.sort(key=lambda t: (t[0], t[1]))
    return [v for _, _, v in found]


def pair_results(messages: Sequence[Message], format: str) -> dict[tuple[int, str], tuple]:
    """For a VALID list: (position of the call's message, call id) ->
    (result, the result's message, its position) — the answers ``validate``
    accepts, found by it (one home for where a result may stand)."""
    pairs: dict[tuple[int, str], tuple] = {}
    validate(messages, format, pairs=pairs)
    return pairs


def validate_request(format: str, messages: Sequence[Any], *, system: Any = None,
                     warnings: list | None = None) -> list[Violation]:
    """Parse a request in its own format and validate it (raises
    ``RequestFormatError`` for a shape error)."""
    from .adapters import parse

    return validate(parse(format, messages, system=system).messages, format, warnings=warnings)
