"""The *lost* drift check: a user condition the note no longer keeps
(SPEC §8 ``lost_constraint``; seed 001 §4 "丢": "只要黑色" written as
"黑色优先" — a negation, a bound, a quantity or a deadline dropped).

Pure. The rule is the checker's docstring; what a line keeps is
``compaction.handoff.reading.keeps``, the rule the builder writes with.
"""

from __future__ import annotations

from compaction.handoff import note as notes
from compaction.handoff.reading import edge_strip, normalise, shared, supersedes

from .findings import LOST_CONSTRAINT, Finding, finding, short
from .input import DriftInput
from .reading import Condition, UserReading
from .wrong import MATTER_SECTIONS


def check_lost_constraint(d: DriftInput) -> list[Finding]:
    """lost / lost_constraint — a user condition must stay in the note until
    the user withdraws it. Conditions are the clauses matching
    ``constraint`` (negation, "only", a bound, a deadline, a quantity;
    not a question, not an abandonment) of the material's user messages,
    and of the parent note's requests, to-dos and next step (its own words
    and quotes; abandoned lines excepted). A condition is withdrawn when a
    later user message of the material abandons its matter, restates it
    with the same operator and other numbers (预算改成5000以内), or — for a
    hold — gives the go-ahead again; the condition's own message never
    withdraws it (one message may drop a matter and state a condition —
    "周五的航班不要了，只要周六的" — or state two bounds at once). A note
    keeps it when any line holds it verbatim, or holds its operator word,
    every number of it and at least 60% of its key terms ("只要银色或者深空灰"
    kept as "黑色优先" is lost: the "only" is gone). Points at the heading of
    the section that should hold it (the parent's section, else user
    requests); proof: the message that stated it."""
    conditions: list[Condition] = []
    for line in d.parent_lines:
        if line.section in MATTER_SECTIONS and not line.marked_abandoned:
            for text in (line.own, *line.quotes):
                conditions += d.conditions_in(text, message_id=None, order=-1, section=line.section)
    for user in d.users:
        if user.message.id in d.material_user_ids:
            conditions += d.conditions_in(user.message.text, message_id=user.message.id, order=user.order,
                                          section=notes.REQUESTS)
    material_users = [u for u in d.users if u.message.id in d.material_user_ids]
    kept: dict[str, Condition] = {}
    for condition in conditions:
        if _withdrawn(d, condition, material_users, conditions):
            continue
        key = edge_strip(normalise(condition.clause))
        previous = kept.get(key)
        if previous is None or (previous.message_id is None and condition.message_id):
            kept[key] = condition
    out = []
    for key, condition in kept.items():
        if d.kept_anywhere(d.lines, condition):
            continue
        ids = [condition.message_id] if condition.message_id else [u.message.id for u in d.users_saying(key)[-1:]]
        said = f" ({ids[0]})" if ids else ""
        kept_before = " although the previous note kept it" if condition.order < 0 else ""
        out.append(finding(
            LOST_CONSTRAINT, section=condition.section, line=d.headings.get(condition.section), message_ids=ids,
            subject=condition.clause,
            detail=(f"The user's condition “{short(condition.clause)}”{said} is missing from this note"
                    f"{kept_before}: no line keeps “{condition.operator}” with its values, and the user has not "
                    f"withdrawn it.")))
    return out


def _withdrawn(d: DriftInput, condition: Condition, material_users: list[UserReading],
               conditions: list[Condition]) -> bool:
    later = [u for u in material_users if u.order > condition.order]
    stating = d.user_by_id.get(condition.message_id) if condition.message_id else None
    if stating is None:
        saying = d.users_saying(condition.clause)
        stating = saying[-1] if saying else None
    for user in later:
        if user.abandon:
            for abandoner, named, borrowed in d.abandons:
                if abandoner.order == user.order and d.about_dropped(condition.terms, named, borrowed):
                    return True
    if condition.is_hold and later:
        # A hold is withdrawn by a later go-ahead about it, unless a still
        # later hold put it back (the same reading as retracted_consent).
        if stating is not None:
            state, _ = d.final_state(stating, condition.terms | stating.terms)
        else:
            state = "hold"
            for event in later:
                if event.state and shared(event.own_terms, condition.terms) >= 2:
                    state = event.state
        if state == "consent":
            return True
    return any(other.order > condition.order and supersedes(other, condition) for other in conditions)
