"""What the segment page draws beside the summary (issue 16 item 3): the
summary's ``[message-id]`` labels as links to their source cards, the
sentences of each answer that an extractive summary kept, a word-level
diff of a changed source, and when the automatic retry of a failed job is
due. Pure: plain values in, rows of ``(kind, text)`` out; the template
escapes every text.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..extraction import labelled_lines, split_sentences, trim_leading_filler
from ..models import JobState

# A label as summaries write it: ``[m-1041]``, or ``[…43]`` for an id that
# only changes the end of the previous label's (``extraction.label``).
_LABEL = re.compile(r"\[([^\[\]\s]{1,200})\]")


@dataclass(frozen=True)
class Piece:
    kind: str  # "text" | "cite" (a label that names a source card) | "label" (one that names none)
    text: str
    anchor: str = ""
    target: str = ""  # the message id a cite points at


def source_anchor(index: int, role: str) -> str:
    """The element id of a source card: pair index and role, never the
    message id itself (ids are free text)."""
    return f"src-{index}-{role}"


def summary_pieces(text: str, anchors: dict[str, str]) -> list[Piece]:
    """``text`` cut into plain text and labels; a label whose (expanded) id
    is one of ``anchors`` (message id → element id) becomes a link."""
    pieces: list[Piece] = []
    pos, previous = 0, None
    for match in _LABEL.finditer(text):
        ref = match.group(1)
        if ref.startswith("…") and previous and len(ref) - 1 <= len(previous):
            end = ref[1:]
            ref = previous[: len(previous) - len(end)] + end
        if match.start() > pos:
            pieces.append(Piece("text", text[pos:match.start()]))
        if ref in anchors:
            pieces.append(Piece("cite", match.group(0), anchor=anchors[ref], target=ref))
            previous = ref
        else:
            pieces.append(Piece("label", match.group(0)))
        pos = match.end()
    if pos < len(text):
        pieces.append(Piece("text", text[pos:]))
    return pieces


def kept_by_message(summary: str) -> dict[str, str]:
    """What an extractive summary kept of each answer: its labelled line's
    text, by assistant message id."""
    out: dict[str, str] = {}
    for ref, line in labelled_lines(summary):
        if ref is not None:
            out[ref] = (out.get(ref, "") + " " + line).strip()
    return out


def answer_pieces(answer: str, kept: str | None) -> list[Piece]:
    """``answer`` cut into sentences the summary kept (``"kept"``) and the
    rest (``"text"``), its characters unchanged. A sentence counts as kept
    when its text, without a leading filler the summariser trims, is in the
    summary's line for this answer (or, cut with "…", starts it)."""
    if not kept:
        return [Piece("text", answer)] if answer else []
    cut = kept.endswith("…")
    spans: list[tuple[int, int]] = []
    cursor = 0
    for sentence in split_sentences(answer):
        core = trim_leading_filler(sentence).strip()
        if not core:
            continue
        hit = core in kept or (cut and core.startswith(kept[:-1].strip()))
        at = answer.find(core, cursor)
        if at < 0:
            continue
        if hit:
            spans.append((at, at + len(core)))
        cursor = at + len(core)
    pieces, pos = [], 0
    for start, end in spans:
        if start > pos:
            pieces.append(Piece("text", answer[pos:start]))
        pieces.append(Piece("kept", answer[start:end]))
        pos = end
    if pos < len(answer):
        pieces.append(Piece("text", answer[pos:]))
    return pieces


# Words, runs of space, and single CJK characters (Chinese has no spaces to
# split words on; a character is the unit a reader compares).
_TOKEN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef]|\w+|\s+|[^\w\s]")


def word_diff(before: str, after: str) -> list[tuple[str, str]]:
    """A word-level diff (``difflib``) as ``(kind, text)`` runs: ``"eq"``,
    ``"del"`` (only in ``before``) and ``"add"`` (only in ``after``)."""
    a, b = _TOKEN.findall(before), _TOKEN.findall(after)
    out: list[tuple[str, str]] = []

    def emit(kind: str, tokens: list[str]) -> None:
        if not tokens:
            return
        text = "".join(tokens)
        if out and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1] + text)
        else:
            out.append((kind, text))

    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            emit("eq", a[i1:i2])
        else:
            emit("del", a[i1:i2])
            emit("add", b[j1:j2])
    return out


def retry_note(*, state: str, attempts_used: int, max_attempts: int, updated_at: datetime | None,
               retry_delay_seconds: int, scan_interval_seconds: float, now: datetime) -> str:
    """When the engine retries this job by itself, in one sentence (the
    scanner re-sends a failed job with an attempt left once
    ``COMPACTION_RETRY_DELAY_SECONDS`` passed since it failed, at its next
    scan)."""
    if state == JobState.FAILED and attempts_used < max_attempts and updated_at is not None:
        due = updated_at + timedelta(seconds=retry_delay_seconds)
        when = due.strftime("%H:%M:%S UTC")
        if due <= now:
            return f"Automatic retry: due since {when}; the next scan (every {scan_interval_seconds:g} s) sends it."
        return (f"Automatic retry: due at {when} (attempt {attempts_used + 1} of {max_attempts}), "
                f"at the first scan after that.")
    if state == JobState.FAILED:
        return "No automatic retry: no attempt is left. Re-run or grant an attempt."
    if state == JobState.EXHAUSTED:
        return f"No automatic retry: all {max_attempts} attempts are spent. Re-run or grant an attempt."
    if state == JobState.PENDING:
        return "Queued: a worker takes it next; nothing to do."
    if state == JobState.RUNNING:
        return "Running now."
    return ""
