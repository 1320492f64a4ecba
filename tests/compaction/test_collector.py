"""The collector paused for one pure computation (compaction.collector; issues 14 and 15)."""

from __future__ import annotations

import gc

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
