"""The output contract of a compaction attempt (SPEC §5, seed 000 §5).

Pure. An attempt succeeds only on one normal stop (``finish_reason`` ``stop``)
with plain (no control characters but tab and line breaks), non-blank text
of at most 6,000 characters and no tool calls.
Every violation has its own failure code. Text that arrived together with a
tool call is a failure however good it reads: the summariser must not act.
Text the database cannot store — a NUL, or a lone UTF-16 surrogate such as
``"Summary \ud800"`` that a JSON body may carry but UTF-8 cannot encode — is
``unstorable_text`` (issue 12); ``escape_unstorable`` is how what the model
returned is kept readable for review all the same.

``check`` answers with a ``ContractResult`` (not to be confused with a
reviewer's ``Verdict`` on a summary, ``compaction.models.reviews``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MAX_SUMMARY_CHARS = 6000

TOOL_CALLS = "tool_calls"
FINISH_REASON = "finish_reason"
EMPTY = "empty"
NOT_PLAIN_TEXT = "not_plain_text"
UNSTORABLE_TEXT = "unstorable_text"
TOO_LONG = "too_long"
PROVIDER_ERROR = "provider_error"
TIMEOUT = "timeout"
SOURCE_CHANGED = "source_changed"
LEASE_EXPIRED = "lease_expired"
# A rolling hand-off note whose six headings are missing or out of order
# (SPEC §7); judged by the hand-off binding (``bindings.handoff``).
MALFORMED_NOTE = "malformed_note"

FAILURE_CODES = (TOOL_CALLS, FINISH_REASON, EMPTY, NOT_PLAIN_TEXT, TOO_LONG, PROVIDER_ERROR, TIMEOUT, SOURCE_CHANGED,
                 LEASE_EXPIRED, MALFORMED_NOTE, UNSTORABLE_TEXT)

# Control characters other than tab, line feed and carriage return: not
# plain text (NUL cannot even be stored in a PostgreSQL text column).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

# What PostgreSQL text (and jsonb) cannot hold: NUL, and the surrogate code
# points, which only ever appear in a Python str alone (a JSON escape pair
# decodes to one character) and have no UTF-8 encoding.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def unstorable_at(text: str) -> tuple[int, str] | None:
    """The first character of ``text`` the database cannot store, as
    (position, ``U+XXXX``), or None."""
    found = _UNSTORABLE.search(text)
    return (found.start(), f"U+{ord(found.group()):04X}") if found else None


def escape_unstorable(text: str) -> str:
    """``text`` with each character the database cannot store written as its
    escape (``\\u0000``, ``\\ud800``): what arrived stays readable, and nothing
    else about it changes."""
    return _UNSTORABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


@dataclass
class ProviderResult:
    """What a provider reported, faithfully: nothing here is judged yet.

    ``error`` is set (to ``provider_error`` or ``timeout``) when no usable
    response arrived; ``raw`` then holds what did arrive (a status line and
    body, a malformed payload), kept for review.
    """

    text: str | None = None
    finish_reason: str | None = None
    tool_calls: list = field(default_factory=list)
    model: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_ms: int | None = None
    error: str | None = None
    error_detail: str = ""
    raw: str = ""


@dataclass(frozen=True)
class ContractResult:
    """Whether a provider result passed the contract, and if not, why."""

    ok: bool
    failure_code: str = ""
    detail: str = ""


def check(result: ProviderResult, *, max_chars: int = MAX_SUMMARY_CHARS) -> ContractResult:
    """Judge one provider result against the contract; the first violation wins,
    in an order that names the most fundamental problem."""
    if result.error:
        code = result.error if result.error in (PROVIDER_ERROR, TIMEOUT) else PROVIDER_ERROR
        return ContractResult(False, code, result.error_detail or code)
    if result.tool_calls:
        return ContractResult(False, TOOL_CALLS, f"the response carried {len(result.tool_calls)} tool call(s)")
    if result.finish_reason != "stop":
        return ContractResult(False, FINISH_REASON, f"finish_reason was {result.finish_reason!r}, not 'stop'")
    text = result.text or ""
    if not text.strip():
        return ContractResult(False, EMPTY, "the response text was blank")
    unstorable = unstorable_at(text)
    if unstorable:
        position, char = unstorable
        kind = "a NUL" if char == "U+0000" else "a lone surrogate"
        return ContractResult(False, UNSTORABLE_TEXT,
                              f"{kind} ({char}) at position {position}: the database cannot store this text")
    control = _CONTROL.search(text)
    if control:
        return ContractResult(False, NOT_PLAIN_TEXT,
                       f"control character U+{ord(control.group()):04X} at position {control.start()}")
    if len(text) > max_chars:
        return ContractResult(False, TOO_LONG, f"{len(text)} characters; at most {max_chars} are allowed")
    return ContractResult(True)
