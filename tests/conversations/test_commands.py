"""The import_conversations command: arguments in, one report a line out
(the import itself: tests/conversations/services/test_bulk_import.py)."""

import json

import pytest
from django.db import connection

from conversations.models import Conversation
from tests.factories import conversation_document, run_command as run

pytestmark = pytest.mark.django_db


def test_import_reports_each_line_and_imports_good_lines_in_their_own_transaction(tmp_path):
    bad = conversation_document(2, external_id="bad")
    bad["messages"][1]["status"] = "finished"
    lines = [
        json.dumps(conversation_document(31, external_id="good-1")).encode(),
        json.dumps(bad).encode(),
        b"{broken",
        b'{"scope": "default", "id": "x\xff"}',
        json.dumps(conversation_document(3, external_id="good-2")).encode(),
    ]
    path = tmp_path / "convs.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    out, err, failed = run("import_conversations", str(path))
    assert "line 1: created default/good-1" in out and "31 pairs, 1 planned segments" in out
    assert "line 2: refused: messages[1].status" in err
    assert "line 3: refused: document: malformed JSON" in err
    assert "line 4: refused: document: not valid UTF-8" in err
    assert "line 5: created default/good-2" in out
    assert "2 imported, 0 unchanged, 3 refused" in out
    assert failed is not None  # non-zero exit when a line was refused
    assert sorted(Conversation.objects.values_list("external_id", flat=True)) == ["good-1", "good-2"]


def test_import_refuses_repeated_and_unknown_nested_keys_as_the_api_does(tmp_path):
    doubled = json.dumps(conversation_document(2, external_id="doubled")).replace(
        '"id": "doubled"', '"id": "doubled", "id": "other"')
    nested = conversation_document(2, external_id="nested")
    nested["messages"][1]["tool_calls"] = [{"id": "c1", "name": "lookup", "arguments": "{}", "type": "function"}]
    path = tmp_path / "strict.jsonl"
    path.write_text(doubled + "\n" + json.dumps(nested) + "\n")
    out, err, failed = run("import_conversations", str(path))
    assert "line 1: refused: id: the key 'id' is given more than once" in err
    assert "line 2: refused: messages[1].tool_calls[0].type: unknown field" in err
    assert "0 imported, 0 unchanged, 2 refused" in out and failed is not None
    assert not Conversation.objects.exists()


def test_importing_the_same_file_twice_is_a_no_op(tmp_path):
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(conversation_document(5)) + "\n")
    run("import_conversations", str(path))
    out, _, failed = run("import_conversations", str(path))
    assert failed is None and "line 1: unchanged" in out and "0 imported, 1 unchanged, 0 refused" in out


def test_missing_file_is_a_clear_error(tmp_path):
    _, _, failed = run("import_conversations", str(tmp_path / "nope.jsonl"))
    assert failed is not None and "cannot open" in str(failed)


def test_imported_new_conversations_with_planned_segments_are_handed_to_the_engine(
        tmp_path, settings, monkeypatch, django_capture_on_commit_callbacks):
    from compaction import tasks

    settings.COMPACTION_AUTO_PLAN = True
    sent = []
    monkeypatch.setattr(tasks.plan_conversations, "delay", lambda ids: sent.append(ids))  # the broker's edge
    path = tmp_path / "engine.jsonl"
    path.write_text("\n".join(json.dumps(conversation_document(n, external_id=f"e-{n}")) for n in (2, 31, 40)) + "\n")
    with django_capture_on_commit_callbacks(execute=True):
        out, err, failed = run("import_conversations", str(path))
    assert failed is None, err
    # Planning messages sent once the group committed, naming the
    # conversations with planned segments and not the one too short; on
    # PostgreSQL the group's new conversations are written, and handed
    # over, together: one message.
    assert dict(Conversation.objects.values_list("external_id", "segment_count")) == {"e-2": 0, "e-31": 1, "e-40": 2}
    assert sorted(pk for ids in sent for pk in ids) == sorted(
        Conversation.objects.filter(segment_count__gt=0).values_list("pk", flat=True))
    assert len(sent) == (1 if connection.vendor == "postgresql" else 2)


def test_workers_must_be_at_least_one(tmp_path):
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(conversation_document(1)) + "\n")
    _, _, failed = run("import_conversations", str(path), "--workers", "0")
    assert failed is not None and "--workers must be at least 1" in str(failed)


def test_workers_are_refused_without_postgresql(tmp_path, monkeypatch):
    # Run on PostgreSQL too (./scripts/test): the import is told it is not.
    if connection.vendor == "postgresql":
        from types import SimpleNamespace

        from conversations.services import bulk_import

        monkeypatch.setattr(bulk_import, "connection", SimpleNamespace(vendor="sqlite"))
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(conversation_document(1)) + "\n")
    _, _, failed = run("import_conversations", str(path), "--workers", "2")
    assert failed is not None and "--workers above 1 needs PostgreSQL" in str(failed)
    assert not Conversation.objects.exists()


@pytest.mark.parametrize("bad", [b'{"a": NaN}', b'{"a": 1e400}', b'{"a": ' + b"9" * 5000 + b"}"])
def test_a_line_the_database_cannot_store_is_refused_and_the_others_imported(tmp_path, bad):
    lines = [json.dumps(conversation_document(3, external_id=name)).encode() for name in ("one", "two", "three")]
    lines[1] = lines[1].replace(b'"metadata": {}', b'"metadata": ' + bad)
    assert bad in lines[1]
    path = tmp_path / "bad-number.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    out, err, failed = run("import_conversations", str(path))
    assert "line 2: refused: " in err
    assert "2 imported, 0 unchanged, 1 refused" in out
    assert failed is not None
    assert sorted(Conversation.objects.values_list("external_id", flat=True)) == ["one", "three"]


@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="--workers needs PostgreSQL")
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_failing_worker_makes_the_import_fail_and_reports_nothing_it_did_not_commit(tmp_path, monkeypatch):
    from conversations.services import bulk_import

    def broken(**kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(bulk_import, "conversations_ingest_new", broken)  # inherited by the forked workers
    path = tmp_path / "doomed.jsonl"
    path.write_text("\n".join(json.dumps(conversation_document(2, external_id=f"d-{n}")) for n in range(6)) + "\n")
    out, err, failed = run("import_conversations", str(path), "--workers", "2", "--batch", "3")
    assert failed is not None and "a worker failed" in str(failed)
    assert "RuntimeError: disk on fire" in err
    assert "created" not in out
    assert not Conversation.objects.exists()
