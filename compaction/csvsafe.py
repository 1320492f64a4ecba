"""Spreadsheet-safe CSV cells (issue 6, OWASP "CSV injection").

A spreadsheet treats a cell that starts with ``=``, ``+``, ``-`` or ``@``
(or a tab or line break, which some of them skip before reading a formula)
as a formula. Conversation text and model output are data, never formulas,
so such a cell is prefixed with a single quote: spreadsheets then show the
text as written. Pure: no Django, no I/O.
"""

from __future__ import annotations

FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r", "\n")


def csv_cell(value) -> str:
    """The text of one CSV cell: ``None`` is empty, booleans are
    ``true``/``false``, numbers as written, text neutralised."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        # Our numbers are counts, ids and sizes; they are never negative,
        # and a number is not a formula, so it is written as is.
        return str(value)
    text = str(value)
    if text.startswith(FORMULA_TRIGGERS):
        return "'" + text
    return text
