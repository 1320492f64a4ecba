"""The offline, deterministic hand-off note builder ``handoff-extractive-v1``
(SPEC §7 "Providers", seed 001 "交接单该装什么", SPEC §8).

Pure: ``build_note(parent_note, material, language=…, vocabulary=…)`` writes
generation *k* from generation *k−1*'s note and the new material, by rules —
no model, same input, same output. It reads the parent note back into
matters (``parent``), walks the material pair by pair — the user's clauses
(``user``), then the pair's tool results (``tools``) — and writes the six
sections again (``writing``). Only user text ever reaches user requests, so
nothing a tool or the assistant said becomes a requirement. Every text is
read with the rules the drift checks read with (``compaction.handoff.reading``,
``clauses``, ``values``, ``results``), so the builder never writes a note
they find lost, wrong, extra or grown.

Carry-forward: a parent line whose matter the material does not touch is
copied unchanged, so a material that brings nothing new gives back the
parent note itself — the note never grows without new matters. When only
action results moved (no new matter, condition, consent, hold or
abandonment), they may replace progress and dead ends but not lengthen the
note; a new done line (a proven fact) stays even so.
"""

from __future__ import annotations

from ...contract import MAX_SUMMARY_CHARS
from .. import clauses as c
from .. import note as n
from .. import vocabulary as v
from ..material import Material, ToolResult
from ..reader import Reader
from ..results import result_id
from .labels import excerpt, label_from, make_label
from .matters import ABANDONED, DONE, GENERIC_LABEL, HELD, OPEN, Fragment, Matter, State, best
from .parent import read_parent
from .tools import apply_tool, record
from .user import add_fragment, apply_clause
from .writing import fit, sections

__all__ = ["build_note", "make_label", "result_id"]


def build_note(parent_note: str | None, material: Material, *, language: str,
               vocabulary: v.Vocabulary = v.DEFAULT, max_chars: int = MAX_SUMMARY_CHARS) -> str:
    """Generation *k*'s note from generation *k−1*'s (or None) and the new
    material. Deterministic; always six headings in order; at most
    ``max_chars`` characters; never longer than the parent when the
    material brings no new matter, condition, consent, hold or abandonment
    and no action result."""
    if language not in n.HEADINGS:
        raise ValueError(f"unknown note language {language!r}; expected {n.ZH!r} or {n.EN!r}")
    state = State(language=language, reader=Reader(vocabulary))
    read_parent(parent_note, state)
    _walk(material, state)
    if state.parent_text is not None and not state.changed:
        return state.parent_text  # nothing new: the parent, unchanged
    lines = sections(state)
    text = fit(lines, language, max_chars)
    if state.parent_text is not None and not state.user_news and len(text) > len(state.parent_text):
        # Only action results moved: progress goes back to the parent's
        # first, then dead ends.
        parent = n.parse(state.parent_text)
        for key in (n.PROGRESS, n.DEAD_ENDS):
            lines = {**lines, key: [line.text for line in parent.section(key)]}
            text = fit(lines, language, max_chars)
            if len(text) <= len(state.parent_text):
                break
    return text


def _walk(material: Material, state: State) -> None:
    results: dict[int, list[ToolResult]] = {}
    for result in material.tool_results:
        results.setdefault(result.pair_index, []).append(result)
    previous_user_text = ""
    # Plain statements naming an id ("订单号是88232") belong to the matter
    # their message is about (the seed's 关联编号); a message about no matter
    # yet (the user describing their case first) leaves them to the next
    # matter the user opens in this material.
    earlier: list[c.Clause] = []
    for pair in material.pairs:
        # The ids an action or look-up of this pair was called with say which
        # listed matter the user's words are about ("现在可以提交了" while the
        # assistant submits for order 88232).
        called = {t for r in results.get(pair.index, ()) for t in c.topics(r.arguments)}
        in_message: Matter | None = best(state, called, statuses=(OPEN, HELD, DONE), minimum=3) if called else None
        naming: list[c.Clause] = []
        for clause in c.read(pair.user_text, state.reader):
            if clause.role == c.STATEMENT and c.ids(clause.text) and c.quotable(clause.text):
                naming.append(clause)
                continue
            count = len(state.matters)
            in_message = apply_clause(state, clause, in_message=in_message, previous_user_text=previous_user_text)
            if in_message is None or in_message.status == ABANDONED:
                continue
            if earlier and len(state.matters) > count and state.matters[-1] is in_message:
                naming, earlier = earlier + naming, []
            _name(state, in_message, naming)
            naming = []
        earlier += naming
        for result in results.get(pair.index, ()):
            event = apply_tool(state, result, pair_matter=in_message)
            if event is not None:
                record(state, event)
        previous_user_text = pair.user_text


def _name(state: State, matter: Matter, naming: list[c.Clause]) -> None:
    """Quote the id statements on ``matter``'s line; a matter whose own
    words named nothing ("还是先修这副吧") takes its name from them."""
    for named in naming:
        add_fragment(state, matter, Fragment(text=excerpt(named.text), role=named.role, kinds=named.kinds))
    if naming and matter.label == GENERIC_LABEL[state.language]:
        matter.label = label_from([named.text for named in naming], language=state.language, reader=state.reader,
                                  generic=GENERIC_LABEL)
