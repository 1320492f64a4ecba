"""What a drift check reports (SPEC §8's table; SPEC §11: every finding
has ``kind``, ``code``, ``section``, ``line`` and ``message_ids``).

Pure. The nine codes and their kinds — wrong, extra, lost, length (seed 001
§4: 丢、错、多, and length checked apart from content) — and ``Finding``.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple

from compaction.handoff import note as notes
from compaction.handoff.reading import normalise, unique

WRONG, EXTRA, LOST, LENGTH = "wrong", "extra", "lost", "length"

QUOTE_NOT_VERBATIM = "quote_not_verbatim"
RETRACTED_CONSENT = "retracted_consent"
ABANDONED_UNMARKED = "abandoned_unmarked"
DONE_WITHOUT_PROOF = "done_without_proof"
TOOL_DETAIL_IN_REQUESTS = "tool_detail_in_requests"
QUESTION_AS_REQUIREMENT = "question_as_requirement"
ASSISTANT_ASK_AS_TODO = "assistant_ask_as_todo"
LOST_CONSTRAINT = "lost_constraint"
GROWTH_WITHOUT_NEW_MATTERS = "growth_without_new_matters"

# Each code and its kind, in the order of SPEC §8's table.
CODES: dict[str, str] = {
    QUOTE_NOT_VERBATIM: WRONG,
    RETRACTED_CONSENT: WRONG,
    ABANDONED_UNMARKED: WRONG,
    DONE_WITHOUT_PROOF: WRONG,
    TOOL_DETAIL_IN_REQUESTS: EXTRA,
    QUESTION_AS_REQUIREMENT: EXTRA,
    ASSISTANT_ASK_AS_TODO: EXTRA,
    LOST_CONSTRAINT: LOST,
    GROWTH_WITHOUT_NEW_MATTERS: LENGTH,
}

DETAIL_QUOTE_CHARS = 60


class Finding(NamedTuple):
    """One drift finding. ``line`` is a 1-based line number of the note text
    after ``<summary>`` unwrapping (``NoteLine.number``); a ``lost``
    finding points at the heading of the section that should have kept it;
    ``growth_without_new_matters`` is about the whole note (``section`` and
    ``line`` None). ``subject`` is the words the finding is about (a quote,
    a value, a condition, the two lengths).

    A named tuple, not a frozen dataclass: as immutable, equal and hashed
    the same (a tuple of its fields, in this order, as the dataclass hashed
    it), made and hashed in C — a frozen dataclass's every field set by a
    call, its hash a Python method, some 30,000 instructions a finding,
    about 5M of a worst-case check's 180 findings (callgrind,
    ``bench/drift.py``)."""

    kind: str
    code: str
    section: str | None
    line: int | None
    message_ids: tuple[str, ...]
    detail: str
    subject: str = ""

    def as_dict(self) -> dict:
        return {"kind": self.kind, "code": self.code, "section": self.section, "line": self.line,
                "message_ids": list(self.message_ids), "detail": self.detail, "subject": self.subject}

    def sort_key(self) -> tuple:
        return (self.line if self.line is not None else 10**9, _SECTION_ORDER.get(self.section, len(_SECTION_ORDER)),
                _CODE_ORDER[self.code], self.subject, self.message_ids)


# Where a section and a code sort: the note's order of sections, SPEC §8's of codes.
_SECTION_ORDER = {section: i for i, section in enumerate(notes.SECTIONS)}
_CODE_ORDER = {code: i for i, code in enumerate(CODES)}


def finding(code: str, *, section: str | None, line: int | None, message_ids: Iterable[str], detail: str,
             subject: str = "") -> Finding:
    return Finding(kind=CODES[code], code=code, section=section, line=line, message_ids=unique(message_ids),
                   detail=detail, subject=subject)


def short(text: str, limit: int = DETAIL_QUOTE_CHARS) -> str:
    text = normalise(text)
    return text if len(text) <= limit else text[:limit - 1] + "…"
