"""The bulk import service: group commit, the COPY group and its
line-by-line fallback, worker processes (SPEC §3)."""

import json

import pytest
from django.db import connection

from conversations.documents import validate_document
from conversations.models import Conversation, Message
from conversations.services import bulk_import
from conversations.services.bulk_import import (CREATED, REFUSED, UNCHANGED, UPDATED, ImportFailed, ImportRefused,
                                                group_import, jsonl_lines, lines_import, options_check, worker_for)
from conversations.services.ingest import conversation_ingest
from tests.factories import conversation_document

pytestmark = pytest.mark.django_db


def line(n_pairs, external_id, **changes) -> bytes:
    document = conversation_document(n_pairs, external_id=external_id)
    document.update(changes)
    return json.dumps(document).encode()


def numbered(*lines):
    return list(enumerate(lines, start=1))


def test_lines_naming_the_same_conversation_apply_in_file_order_within_a_group():
    second = conversation_document(3, external_id="twice")
    second["messages"][1]["content"] = "Answer 0, corrected."
    outcomes = group_import(group=numbered(line(3, "twice"), line(2, "other"), json.dumps(second).encode()),
                            actor="tests")
    assert [(o.number, o.status, o.external_id) for o in outcomes] == [
        (1, CREATED, "twice"), (2, CREATED, "other"), (3, UPDATED, "twice")]
    assert (outcomes[2].messages_updated, outcomes[2].revisions_created) == (1, 1)
    assert Message.objects.get(external_id="a-0", conversation__external_id="twice").content == "Answer 0, corrected."


def test_a_group_whose_conversation_appears_meanwhile_is_imported_line_by_line(monkeypatch):
    """A conversation stored between the group's look-up and its statement
    (another import won the race) makes the COPY fail; nothing of it stays
    and every line is applied the ordinary way, the raced one as an update."""
    conversation_ingest(document=validate_document(conversation_document(2, external_id="raced")))
    monkeypatch.setattr(bulk_import, "stored_conversation_keys", lambda keys: set())
    outcomes = group_import(group=numbered(line(3, "new-1"), line(4, "raced"), line(5, "new-2")), actor="tests")
    assert [(o.status, o.external_id, o.pair_count) for o in outcomes] == [
        (CREATED, "new-1", 3), (UPDATED, "raced", 4), (CREATED, "new-2", 5)]
    assert dict(Conversation.objects.values_list("external_id", "pair_count")) == {"new-1": 3, "raced": 4, "new-2": 5}


@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="the COPY group is PostgreSQL's")
def test_new_conversations_named_once_in_a_group_are_written_by_one_copy_group(monkeypatch):
    groups = []
    real = bulk_import.conversations_ingest_new

    def spy(*, documents, actor):
        groups.append([d.id for d in documents])
        return real(documents=documents, actor=actor)

    monkeypatch.setattr(bulk_import, "conversations_ingest_new", spy)
    conversation_ingest(document=validate_document(conversation_document(2, external_id="stored")))
    outcomes = group_import(group=numbered(line(2, "n-1"), line(2, "stored"), line(2, "n-2"), line(2, "n-3"),
                                           line(2, "n-1")), actor="tests")
    # n-1 is named twice and "stored" exists: both go the ordinary way, in file order.
    assert groups == [["n-2", "n-3"]]
    assert [o.status for o in outcomes] == [CREATED, UNCHANGED, CREATED, CREATED, UNCHANGED]


