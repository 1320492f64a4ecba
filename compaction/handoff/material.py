"""What a hand-off generation is written from (SPEC §7, seed 002 §6.2, §6.7).

Pure. Material is the settled pairs (SPEC §4) after the parent generation's
cut and before the newest ``recent_turns`` pairs. Tool calls and results are
not material, but the tool results of the material's runs travel beside it
(``ToolResult``) so the offline builder can confirm what was done and the
drift checks can tell a user's words from a tool's.

The summariser sees the material rendered as ``用户: …`` / ``助手: …`` lines
(``User:`` / ``Assistant:`` for English), an over-long message cut in the
middle with an ellipsis marker.
"""

from __future__ import annotations

from dataclasses import dataclass

from .note import ZH

MAX_MESSAGE_CHARS = 2000
ELLIPSIS = {ZH: "……（中间省略 {n} 字）……", "en": " … [{n} characters omitted] … "}
ROLE_LABEL = {ZH: ("用户", "助手"), "en": ("User", "Assistant")}


@dataclass(frozen=True)
class MaterialPair:
    index: int  # the pair's index in the conversation (SPEC §4)
    user_id: str
    user_text: str
    assistant_id: str
    assistant_text: str


@dataclass(frozen=True)
class ToolResult:
    """One tool result of a material pair's run, with the call it answers."""

    pair_index: int
    message_id: str  # the tool message's id
    call_id: str
    tool: str
    arguments: str  # the call's arguments, as sent (usually JSON text)
    text: str  # the result's content
    ok: bool | None  # True / False when the result says so, None when it does not


@dataclass(frozen=True)
class Material:
    pairs: tuple[MaterialPair, ...]
    tool_results: tuple[ToolResult, ...] = ()

    @property
    def from_pair(self) -> int:
        return self.pairs[0].index

    @property
    def to_pair(self) -> int:
        return self.pairs[-1].index

    @property
    def message_ids(self) -> list[str]:
        return [i for p in self.pairs for i in (p.user_id, p.assistant_id)]

    @property
    def message_count(self) -> int:
        return 2 * len(self.pairs)


def cut_middle(text: str, *, max_chars: int = MAX_MESSAGE_CHARS, language: str = ZH) -> str:
    """``text`` unchanged when it fits, else its head and tail around a marker
    naming how many characters were left out."""
    if len(text) <= max_chars:
        return text
    keep = max_chars // 2
    omitted = len(text) - 2 * keep
    return text[:keep] + ELLIPSIS[language].format(n=omitted) + text[-keep:]


def render_material(material: Material, *, language: str, max_chars: int = MAX_MESSAGE_CHARS) -> str:
    """The material as the summariser reads it: one line per message."""
    user, assistant = ROLE_LABEL[language]
    lines = []
    for pair in material.pairs:
        lines.append(f"{user}: {cut_middle(pair.user_text, max_chars=max_chars, language=language)}")
        lines.append(f"{assistant}: {cut_middle(pair.assistant_text, max_chars=max_chars, language=language)}")
    return "\n".join(lines)
