"""Small builders for hand-written drift cases: material from (user, assistant)
turns, notes from sections, and one checker run at a time."""

from __future__ import annotations

from compaction.drift.checkers import ChainHistory, check_note
from compaction.handoff import note as notes
from compaction.handoff.material import Material, MaterialPair, ToolResult


def material(*turns, tools=(), start=0) -> Material:
    """``turns`` are (user, assistant) texts; pair i gets ids u<i> / a<i>."""
    return Material(
        pairs=tuple(MaterialPair(start + i, f"u{start + i}", user, f"a{start + i}", answer)
                    for i, (user, answer) in enumerate(turns)),
        tool_results=tuple(tools))


def result(pair, message_id, tool, arguments, text, ok=True) -> ToolResult:
    return ToolResult(pair_index=pair, message_id=message_id, call_id=f"call-{message_id}", tool=tool,
                      arguments=arguments, text=text, ok=ok)


def zh(**sections) -> str:
    return notes.render({key: list(lines) for key, lines in sections.items()}, language=notes.ZH)


def en(**sections) -> str:
    return notes.render({key: list(lines) for key, lines in sections.items()}, language=notes.EN)


def run(code, note, mat, *, parent=None, earlier=()):
    """Findings of one checker; ``earlier`` are materials of earlier generations."""
    chain = ChainHistory.from_materials([*earlier, mat])
    return check_note(note, parent=parent, material=mat, chain=chain, codes=[code])


def where(findings):
    return [(f.code, f.section, f.line) for f in findings]