def test_a_refused_line_leaves_the_rest_of_its_group_written():
    bad = conversation_document(2, external_id="bad")
    bad["messages"][0]["role"] = "robot"
    outcomes = group_import(group=numbered(line(2, "one"), json.dumps(bad).encode(), b"{broken", line(2, "two")),
                            actor="tests")
    assert [o.status for o in outcomes] == [CREATED, REFUSED, REFUSED, CREATED]
    assert "messages[0].role" in outcomes[1].errors and "document" in outcomes[2].errors
    assert sorted(Conversation.objects.values_list("external_id", flat=True)) == ["one", "two"]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_each_group_commits_before_its_outcomes_are_handed_back():
    seen = []

    def on_group(outcomes):
        # No transaction is open any more: the group has committed.
        seen.append(([o.number for o in outcomes], connection.in_atomic_block,
                     Conversation.objects.filter(external_id__startswith="g-").count()))

    totals = lines_import(lines=numbered(*(line(1, f"g-{n}") for n in range(5))), actor="tests", batch=2,
                          on_group=on_group)
    assert seen == [([1, 2], False, 2), ([3, 4], False, 4), ([5], False, 5)]
    assert (totals.imported, totals.unchanged, totals.refused) == (5, 0, 0)


def test_totals_count_imported_unchanged_and_refused_lines():
    lines = numbered(line(1, "t-1"), line(1, "t-1"), b"{broken")
    totals = lines_import(lines=lines, actor="tests", batch=1)
    assert (totals.imported, totals.unchanged, totals.refused) == (1, 1, 1)


@pytest.mark.parametrize("batch, workers, message", [
    (0, 1, "--batch must be at least 1"), (1, 0, "--workers must be at least 1")])
def test_a_batch_or_worker_count_below_one_is_refused(batch, workers, message):
    with pytest.raises(ImportRefused, match=message):
        options_check(batch=batch, workers=workers)


def test_blank_lines_are_skipped_and_numbers_kept():
    assert list(jsonl_lines([b"a\n", b"  \n", b"b\r\n"])) == [(1, b"a"), (3, b"b")]


def test_every_line_of_one_conversation_goes_to_the_same_worker():
    first, again = line(2, "same"), line(5, "same", title="another title")
    assert worker_for(first, 7) == worker_for(again, 7)
    assert worker_for(b"{broken", 7) == 0


@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="--workers needs PostgreSQL")
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_workers_import_each_line_once_and_keep_a_conversations_lines_in_file_order():
    docs = [conversation_document(2 + n % 3, external_id=f"w-{n}") for n in range(12)]
    again = conversation_document(3, external_id="w-1")
    again["messages"][1]["content"] = "Answer 0, corrected."
    bad = conversation_document(2, external_id="w-bad")
    bad["messages"][0]["role"] = "robot"
    raw = [json.dumps(d).encode() for d in docs[:6]] + [json.dumps(again).encode(), json.dumps(bad).encode(),
                                                         b"{broken"] + [json.dumps(d).encode() for d in docs[6:]]
    outcomes = []
    totals = lines_import(lines=numbered(*raw), actor="tests", batch=2, workers=3, on_group=outcomes.extend)
    assert sorted(o.number for o in outcomes) == list(range(1, 16))
    by_number = {o.number: o for o in outcomes}
    assert (by_number[2].status, by_number[7].status) == (CREATED, UPDATED)
    assert by_number[8].status == by_number[9].status == REFUSED
    assert (totals.imported, totals.unchanged, totals.refused) == (13, 0, 2)
    assert Conversation.objects.count() == 12
    assert Message.objects.get(conversation__external_id="w-1", external_id="a-0").content == "Answer 0, corrected."


@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="--workers needs PostgreSQL")
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_failing_worker_fails_the_import_and_hands_back_nothing_it_did_not_commit(monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(bulk_import, "conversations_ingest_new", broken)  # inherited by the forked workers
    handed_back = []
    with pytest.raises(ImportFailed, match="a worker failed") as failed:
        lines_import(lines=numbered(*(line(2, f"d-{n}") for n in range(6))), actor="tests", batch=3, workers=2,
                     on_group=handed_back.extend)
    assert any("RuntimeError: disk on fire" in detail for detail in failed.value.details)
    assert handed_back == []
    assert not Conversation.objects.exists()
