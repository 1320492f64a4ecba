"""The cyclic garbage collector paused for one pure computation (issue 14:
a drift check of a generation; issue 15: one context assembly).

Both allocate tens of thousands of small, acyclic objects — readings, term
sets, parsed messages, index entries — most of them freed by reference
counting the moment the computation returns. Left running, the collector
promotes them and then walks them, and a full collection of a worker's heap
that happens to start inside such a call costs more than the call itself.
So the call runs with the collector paused; the collection it defers runs
when the collector is resumed, not skipped, and objects that died by then
are never seen by it.

Pure, standard library only. Safe with threads and nesting: only the call
that paused the collector resumes it, and a collector the caller paused
stays as the caller left it (``paused`` yields whether it paused).
``resumed`` runs a part of a paused call — a model the caller gave, which
may wait seconds — with the collector back on.

``freeze_startup_heap`` is for a process about to serve: everything it built
while starting (Django, the apps, the URL configuration, the modules of the
engine and the API: some 105,000 tracked objects, a full collection of 23 ms
on its own) is moved out of the collector's sight, so a full collection
later walks what was made since — what a pause defers, and the caches the
drift checks and assembly keep — and not the framework every time. The
worker processes call it as they start (``compaction.config.celery``), the
web processes when the WSGI application is built
(``compaction.config.wsgi``). Objects frozen are never collected; at start
they are the program itself, which lives as long as the process.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def paused() -> Iterator[bool]:
    """The collector off for the ``with`` body; yields True when this call
    turned it off (and so turns it back on), False when it was off already."""
    was_enabled = gc.isenabled()
    if was_enabled:
        gc.disable()
    try:
        yield was_enabled
    finally:
        if was_enabled:
            gc.enable()


@contextmanager
def resumed() -> Iterator[None]:
    """Inside a ``paused`` body that turned the collector off: the collector
    on for the ``with`` body, off again after it."""
    gc.enable()
    try:
        yield
    finally:
        gc.disable()


def freeze_startup_heap() -> int:
    """Collect what is garbage already, then freeze every tracked object left
    (``gc.freeze``); returns how many objects are frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
