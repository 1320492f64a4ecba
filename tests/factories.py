"""Builders for conversation documents and users used across the tests, and
small helpers to drive the app as a client or a command line would."""

from __future__ import annotations

import io
import json
from datetime import datetime, timedelta, timezone

from django.contrib.auth.models import Group, User
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.authtoken.models import Token

from conversations.models import ScopeGrant

T0 = datetime(2026, 11, 1, 10, 0, tzinfo=timezone.utc)


def ts(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")


def pair_messages(i: int, *, run_id: str | None = None, user_text: str | None = None,
                  assistant_text: str | None = None, prefix: str = "") -> tuple[dict, list[dict]]:
    """One run that makes one pair: a user question and a completed answer."""
    run_id = run_id or f"{prefix}run-{i}"
    run = {"id": run_id, "status": "completed", "created_at": ts(i * 2)}
    messages = [
        {"id": f"{prefix}u-{i}", "run_id": run_id, "role": "user",
         "content": user_text if user_text is not None else f"Question {i}: what was the fee on day {i}?",
         "status": "completed", "created_at": ts(i * 2)},
        {"id": f"{prefix}a-{i}", "run_id": run_id, "role": "assistant",
         "content": assistant_text if assistant_text is not None else f"Answer {i}: the fee was {i}.{i:02d} EUR as of 2026-10-{(i % 28) + 1:02d}.",
         "status": "completed", "created_at": ts(i * 2 + 1)},
    ]
    return run, messages


def conversation_document(n_pairs: int, *, scope: str = "default", external_id: str = "conv-1",
                          title: str = "A test conversation", prefix: str = "") -> dict:
    runs, messages = [], []
    for i in range(n_pairs):
        run, msgs = pair_messages(i, prefix=prefix)
        runs.append(run)
        messages.extend(msgs)
    return {"scope": scope, "id": external_id, "title": title, "metadata": {}, "runs": runs, "messages": messages}


def post_document(client, doc, raw=None):
    """POST one ingest document (or raw bytes) as an integrator would."""
    body = raw if raw is not None else json.dumps(doc).encode()
    return client.post("/api/v1/ingest/", data=body, content_type="application/json")


def make_user(username: str, *, role: str | None = None, scopes: tuple[str, ...] = ("default",),
              staff: bool = False, password: str = "pw-for-tests") -> User:
    user = User.objects.create_user(username=username, password=password, is_staff=staff)
    if role:
        user.groups.add(Group.objects.get(name=role))
    for scope in scopes:
        ScopeGrant.objects.create(user=user, scope=scope)
    return user


def admin_client():
    """A test client signed in as a superuser (the admin site), and that user."""
    user = make_user("root", staff=True, scopes=())
    user.is_superuser = True
    user.save()
    client = Client()
    client.force_login(user)
    return client, user


def token_for(user: User) -> str:
    return Token.objects.get_or_create(user=user)[0].key


def run_command(*args) -> tuple[str, str, CommandError | None]:
    """A management command's output, its errors and how it failed (None if it did not)."""
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command(*args, stdout=out, stderr=err)
        failed = None
    except CommandError as exc:
        failed = exc
    return out.getvalue(), err.getvalue(), failed

