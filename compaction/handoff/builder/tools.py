"""What the material's tool results do to the note: current progress, dead
ends and done (seed 001 "交接单该装什么": 当前进度, 走不通的路 at most three,
已完成 only what a tool result confirmed with its id; SPEC §7 "Providers").

Pure. Only **action** tools count (submit, cancel, book, …; a name that also
reads as a look-up — lookup_order, check_stock — is a look-up): a look-up's
details never enter the note. An action's outcome and the id it proves are
``compaction.handoff.results``. Each action result becomes the current
progress, naming its matter; a success with a proven id is a done line and
settles its matter; a success without one is progress only; a failure,
refusal or cancelled confirmation of an unsettled matter is a dead end,
with the reason in the result's own words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .. import clauses as c
from .. import note as n
from ..material import ToolResult
from ..results import outcome, payload, result_id
from .labels import shorten
from .matters import DONE, HELD, LABEL_SEPARATOR, OPEN, Matter, State, best

REASON_LIMIT = 40
_REASON_KEYS = ("error", "message", "reason", "detail", "msg", "status")
# Tool names: what acts in the world, and what only looks (checked first).
_QUERY_TOOL = re.compile(r"(^|[^a-z])(get|lookup|look|search|query|find|list|check|fetch|read|show|view|describe|"
                         r"status|track|tracking|estimate|quote|calc|calculate|compare|recommend|inspect|info|"
                         r"detail|details|availability|stock|price|prices)([^a-z]|$)|查询|查|搜索|获取|列出|检查",
                         re.I)
_ACTION_TOOL = re.compile(r"(^|[^a-z])(submit|create|cancel|update|modify|change|book|reserve|refund|return|file|"
                          r"apply|place|pay|purchase|buy|send|schedule|register|delete|remove|add|confirm|approve|"
                          r"transfer|issue|open|close|set|make|request|claim|exchange|replace|order)([^a-z]|$)|"
                          r"提交|创建|取消|修改|预订|预约|退款|退货|申请|下单|支付|办理|寄修|送修", re.I)


def is_action_tool(name: str) -> bool:
    return bool(_ACTION_TOOL.search(name)) and not _QUERY_TOOL.search(name)


def reason(text: str) -> str:
    """Why an action failed, in the result's own words: its error field
    when it is JSON, else its text; short, on one line."""
    data = payload(text)
    if isinstance(data, dict):
        for key in _REASON_KEYS:
            value = data.get(key)
            if isinstance(value, str) and value.strip():
                text = value
                break
    line = re.sub(r"\s+", " ", text).strip()
    line = c.QUOTE_BREAKERS.sub("", line)
    line = line.replace("（", "(").replace("）", ")")
    return shorten(line, REASON_LIMIT)


@dataclass
class Event:
    """A tool result of an action, in material order."""

    order: int
    result: ToolResult
    succeeded: bool
    matter: Matter | None
    result_id: str | None


def apply_tool(state: State, result: ToolResult, *, pair_matter: Matter | None) -> Event | None:
    """The action ``result`` reports, or None for a look-up or a result that says nothing."""
    if not is_action_tool(result.tool):
        return None  # a look-up: its details never enter the note
    succeeded = outcome(result, state.reader)
    if succeeded is None:
        return None
    # Which matter it acted on: the one its arguments name, else the one
    # the user's message was about; never a guess beyond that.
    matter = best(state, c.topics(result.arguments), statuses=(OPEN, HELD, DONE), minimum=3) or pair_matter
    return Event(order=state.tick(), result=result, succeeded=succeeded, matter=matter,
                 result_id=result_id(result, state.reader) if succeeded else None)


def record(state: State, event: Event) -> None:
    """Write ``event`` into progress, dead ends and done."""
    language = state.language
    tool = event.result.tool
    who = f"{event.matter.label}{LABEL_SEPARATOR[language]}" if event.matter is not None else ""
    if event.succeeded:
        ident = event.result_id
        if ident:
            done = f"{tool} 成功，单号 {ident}" if language == n.ZH else f"{tool} succeeded, id {ident}"
            if not any(re.search(rf"(?<![\w-]){re.escape(ident)}(?![\w-])", line) for line in state.done):
                state.done.append(done)
        else:
            # Succeeded, but returned no id to stand on: progress, not done.
            done = f"{tool} 成功（未返回单号）" if language == n.ZH else f"{tool} succeeded (no id returned)"
        state.progress = [who + done]
        if event.matter is not None and event.matter.status in (OPEN, HELD):
            event.matter.status = DONE
            event.matter.hold = []
            event.matter.dirty = True
    else:
        why = reason(event.result.text)
        if language == n.ZH:
            failed = f"{tool} 未成功（{why}）" if why else f"{tool} 未成功"
        else:
            failed = f"{tool} did not succeed ({why})" if why else f"{tool} did not succeed"
        state.progress = [who + failed]
        if event.matter is not None and event.matter.status in (OPEN, HELD):
            state.dead_ends.append((event.matter, who + failed))
    state.changed = True
