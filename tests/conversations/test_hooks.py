"""Ingest talks to whatever compacts conversations only through
``conversations.hooks`` (issue 10)."""

import pytest
from django.db import connection

from conversations import hooks
from conversations.documents import validate_document
from conversations.models import Segment
from conversations.services.ingest import conversation_ingest
from tests.factories import conversation_document

pytestmark = pytest.mark.django_db


class Recorder(hooks.IngestListener):
    """Plans one range over the first two pairs and records what it hears."""

    def __init__(self):
        self.heard = []

    def plan(self, pairs):
        return [hooks.PlannedRange(0, 0, 1, f"digest-of-{pairs[1].assistant.content}")] if len(pairs) >= 2 else []

    def written(self, changes):
        self.heard.append(([(c.conversation.external_id, c.created,
                             [(s.from_pair, s.old_digest, s.new_digest) for s in c.segment_changes])
                            for c in changes], connection.in_atomic_block))


@pytest.fixture
def recorder():
    recorder = Recorder()
    previous = hooks.listen(recorder)
    yield recorder
    hooks.listen(previous)


def ingest(document):
    return conversation_ingest(document=validate_document(document), actor="tests")


def test_ingest_stores_the_listeners_plan_and_announces_the_change_inside_its_transaction(recorder):
    document = conversation_document(3)
    ingest(document)
    segment = Segment.objects.get()
    assert (segment.from_pair, segment.to_pair, segment.digest) == (0, 1, "digest-of-" + document["messages"][3]["content"])
    assert segment.message_ids == ["u-0", "a-0", "u-1", "a-1"]
    (changes, in_transaction), = recorder.heard
    assert changes == [("conv-1", True, [(0, None, segment.digest)])] and in_transaction


def test_an_edit_announces_the_old_and_new_digest_and_a_repeat_announces_nothing(recorder):
    document = conversation_document(3)
    ingest(document)
    old = Segment.objects.get().digest
    ingest(document)
    assert len(recorder.heard) == 1  # nothing changed, nothing said
    document["messages"][3]["content"] = "Answer 1, corrected."
    ingest(document)
    (changes, _), = recorder.heard[1:]
    assert changes == [("conv-1", False, [(0, old, "digest-of-Answer 1, corrected.")])]


def test_without_a_listener_nothing_is_planned():
    previous = hooks.listen(hooks.IngestListener())
    try:
        result = ingest(conversation_document(40))
    finally:
        hooks.listen(previous)
    assert result.pair_count == 40 and not Segment.objects.exists()


class ChangeRecorder(hooks.IngestListener):
    def __init__(self):
        self.changed_from = []

    def written(self, changes):
        self.changed_from += [c.pairs_changed_from for c in changes]


@pytest.fixture
def changes():
    recorder = ChangeRecorder()
    previous = hooks.listen(recorder)
    yield recorder.changed_from
    hooks.listen(previous)


def test_appending_pairs_changes_no_earlier_pair(changes):
    ingest(conversation_document(5))
    document = conversation_document(8)
    ingest(document)
    assert changes == [None, None]


def test_an_edit_of_the_same_length_names_its_pair(changes):
    document = conversation_document(6)
    ingest(document)
    answer = document["messages"][7]["content"]  # pair 3's answer
    document["messages"][7]["content"] = answer.replace("Answer", "ANSWER")  # same bytes: no pair row moves
    ingest(document)
    assert changes == [None, 3]


def test_a_run_that_stops_counting_names_the_first_pair_it_moved(changes):
    document = conversation_document(6)
    ingest(document)
    document["runs"][2]["status"] = "failed"  # pair 2 goes; 3-5 are renumbered
    ingest(document)
    assert changes == [None, 2]


def test_a_change_outside_any_pair_names_none(changes):
    document = conversation_document(4)
    ingest(document)
    document["messages"].append({"id": "note-1", "role": "system", "content": "operator note",
                                 "status": "completed", "created_at": "2026-11-01T11:00:00Z"})
    ingest(document)
    assert changes == [None, None]
