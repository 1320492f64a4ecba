import pytest

from compaction.drift.input import forget_readings


@pytest.fixture(autouse=True)
def read_afresh():
    """Each drift test reads its texts afresh: the checks remember what they
    read across calls (one process, many generations), so a test that
    passed on readings another test left behind would not state its rule."""
    forget_readings()
    yield
