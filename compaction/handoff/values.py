"""Look-up values: what a tool result or the assistant says that a user
request must not carry unless the user said it too (SPEC §8
``tool_detail_in_requests``; seed 001 §3, "订单88232的签收日期2026-08-31"
in nine generations).

Pure. A value is a date (2026-08-31 = 8月31日 = Aug 31; a year, when
written, tells two dates apart), a clock time, an amount with a currency or
unit (749元, $45, 3个工作日; a single digit is too common to tell who said
it), or tool wording (有货, 库存, 保修至, in stock — the vocabulary's
``tool_detail``). Bare numbers and ids are references a request may carry:
the next assistant looks the order up again by its number. The builder
drops these values from the request lines it carries; the drift checks
flag the ones the user never said.
"""

from __future__ import annotations

import re

from . import vocabulary as v
from .reader import Reader
from .reading import FOLDED, LATIN_LETTER, memoised, number_key, numbers

DATE = "date"
TIME = "time"
AMOUNT_VALUE = "amount"
WORD = "word"

# (year, month, day) and (month, day), each not right after a digit (nor,
# for a month, after 年 - / .): the look-behind comes after the first digit
# and looks at the character before it, so re finds a date by scanning for a
# digit instead of trying every position.
_DATE_FORMS = (
    re.compile(r"(\d(?<!\d\d)\d{3})\s*[-/.年]\s*(\d{1,2})\s*[-/.月]\s*(\d{1,2})\s*[日号]?(?!\d)"),
    re.compile(r"(\d(?<![\d年\-/.]\d)\d?)\s*月\s*(\d{1,2})\s*[日号]"),
)
_MONTHS = {m: i for i, names in enumerate(
    (("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
     ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
     ("december", "dec")), start=1) for m in names}
# The letters re.I lets a month's name hold besides ASCII ones ("ſep", with
# the long s), read as the ASCII letter they fold into.
_FOLDS = str.maketrans({char: letter for letter, chars in FOLDED.items() for char in chars})
_MONTH_NAME = "|".join(sorted(_MONTHS, key=len, reverse=True))
_EN_DATE_FORMS = (
    re.compile(rf"\b({_MONTH_NAME})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b", re.I),
    re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH_NAME})\b", re.I),
)
# What a match of each English form must hold, found by a scan for a Latin
# letter or a digit where the form itself is tried at every position: a
# month's name ends in an ASCII letter (none of its last letters is one re.I
# folds another character into), then maybe a dot, spaces and the day; the
# day's digit, an ordinal's letters, spaces and a month's first letter
# (ſep, with the long s). A text without them holds no such date: 27,000
# instructions of the first form's search saved on an assistant's answer
# naming "AirPods Pro" (issue 14).
_EN_DATE_NEEDS = (re.compile(r"[A-Za-z]\.?\s+\d"), re.compile(r"\d[A-Za-zſ]{0,2}\s+[A-Za-zſ]"))
CLOCK_TIME = re.compile(r"(?<!\d)([01]?\d|2[0-3])[:：]([0-5]\d)(?!\d)")
AMOUNT = re.compile(
    r"[$¥￥]\s?(\d[\d,]*(?:\.\d+)?)"
    r"|(\d[\d,]*(?:\.\d+)?)\s*(?:元|块|美元|人民币|RMB|USD|dollars?|%|％|个工作日|工作日|天|小时|分钟|周|个月)", re.I)

DateKey = tuple  # (year or None, month, day)


# Every date form holds a digit (``\d``, as the forms read it): a text
# without one holds no date, found by one search instead of four.
_DIGIT = re.compile(r"\d")


@memoised
def dates(text: str) -> tuple[tuple[str, DateKey], ...]:
    """Each date written in ``text`` with its (year or None, month, day) key."""
    if not _DIGIT.search(text):
        return ()
    found = []
    for form in _DATE_FORMS:
        for m in form.finditer(text):
            year, month, day = m.groups() if form.groups == 3 else (None, *m.groups())
            month, day = int(month), int(day)
            if 1 <= month <= 12 and 1 <= day <= 31:
                found.append((m.group().strip(), (int(year) if year else None, month, day)))
    if not LATIN_LETTER.search(text):  # a month's name is Latin letters (as re.I reads them)
        return tuple(found)
    for i, (form, needs) in enumerate(zip(_EN_DATE_FORMS, _EN_DATE_NEEDS)):
        for m in form.finditer(text) if needs.search(text) else ():
            name, day = (m.group(1), m.group(2)) if i == 0 else (m.group(2), m.group(1))
            if 1 <= int(day) <= 31:
                found.append((m.group().strip(), (None, _MONTHS[name.translate(_FOLDS).lower()], int(day))))
    return tuple(found)


def same_date(a: DateKey, b: DateKey) -> bool:
    """2026-08-31, 8月31日 and "Aug 31" are one date; 2026-08-31 and
    2027-08-31 (a delivery and a warranty end) are two."""
    return a[1:] == b[1:] and (a[0] is None or b[0] is None or a[0] == b[0])


def clock_times(text: str) -> list[tuple[str, str]]:
    """Each clock time of ``text``: (as written, its key ``H:MM``)."""
    if ":" not in text and "：" not in text:  # every clock time has its colon
        return []
    return [(f"{h}:{m}", f"{int(h)}:{m}") for h, m in CLOCK_TIME.findall(text)]


def values(reader: Reader, text: str) -> list[tuple[str, str, object]]:
    """The look-up values of ``text``: (as written, kind, comparison key), once each."""
    found: dict[tuple[str, object], str] = {}
    date_numbers = set()
    for raw, key in dates(text):
        found.setdefault((DATE, key), raw)
        date_numbers |= numbers(raw)
    for raw, key in clock_times(text):
        found.setdefault((TIME, key), raw)
    for match in AMOUNT.finditer(text) if _DIGIT.search(text) else ():  # every amount has a digit
        key = number_key(match.group(1) or match.group(2))
        if (len(key.replace(".", "")) >= 2 or match.group(1)) and key not in date_numbers:
            found.setdefault((AMOUNT_VALUE, key), match.group().strip())
    taken_to = -1
    for match in reader.find_all(v.TOOL_DETAIL, text):  # longest first at each position
        if match.start() >= taken_to:
            found.setdefault((WORD, match.group().lower()), match.group())
            taken_to = match.end()
    return [(raw, kind, key) for (kind, key), raw in found.items()]


def said_in(kind: str, key, text: str) -> bool:
    """Whether ``text`` (words the user is quoted with) holds the value."""
    if kind == DATE:
        return any(same_date(key, other) for _, other in dates(text))
    if kind == TIME:
        return any(key == other for _, other in clock_times(text))
    if kind == AMOUNT_VALUE:
        return key in numbers(text)
    return key in text.lower()
