"""Drift checks of rolling hand-off notes (SPEC §8, seed 001 §4 "走样有三种：丢、错、多").

``checkers`` is the entry point (``check_note``, ``CHECKERS``); the pure,
deterministic rules live by kind in ``wrong``, ``extra``, ``lost`` and
``length``, one function per finding code (``findings``); ``input`` is one
generation's check input read once, ``reading`` how the chain and a note's
lines are read with the text rules the builder shares
(``compaction.handoff.reading``); ``chain`` and ``corpus`` index and search
the chain's messages (extended generation by generation, one search for a
quote), changing no answer. ``words`` says each kind and code in plain
words for the desk. ``services`` (the one module here that reads and
writes the database) reads a stored generation's check input, and stores
its report beside it: in the generation's own transaction when it is
written (the hand-off binding's finish hook), or again with
``manage.py check_drift``.
"""

from .checkers import (
    CODES,
    ChainHistory,
    ChainMessage,
    Finding,
    check_note,
)

__all__ = ["CODES", "ChainHistory", "ChainMessage", "Finding", "check_note"]
