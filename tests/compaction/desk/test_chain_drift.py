"""Drift findings on the desk (SPEC §8; issue 14 §3): each generation's
findings highlighted on their note lines and linked to the messages that
prove them, kind and code in plain words, a count by kind per generation,
the length chart marking growth without new matters, the queue and the
conversations list filtered by "drift found" and by code, and a verdict
citing findings."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from django.utils.html import escape

from compaction.desk.segment import source_anchor
from compaction.drift import words
from compaction.models import AuditEvent, DriftCode, DriftFinding, DriftReport, Review
from conversations.models import Message, Pair
from tests.compaction.bindings.rolling import ingest, rolling_document
from tests.compaction.desk.conftest import XSS
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def _page(client, conversation, **params):
    return client.get(reverse("desk-conversation", args=[conversation.pk]), params).content.decode()


def _support(as_user):
    return as_user(make_user("sue", role="support"))


def _card(conversation, message_id: str) -> str:
    """The source card a message is shown in on the job page: its pair's
    user or assistant card (a tool result: its pair's user card)."""
    message = Message.objects.get(conversation=conversation, external_id=message_id)
    index = Pair.objects.get(conversation=conversation, run_id=message.run_id).index
    return source_anchor(index, "assistant" if message.role == "assistant" else "user")


def test_each_finding_is_highlighted_on_its_line_in_plain_words_and_linked_to_its_messages(as_user, chain):
    conversation, generations = chain
    html = _page(_support(as_user), conversation)
    findings = list(DriftFinding.objects.filter(generation__in=generations))
    assert findings, "the scripted notes quote words no user said"
    for f in findings:
        g = f.generation
        assert f'id="gen-{g.number}-finding-{f.pk}"' in html
        if f.line is not None:
            # The line itself is marked, with its own text, and the finding links to it.
            line_text = g.text.splitlines()[f.line - 1]
            marked = re.search(rf'<mark class="drift-line" id="gen-{g.number}-line-{f.line}"[^>]*>(.*?)</mark>',
                               html, re.S)
            assert marked and f'<span class="ln">{f.line}</span>' in marked.group(1)
            assert line_text.split("(")[0].strip()[:20] in marked.group(1)
            assert f'href="#gen-{g.number}-line-{f.line}"' in html
        assert escape(words.code_title(f.code)) in html and escape(words.code_explanation(f.code)) in html
        for message_id in f.message_ids:
            # The proving message: the job page of the generation whose material holds it, at the message.
            holder = next(x for x in generations if message_id in x.message_ids)
            assert f'href="/jobs/{holder.job_id}/#{_card(conversation, message_id)}"' in html
    # Unmarked lines are shown too, numbered.
    assert '<span class="note-line"><span class="ln">' in html


def test_the_job_page_anchors_each_message_a_finding_links_to(as_user, chain):
    conversation, (g1, *_) = chain
    html = _support(as_user).get(reverse("desk-job", args=[g1.job_id])).content.decode()
    for message_id in g1.message_ids:
        assert f'id="{_card(conversation, message_id)}"' in html


def test_each_generation_counts_its_findings_by_kind_and_says_when_it_is_clean_or_unchecked(as_user, chain):
    conversation, (g1, g2, g3) = chain
    DriftFinding.objects.filter(generation=g2).delete()
    DriftReport.objects.filter(generation=g3).delete()
    DriftFinding.objects.filter(generation=g3).delete()
    html = _page(_support(as_user), conversation)
    row = re.search(r'<tr id="chain-row-1">(.*?)</tr>', html, re.S).group(1)
    by_kind = {}
    for f in DriftFinding.objects.filter(generation=g1):
        by_kind[f.kind] = by_kind.get(f.kind, 0) + 1
    for kind, n in by_kind.items():
        assert f'<span class="drift-kind drift-{kind}">{n} {words.kind_title(kind).lower()}</span>' in row
    assert "clean" in re.search(r'<tr id="chain-row-2">(.*?)</tr>', html, re.S).group(1)
    assert "not checked" in re.search(r'<tr id="chain-row-3">(.*?)</tr>', html, re.S).group(1)
    assert "No drift found" in html and "Not checked yet" in html


def test_the_length_chart_marks_growth_without_new_matters(as_user, chain):
    conversation, (g1, g2, g3) = chain
    DriftFinding.objects.create(generation=g2, position=100, kind="length", code=DriftCode.GROWTH_WITHOUT_NEW_MATTERS,
                                section=None, line=None, message_ids=[], detail="grew from 10 to 20 characters")
    html = _page(_support(as_user), conversation)
    assert html.count('class="bar-grew"') == 1 and 'data-grew="2"' in html
    assert f"generation 2: {len(g2.text)} characters — grew without new matters" in html
    assert "the whole note" in html and "Grew without new matters" in html


def test_finding_text_is_escaped(as_user, chain):
    conversation, (g1, *_) = chain
    DriftFinding.objects.create(generation=g1, position=100, kind="wrong", code=DriftCode.QUOTE_NOT_VERBATIM,
                                section="requests", line=2, message_ids=[XSS], detail=XSS, subject=XSS)
    html = _page(_support(as_user), conversation)
    assert XSS not in html and "&lt;script&gt;" in html


def test_the_queue_filters_by_drift_found_and_by_code(as_user, chain):
    conversation, (g1, g2, g3) = chain
    DriftFinding.objects.filter(generation=g3).delete()
    code = DriftFinding.objects.filter(generation=g1).first().code
    other = next(c for c in DriftCode.values if not DriftFinding.objects.filter(code=c).exists())
    client = _support(as_user)

    def jobs(**params):
        html = client.get(reverse("desk-queue"), params).content.decode()
        return {int(j) for j in re.findall(r'<td><a href="/jobs/(\d+)/">#\d+</a></td>', html)}, html

    assert jobs()[0] == set()  # succeeded, usable notes are no repair of their own
    found, html = jobs(drift="found")
    assert found == {g1.job_id, g2.job_id}
    assert f'href="/conversations/{conversation.pk}/#gen-1-drift"' in html
    assert jobs(drift=code)[0] == {g.job_id for g in (g1, g2) if DriftFinding.objects.filter(generation=g, code=code)}
    assert jobs(drift=other)[0] == set()
    assert jobs(drift="found", state="failed")[0] == set()
    assert "drift:" in jobs(drift="made-up")[1]  # a bad value is reported, not guessed


def test_the_conversations_list_filters_by_drift_found_and_by_code(as_user, chain):
    conversation, generations = chain
    clean = ingest(rolling_document(3, scope="default", external_id="clean-1"))
    client = _support(as_user)

    def listed(**params):
        html = client.get(reverse("desk-conversations"), params).content.decode()
        return set(re.findall(r'<a href="/conversations/(\d+)/">', html))

    assert listed() >= {str(conversation.pk), str(clean.pk)}
    assert listed(drift="found") == {str(conversation.pk)}
    code = DriftFinding.objects.filter(generation__in=generations).first().code
    assert listed(drift=code) == {str(conversation.pk)}
    other = next(c for c in DriftCode.values if not DriftFinding.objects.filter(code=c).exists())
    assert listed(drift=other) == set()


def test_a_verdict_cites_findings_of_its_note(as_user, chain):
    conversation, (g1, g2, g3) = chain
    reviewer = make_user("sue", role="support")
    client = as_user(reviewer)
    page = client.get(reverse("desk-job", args=[g1.job_id])).content.decode()
    findings = list(DriftFinding.objects.filter(generation=g1).order_by("position"))
    for f in findings:
        assert f'name="cite" value="{f.pk}"' in page
    response = client.post(reverse("desk-job-review", args=[g1.job_id]),
                           {"verdict": "needs_work", "note": "the quote was made up", "cite": [findings[0].pk]})
    assert response.status_code == 302
    review = Review.objects.get(job=g1.job)
    assert list(review.cited_findings.all()) == [findings[0]] and review.generation_id == g1.pk
    assert AuditEvent.objects.get(action="review.record", job=g1.job).after["cited_findings"] == [findings[0].pk]
    page = client.get(reverse("desk-job", args=[g1.job_id])).content.decode()
    assert "Cites:" in page and words.code_title(findings[0].code) in page


def test_a_verdict_cannot_cite_another_notes_finding(as_user, chain):
    conversation, (g1, g2, g3) = chain
    foreign = DriftFinding.objects.filter(generation=g2).first()
    client = as_user(make_user("sue", role="support"))
    response = client.post(reverse("desk-job-review", args=[g1.job_id]),
                           {"verdict": "approved", "note": "fine", "cite": [foreign.pk]})
    assert response.status_code == 400
    assert not Review.objects.filter(job=g1.job).exists()


def test_the_review_action_refuses_a_finding_of_another_note(chain):
    from compaction.actions import ActionRefused, do_review_record

    conversation, (g1, g2, g3) = chain
    foreign = DriftFinding.objects.filter(generation=g2).first()
    with pytest.raises(ActionRefused, match="cited_findings: finding"):
        do_review_record(job=g1.job, reviewer=make_user("sue", role="support"), verdict="approved", note="ok",
                         cited_findings=[foreign.pk])
    assert not Review.objects.exists()
