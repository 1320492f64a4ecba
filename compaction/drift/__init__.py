"""Drift checks of rolling hand-off notes (SPEC §8, seed 001 §4 "走样有三种：丢、错、多").

``checkers`` holds the pure, deterministic rules: one function per finding
code, one entry point ``check_note``; ``reading`` is how they read notes,
messages and tool results with the shared vocabulary. Storing reports
beside generations (``services``) comes with the engine.
"""

from .checkers import (
    CODES,
    ChainHistory,
    ChainMessage,
    Finding,
    check_note,
)

__all__ = ["CODES", "ChainHistory", "ChainMessage", "Finding", "check_note"]
