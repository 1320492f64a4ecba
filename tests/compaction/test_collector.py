"""The collector paused for one pure computation (compaction.collector; issues 14 and 15)."""

from __future__ import annotations

import gc
import weakref

import pytest

from compaction import collector


@pytest.fixture(autouse=True)
def _collector_restored():
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


def test_paused_turns_the_collector_off_for_the_body_and_back_on_after_it():
    gc.enable()
    with collector.paused() as turned_off:
        assert turned_off is True and not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_the_caller_paused_stays_paused():
    gc.disable()
    with collector.paused() as turned_off:
        assert turned_off is False and not gc.isenabled()
    assert not gc.isenabled()


def test_an_error_in_the_body_still_resumes_the_collector():
    gc.enable()
    with pytest.raises(RuntimeError), collector.paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_nested_pauses_resume_only_at_the_outer_one():
    gc.enable()
    with collector.paused():
        with collector.paused() as inner:
            assert inner is False
        assert not gc.isenabled()
    assert gc.isenabled()


def test_resumed_runs_its_body_with_the_collector_on_and_pauses_it_again():
    gc.enable()
    with collector.paused():
        with collector.resumed():
            assert gc.isenabled()
        assert not gc.isenabled()
        with pytest.raises(ValueError), collector.resumed():
            raise ValueError("a model failed")
        assert not gc.isenabled()
    assert gc.isenabled()


def test_the_startup_heap_is_frozen_out_of_the_collectors_sight():
    gc.unfreeze()
    startup = [[n] for n in range(1000)]  # tracked objects alive at start
    try:
        frozen = collector.freeze_startup_heap()
        assert frozen >= len(startup) and gc.get_freeze_count() > 0  # (a frozen object freed since leaves the count)
        assert not any(o is startup for o in gc.get_objects())  # frozen objects are not walked any more
        later = [[1]]
        assert any(o is later for o in gc.get_objects())  # what is made afterwards is
    finally:
        gc.unfreeze()


def test_garbage_is_collected_before_the_freeze():
    gc.unfreeze()

    class Node:
        pass

    a, b = Node(), Node()
    a.other, b.other = b, a  # a cycle only the collector can free
    gone = weakref.ref(a)
    del a, b
    try:
        collector.freeze_startup_heap()
        assert gone() is None
    finally:
        gc.unfreeze()


def _connected(signal) -> list:
    return [r() if isinstance(r, weakref.ReferenceType) else r for _, r in signal.receivers]


def test_celery_workers_freeze_their_startup_heap_as_they_start():
    from celery.signals import worker_process_init, worker_ready

    from compaction.config import celery as celery_config

    assert celery_config.freeze_startup_heap in _connected(worker_process_init)  # each prefork pool process
    assert celery_config.freeze_startup_heap in _connected(worker_ready)  # the worker itself (solo, threads)
    gc.unfreeze()
    try:
        celery_config.freeze_startup_heap(sender=None)
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_web_processes_freeze_their_startup_heap_once_the_application_is_built():
    import importlib

    import compaction.config.wsgi as wsgi

    gc.unfreeze()
    try:
        importlib.reload(wsgi)
        assert gc.get_freeze_count() > 0 and wsgi.application is not None
    finally:
        gc.unfreeze()
