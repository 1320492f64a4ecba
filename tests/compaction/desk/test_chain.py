"""The conversation page of a rolling conversation shows its hand-off chain
(SPEC §7, §8 desk; ``_chain.html``): each generation's note, material
range, parent, state and attempts, the diff from its parent, a chart of
note length per generation, where the chain broke — and operators re-run
a failed or exhausted generation with a reason, as for segments."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from compaction.bindings.handoff import handoff_plan
from compaction.engine.run import job_run
from compaction.models import AuditEvent, CompactionJob, JobState
from tests.compaction.bindings.rolling import (ScriptedHandoffModel, edit_message, ingest, rolling_document,
                                               rolling_scope, run_chain)
from tests.compaction.desk.conftest import XSS
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def page(client, conversation, **params):
    return client.get(reverse("desk-conversation", args=[conversation.pk]), params)


def test_the_chain_shows_each_generation_its_range_parent_state_attempts_note_and_diff(as_user, chain):
    conversation, (g1, g2, g3) = chain
    response = page(as_user(make_user("sue", role="support")), conversation)
    html = response.content.decode()
    assert response.status_code == 200 and 'id="chain"' in html
    assert "Hand-off chain" in html and "3 of 3 generations valid" in html
    for g in (g1, g2, g3):
        assert f'id="gen-{g.number}"' in html and f"{g.from_pair}–{g.to_pair}" in html
        assert f"/jobs/{g.job_id}/" in html
    assert '<a href="#gen-1">#1</a>' in html and '<a href="#gen-2">#2</a>' in html  # parent links
    assert "1 / 2" in html  # attempts used / allowed
    assert "Matter of generation 3" in html
    # The diff from the parent: generation 2's line replaced by generation 3's.
    assert '<span class="d-del">-- Matter of generation 2' in html
    assert '<span class="d-add">+- Matter of generation 3' in html
    # The chart: one bar per generation, note length in characters.
    assert html.count("<rect") == 3 and f"generation 3: {len(g3.text)} characters" in html
    # A rolling conversation shows no segment bands.
    assert 'class="band bg-' not in html and "rolling hand-off" in html


def test_the_chain_shows_where_it_broke(as_user, chain):
    conversation, (g1, g2, g3) = chain
    edit_message(conversation, "a-14", "Answer 14: corrected.")
    html = page(as_user(make_user("sue", role="support")), conversation).content.decode()
    assert "1 of 3 generations valid" in html
    assert "✗ chain broke here" in html and "(pair 14 changed)" in html
    assert "(broke at #2)" in html
    assert 'bar-stale' in html


def test_an_operator_reruns_a_failed_generation_with_a_reason(as_user, chain, django_capture_on_commit_callbacks):
    conversation, generations = chain
    ingest(rolling_document(20, scope="default", start=34))
    (job,) = handoff_plan(conversation=conversation)
    job_run(job_id=job.pk, provider=ScriptedHandoffModel(results=[{"text": XSS}]))
    operator = make_user("olga", role="operator")
    html = page(as_user(operator), conversation).content.decode()
    assert "Jobs that wrote no note (yet)" in html and "malformed_note" in html
    assert f'action="/jobs/{job.pk}/rerun/"' in html and "Re-run generation" in html
    assert XSS not in html
    with django_capture_on_commit_callbacks():
        response = as_user(operator).post(reverse("desk-job-rerun", args=[job.pk]),
                                          {"rerun-reason": "the model is back", "rerun-confirm": "on"})
    assert response.status_code == 302
    assert CompactionJob.objects.get(pk=job.pk).state == JobState.PENDING
    assert AuditEvent.objects.get(action="job.rerun", job=job).reason == "the model is back"


def test_support_sees_the_chain_but_no_rerun_form(as_user, chain):
    conversation, _ = chain
    ingest(rolling_document(20, scope="default", start=34))
    (job,) = handoff_plan(conversation=conversation)
    job_run(job_id=job.pk, provider=ScriptedHandoffModel(results=[{"text": "no headings"}]))
    html = page(as_user(make_user("sue", role="support")), conversation).content.decode()
    assert "Jobs that wrote no note (yet)" in html and "Re-run generation" not in html


def test_the_chain_of_another_scope_is_404(as_user, chain):
    conversation, _ = chain
    assert page(as_user(make_user("eve", role="support", scopes=("other",))), conversation).status_code == 404


def test_the_chain_view_costs_the_same_queries_however_long_the_chain(as_user, db):
    rolling_scope(scope="default", recent_turns=0, min_new_token_count=0, min_compact_message_count=2,
                  max_compaction_batch_messages=2)
    short = ingest(rolling_document(3, scope="default", external_id="short"))
    run_chain(short, provider=ScriptedHandoffModel())
    long = ingest(rolling_document(12, scope="default", external_id="long"))
    run_chain(long, provider=ScriptedHandoffModel())
    client = as_user(make_user("sue", role="support"))
    counts = []
    for conversation in (short, long):
        with CaptureQueriesContext(connection) as queries:
            assert page(client, conversation).status_code == 200
        counts.append(len(queries))
    assert counts[0] == counts[1], counts


def test_a_hand_off_jobs_page_shows_its_material_and_note(as_user, chain):
    conversation, (g1, g2, g3) = chain
    html = as_user(make_user("sue", role="support")).get(reverse("desk-job", args=[g2.job_id])).content.decode()
    assert "Request 10:" in html and "Answer 19:" in html and "Matter of generation 2" in html
