"""The whole OpenAPI schema, fuzzed (issue 6): every operation, positive and
negative cases, through the real WSGI application and database. No request
may give a 5xx, every status code and body must be the documented ones, and
requests that break the schema must be refused with a 4xx."""

from __future__ import annotations

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
    response_schema_conformance,
    status_code_conformance,
)

from compaction.api.plumbing import MAX_ID
from compaction.config.wsgi import application
from tests.factories import token_for

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    negative_data_rejection,
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
    case.call_and_validate(headers={"Authorization": f"Token {staff_token}"}, checks=CHECKS)
