"""The import_conversations and grant_access commands."""

import io
import json

import pytest
from django.core.management import CommandError, call_command

from conversations.models import Conversation, ScopeGrant, TokenScope
from tests.factories import conversation_document

pytestmark = pytest.mark.django_db


def run(*args):
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command(*args, stdout=out, stderr=err)
        failed = None
    except CommandError as exc:
        failed = exc
    return out.getvalue(), err.getvalue(), failed


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


def test_importing_the_same_file_twice_is_a_no_op(tmp_path):
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(conversation_document(5)) + "\n")
    run("import_conversations", str(path))
    out, _, failed = run("import_conversations", str(path))
    assert failed is None and "line 1: unchanged" in out and "0 imported, 1 unchanged, 0 refused" in out


def test_missing_file_is_a_clear_error(tmp_path):
    _, _, failed = run("import_conversations", str(tmp_path / "nope.jsonl"))
    assert failed is not None and "cannot open" in str(failed)


def test_grant_access_creates_user_role_scopes_and_a_scoped_token():
    out, _, failed = run("grant_access", "bot", "--role", "integrator", "--scope", "a", "--scope", "b",
                         "--token", "--token-scope", "a")
    assert failed is None and "token: " in out
    assert set(ScopeGrant.objects.filter(user__username="bot").values_list("scope", flat=True)) == {"a", "b"}
    assert TokenScope.objects.get(token__user__username="bot").scopes == ["a"]


def test_grant_access_refuses_a_token_scope_the_user_lacks():
    _, _, failed = run("grant_access", "bot", "--scope", "a", "--token", "--token-scope", "z")
    assert failed is not None and "not granted" in str(failed)
