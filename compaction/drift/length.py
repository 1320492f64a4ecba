"""The *length* drift check: the note grew although its material brought
nothing new (SPEC §8 ``growth_without_new_matters``; seed 001 §4: nine
generations grew from 1,297 to 5,468 characters on questions alone, and
"新记录里没有新事项、新条件或新限制时，摘要不比上一代长").

Pure. Length is looked at here only, content never (seed 001: length and
content are checked separately); the rule is the checker's docstring.
"""

from __future__ import annotations

from compaction.handoff import note as notes
from compaction.handoff.reading import brings_news, identifiers

from .findings import GROWTH_WITHOUT_NEW_MATTERS, Finding, finding
from .input import DriftInput

# The note may not grow at all without a new matter.
GROWTH_TOLERANCE_CHARS = 0


def check_growth_without_new_matters(d: DriftInput) -> list[Finding]:
    """length / growth_without_new_matters — the note *grew* when its text
    (inside ``<summary>`` when present, surrounding whitespace removed) has
    more characters than its parent's; a first generation never grew. It
    may grow only when its material brings something new, any of: a user
    consent, hold or abandonment the parent does not keep already; a user
    condition the parent does not keep; a user statement or request (not a
    question) that brings news (``reading.brings_news``: an identifier the
    parent does not name — "取消订单66002" beside 66001 — or key terms absent
    from the parent worth 3 or more; not "好的，谢谢"); a request that takes
    up again a matter the user had abandoned (the latest state wins); or a tool result that
    failed or returned a new id (a dead end or a done item). Material of
    questions and look-ups brings none, however long. Content is not judged here (seed 001: length and
    content are checked separately). Proof: the material's user messages."""
    if d.parent_text is None:
        return []
    grown = len(d.text) - len(d.parent_text)
    if grown <= GROWTH_TOLERANCE_CHARS or _brings_new(d):
        return []
    material = d.material
    ids = [p.user_id for p in material.pairs]
    return [finding(
        GROWTH_WITHOUT_NEW_MATTERS, section=None, line=None, message_ids=ids,
        subject=f"{len(d.parent_text)}→{len(d.text)}",
        detail=(f"The note grew from {len(d.parent_text)} to {len(d.text)} characters (+{grown}) although its "
                f"material (pairs {material.from_pair}–{material.to_pair}) brought no new matter, condition or "
                f"hold: the user asked questions or repeated what the previous note already held."))]


def _brings_new(d: DriftInput) -> bool:
    for user in d.users:
        if user.message.id not in d.material_user_ids:
            continue
        for found in (user.consent, user.hold, user.abandon):
            # A consent, hold or abandonment is new unless the parent already
            # keeps it (a hold restated a third time brings nothing).
            if found and not d.kept_anywhere(d.parent_lines, d.as_condition(*found)):
                return True
        for condition in d.conditions_in(user.message.text, message_id=user.message.id, order=user.order,
                                         section=notes.REQUESTS):
            if not d.kept_anywhere(d.parent_lines, condition):
                return True
        if brings_news(" ".join(user.statement_clauses), d.parent_terms):
            return True
        if d.resumes(user):
            return True
    for result in d.material.tool_results:
        if d.failed(result):
            return True
        if d.succeeded(result) and any(i not in result.arguments for i in identifiers(result.text)):
            return True
    return False
