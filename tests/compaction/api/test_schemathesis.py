"""The whole OpenAPI schema, fuzzed (issue 6): every operation, positive and
negative cases, through the real WSGI application and database. No request
may give a 5xx, every status code and body must be the documented ones, and
requests that break the schema must be refused with a 4xx."""

from __future__ import annotations

import copy
import json
import re
import uuid

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)

from compaction.api.activity import ACTIVITY
from compaction.api.audits import AUDITS
from compaction.api.conversations import CONVERSATIONS
from compaction.api.plumbing import MAX_ID
from compaction.config.wsgi import application
from tests.factories import token_for

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    negative_data_rejection,
    positive_data_acceptance,
]


# The schema view needs no database: it is read once, at collection.
schema = schemathesis.openapi.from_wsgi("/api/schema/", application)


def _existing_ids() -> dict[str, list[int]]:
    from compaction.models import CompactionJob
    from conversations.models import Conversation

    return {
        "job_id": list(CompactionJob.objects.values_list("pk", flat=True)),
        "job": list(CompactionJob.objects.values_list("pk", flat=True)),
        "conversation_id": list(Conversation.objects.values_list("pk", flat=True)),
    }


def _sometimes_existing(values: dict) -> st.SearchStrategy:
    """Random ids almost never name a row; half of the time, swap each valid
    id for one that exists so the success responses are checked too. Only
    integer ids are swapped, so a negative case stays negative."""
    if not isinstance(values, dict):
        return st.just(values)
    known = _existing_ids()
    # Only ids inside the documented range: a negative case's out-of-range id
    # must reach the server as generated.
    swappable = {k: known[k] for k, v in values.items()
                 if k in known and known[k] and isinstance(v, int) and not isinstance(v, bool)
                 and 1 <= v <= MAX_ID}
    if not swappable:
        return st.just(values)
    swapped = st.fixed_dictionaries({k: st.sampled_from(ids) for k, ids in swappable.items()})
    return st.one_of(st.just(values), swapped.map(lambda new: {**values, **new}))


@schema.hook
def flatmap_path_parameters(context, path_parameters):
    return _sometimes_existing(path_parameters)


@schema.hook
def flatmap_body(context, body):
    return _sometimes_existing(body)


# What no JSON Schema can say, kept true of every generated request so that
# each one is judged by the rules the schema does state (issue 12 item 8).
# Nothing here turns an invalid request into a valid one: only values that
# already fit the schema are replaced.

_CURSOR_LISTS = {"/api/v1/activity/": ACTIVITY, "/api/v1/audits/": AUDITS,
                 "/api/v1/conversations/": CONVERSATIONS}
_CURSOR = re.compile(r"[A-Za-z0-9_-]+")


def _whole_query(path, query):
    """A cursor is opaque: a value of the documented form is replaced by one
    this API issued for that list. An export streams every record, so
    ``page_size`` belongs to the JSON pages only, and ``bom`` to the CSV
    export only (said in the descriptions; a query parameter cannot depend
    on another in OpenAPI 3.0): the query is made to keep to that, without
    dropping what makes a negative case negative."""
    if not isinstance(query, dict):
        return query
    keyset = _CURSOR_LISTS.get(path)
    cursor = query.get("cursor")
    if keyset is not None and isinstance(cursor, str) and _CURSOR.fullmatch(cursor):
        query = {**query, "cursor": keyset.cursor(["2026-01-01T00:00:00+00:00", 1])}
    if "bom" in query and query.get("format", "json") in ("json", "jsonl"):
        query = {**query, "format": "csv"}  # the byte order mark belongs to the CSV export
    if query.get("format") in ("csv", "jsonl") and "page_size" in query:
        size = str(query["page_size"])
        if size.isdigit() and 1 <= int(size) <= 500:
            query = {k: v for k, v in query.items() if k != "page_size"}
        else:  # keep what makes the case negative
            query = {k: v for k, v in query.items() if k not in ("format", "bom")}
    return query


def _referentially_whole(body):
    """Ids unique in the document, and every string ``run_id`` naming one of
    its runs (or none, where it named none); string metadata without NUL;
    and a conversation of its own, so what an earlier example stored (a
    message's role, which never changes) does not decide this one."""
    if not isinstance(body, dict):
        return body
    body = copy.deepcopy(body)
    if isinstance(body.get("id"), str) and body["id"].strip() and len(body["id"]) <= 200:
        body["id"] = uuid.uuid4().hex
    for key in ("runs", "messages"):
        seen = set()
        for i, item in enumerate(body.get(key) if isinstance(body.get(key), list) else []):
            if isinstance(item, dict) and isinstance(item.get("id"), str) and item["id"].strip():
                if item["id"] in seen:
                    item["id"] = f"~{key}{i}"
                seen.add(item["id"])
    runs = {r["id"] for r in body.get("runs") or [] if isinstance(r, dict) and isinstance(r.get("id"), str)}
    for message in body.get("messages") if isinstance(body.get("messages"), list) else []:
        if isinstance(message, dict) and isinstance(message.get("run_id"), str) and message["run_id"].strip() \
                and message["run_id"] not in runs:
            message["run_id"] = None
    if isinstance(body.get("metadata"), dict):
        body["metadata"] = json.loads(json.dumps(body["metadata"]).replace("\\u0000", ""))
    return body


@pytest.fixture
def staff_token(db, history, users, settings):
    # Every generated write must reach the view, not the throttle.
    settings.COMPACTION_API_WRITE_RATE = "1000000/minute"
    # The WSGI handler would close the test's connection (and its open
    # transaction) at the end of each request; Django's own test client
    # disconnects these handlers in the same way.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield token_for(users["staff"])
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@schema.parametrize()
@settings(max_examples=25, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
def test_every_operation_conforms_to_the_schema(case, staff_token):
    # Every phase's cases, the coverage phase's too (hooks see only some).
    case.query = _whole_query(case.operation.path, case.query)
    if case.operation.path == "/api/v1/ingest/":
        case.body = _referentially_whole(case.body)
    checks = CHECKS
    if case.operation.path == "/api/v1/context/assemble":
        # A schema-valid assembly request is refused when its messages break
        # tool pairing (422, SPEC §9) or do not fit their format (OpenAI's
        # system prompts are messages; Anthropic's are ``system``): rules of
        # the messages' content, not of their JSON shape, which no schema
        # states. Acceptance of valid requests is tested in test_assembly.py.
        checks = [check for check in CHECKS if check is not positive_data_acceptance]
    case.call_and_validate(headers={"Authorization": f"Token {staff_token}"}, checks=checks)
