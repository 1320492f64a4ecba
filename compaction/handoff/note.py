"""The hand-off note's format: six sections with fixed headings (SPEC §7, seed 001).

Pure. A note is Markdown-like plain text: each section opens with a heading
line ``## <heading>`` and holds one matter per line as ``- <text>``. The
headings are fixed per language and must appear exactly once each, in this
order; a note whose headings are missing, repeated or out of order is
``malformed_note``. An empty section holds one line ``- 无`` / ``- none``.

Markers a line may carry (seed 001 "交接单该装什么"):

- a user's verbatim words after ``原话：`` (Chinese) or ``quote:``
  (English), inside the line's last parentheses:
  ``- 暂缓：送修申请先别提交（原话：算了，申请还是先别提交）`` or
  ``- On hold: do not file the claim yet (quote: "hold the claim for now")``;
  several quotes of one line are separated by ``；`` / ``" ; "``;
- a hold line starts ``暂缓：`` / ``On hold:``; an abandoned matter starts
  ``已放弃：`` / ``Abandoned:``;
- a done line names the id a tool result returned (``单号 RMA-1234``).

Text a model wrapped in ``<summary>…</summary>`` is taken from inside the
tags (seed 002 §6.9); without tags the whole text is the note.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ZH = "zh"
EN = "en"

# Section keys, in the one order a note may have them.
REQUESTS = "requests"
TODOS = "todos"
NEXT_STEP = "next_step"
PROGRESS = "progress"
DEAD_ENDS = "dead_ends"
DONE = "done"
SECTIONS = (REQUESTS, TODOS, NEXT_STEP, PROGRESS, DEAD_ENDS, DONE)

HEADINGS = {
    ZH: {REQUESTS: "用户诉求", TODOS: "待办", NEXT_STEP: "下一步", PROGRESS: "当前进度",
         DEAD_ENDS: "走不通的路", DONE: "已完成"},
    EN: {REQUESTS: "User requests", TODOS: "To-dos", NEXT_STEP: "Next step", PROGRESS: "Current progress",
         DEAD_ENDS: "Dead ends", DONE: "Done"},
}
NONE_LINE = {ZH: "无", EN: "none"}
HOLD_PREFIX = {ZH: "暂缓：", EN: "On hold:"}
ABANDONED_PREFIX = {ZH: "已放弃：", EN: "Abandoned:"}
QUOTE_MARKER = {ZH: "原话：", EN: "quote:"}
MAX_DEAD_ENDS = 3

_HEADING = re.compile(r"^#{1,6}\s*(.+?)\s*$")
_SUMMARY_TAG = re.compile(r"<summary>(.*?)</summary>", re.S)
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z]")
# Quotes: 原话：… up to the closing full-width or ASCII parenthesis;
# quote: "…" (straight or curly quotes) or quote: … up to ")".
_ZH_QUOTE = re.compile(r"原话[：:]\s*(.+?)\s*[）)]\s*$")
_EN_QUOTE = re.compile(r"quote:\s*(.+?)\s*\)\s*$", re.I)
_QUOTE_SPLIT = re.compile(r"\s*[；;]\s*")
_QUOTE_MARKS = "\"'“”‘’「」『』"

_HEADING_TO_SECTION = {heading: (lang, key) for lang, table in HEADINGS.items() for key, heading in table.items()}


class MalformedNote(ValueError):
    """A note whose six headings are missing, repeated or out of order."""


@dataclass(frozen=True)
class NoteLine:
    section: str  # one of SECTIONS
    number: int  # 1-based line number within the whole note text
    text: str  # the line's text without its leading "- "


@dataclass(frozen=True)
class Note:
    language: str
    lines: tuple[NoteLine, ...]

    def section(self, key: str) -> list[NoteLine]:
        """The section's matters, without the ``无`` / ``none`` placeholder."""
        return [line for line in self.lines if line.section == key and not is_none_line(line.text)]


def detect_language(texts) -> str:
    """``zh`` when the texts hold at least as many CJK ideographs as a
    quarter of their Latin letters, else ``en``: a Chinese conversation with
    English product names and ids stays Chinese; an English one quoting a
    Chinese name stays English."""
    cjk = latin = 0
    for text in texts:
        cjk += len(_CJK.findall(text))
        latin += len(_LATIN.findall(text))
    return ZH if cjk and cjk * 4 >= latin else EN


def _heading(stripped: str) -> re.Match | None:
    """``_HEADING``'s match of a stripped line; a line not starting with ``#``
    (every line of a section) is none, without a search."""
    return _HEADING.match(stripped) if stripped[:1] == "#" else None


def extract_summary(text: str) -> str:
    """The note inside ``<summary>…</summary>`` when present (the first such
    block), else the whole text; surrounding whitespace removed."""
    match = _SUMMARY_TAG.search(text)
    return (match.group(1) if match else text).strip()


def heading_problem(text: str) -> str:
    """Why ``text`` is not a six-section note (empty when it is one): the
    headings must be exactly the six of one language, once each, in order."""
    found = []
    for line in text.splitlines():
        match = _heading(line.strip())
        if match:
            found.append(match.group(1))
    known = [h for h in found if h in _HEADING_TO_SECTION]
    if not known:
        return "no section headings found; expected " + ", ".join(HEADINGS[ZH].values()) + " or " + \
            ", ".join(HEADINGS[EN].values())
    language = _HEADING_TO_SECTION[known[0]][0]
    expected = [HEADINGS[language][key] for key in SECTIONS]
    unknown = [h for h in found if h not in expected]
    if unknown:
        return f"unexpected heading {unknown[0]!r}; expected exactly: {', '.join(expected)}"
    if found != expected:
        missing = [h for h in expected if h not in found]
        if missing:
            return f"missing heading {missing[0]!r}; expected in order: {', '.join(expected)}"
        repeated = [h for h in expected if found.count(h) > 1]
        if repeated:
            return f"heading {repeated[0]!r} appears more than once"
        return f"headings out of order: {', '.join(found)}; expected: {', '.join(expected)}"
    return ""


def parse(text: str) -> Note:
    """Read a note; raises ``MalformedNote`` naming the heading problem.
    Lines before the first heading and blank lines are ignored; a line not
    starting with ``-`` continues its section as a line of its own."""
    language, lines, _ = scan(text)
    return Note(language=language, lines=tuple(NoteLine(*line) for line in lines))


def scan(text: str) -> tuple[str | None, tuple[tuple[str, int, str], ...], dict[str, int]]:
    """``parse`` in one pass, without a ``NoteLine`` per line: the note's
    language, each line as ``(section, number, text)`` and each known
    section's heading line number (1-based, as a line's: where a finding
    about something missing from a section points); raises ``MalformedNote``
    as ``parse`` does. The drift checks read a note's lines from it: a frozen
    ``NoteLine`` takes a microsecond to make, and parsing a 6,000-character
    note of 215 lines, then numbering its headings, was some 0.5 ms of a
    generation's check (issue 14)."""
    problem = heading_problem(text)
    if problem:
        raise MalformedNote(problem)
    language = None
    section = None
    lines: list[tuple[str, int, str]] = []
    headings: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        match = _heading(stripped)
        if match and match.group(1) in _HEADING_TO_SECTION:
            language, section = _HEADING_TO_SECTION[match.group(1)]
            headings.setdefault(section, number)
            continue
        if section is None or not stripped:
            continue
        body = stripped[1:].strip() if stripped[0] in "-*•" else stripped
        if body:
            lines.append((section, number, body))
    return language, tuple(lines), headings


def render(sections: dict[str, list[str]], *, language: str) -> str:
    """Write a note: every heading in order, each matter as ``- text``, an
    empty section as ``- 无`` / ``- none``."""
    out = []
    for key in SECTIONS:
        out.append(f"## {HEADINGS[language][key]}")
        items = [item.strip() for item in sections.get(key, []) if item and item.strip()]
        out.extend(f"- {item}" for item in (items or [NONE_LINE[language]]))
    return "\n".join(out)


def is_none_line(text: str) -> bool:
    return text.strip().rstrip("。.").lower() in (NONE_LINE[ZH], NONE_LINE[EN])


def quotes(text: str) -> list[str]:
    """The user's verbatim words a line quotes after ``原话：`` / ``quote:``,
    split at ``；`` / ``;`` into fragments, quotation marks removed."""
    return split_quote(text)[1]


def without_quote(text: str) -> str:
    """The line's own words: ``text`` without the parenthesised quote it
    ends with (the part ``quotes`` reads), trailing punctuation kept."""
    return split_quote(text)[0]


def split_quote(text: str) -> tuple[str, list[str]]:
    """``(without_quote(text), quotes(text))``, the quote found once."""
    # Each pattern's marker is searched only in a line that holds it (原话;
    # the colon of "quote:", which re.I folds into nothing else): most lines
    # quote nothing, and a case-folded search tries every position.
    match = (_ZH_QUOTE.search(text) if "原话" in text else None) or (_EN_QUOTE.search(text) if ":" in text else None)
    if not match:
        return text.strip(), []
    fragments = []
    for part in _QUOTE_SPLIT.split(match.group(1)):
        part = part.strip().strip(_QUOTE_MARKS).strip()
        if part:
            fragments.append(part)
    head = text[:match.start()].rstrip()
    if head.endswith(("（", "(")):
        head = head[:-1]
    return head.rstrip(), fragments


def quote_suffix(fragments: list[str], *, language: str) -> str:
    """The parenthesised quote a line ends with, in the format ``quotes`` reads."""
    if language == ZH:
        return "（原话：" + "；".join(fragments) + "）"
    return "(quote: " + " ; ".join(f'"{f}"' for f in fragments) + ")"


def is_hold(text: str) -> bool:
    return text.startswith(HOLD_PREFIX[ZH]) or _starts_lower(text, _HOLD_EN)


def is_abandoned(text: str) -> bool:
    return text.startswith(ABANDONED_PREFIX[ZH]) or _starts_lower(text, _ABANDONED_EN)


_HOLD_EN, _ABANDONED_EN = HOLD_PREFIX[EN].lower(), ABANDONED_PREFIX[EN].lower()


def _starts_lower(text: str, prefix: str) -> bool:
    """``text.lower().startswith(prefix)`` for the markers' lower-case ASCII
    prefixes, lowering only as many characters as the prefix has: every
    character lowers to one character (K, the Kelvin sign, to k) but İ, to
    an i and a combining dot, and neither marker holds an i."""
    return text[:len(prefix)].lower() == prefix
