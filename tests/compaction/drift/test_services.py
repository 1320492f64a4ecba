"""Drift reports stored beside generations (SPEC §8, §11): written when a
hand-off generation is written, in its transaction, equal to the pure
checkers' findings over what the chain settled; ``check_drift`` recomputes
old generations and replaces their reports idempotently."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from compaction.drift import checkers as c
from compaction.drift import services
from compaction.handoff.material import Material, MaterialPair
from compaction.models import CompactionJob, DriftCode, DriftFinding, DriftReport, JobState, SummaryGeneration
from tests.compaction.bindings.rolling import (ScriptedHandoffModel, handoff_jobs, ingest, rolling_document,
                                               rolling_scope, run_chain)

pytestmark = pytest.mark.django_db

BATCH = 20  # messages: four generations over 46 pairs, the newest 6 raw


@pytest.fixture
def chain():
    rolling_scope(recent_turns=6, min_new_token_count=0, max_compaction_batch_messages=BATCH)
    conversation = ingest(rolling_document(46))
    generations = run_chain(conversation, provider=ScriptedHandoffModel())
    return conversation, generations


def _pure(generations):
    """What the pure checkers say of each generation, from the stored
    conversation's pairs read straight from the document's texts."""
    from tests.compaction.bindings.rolling import answer_text, user_text

    materials = [Material(pairs=tuple(
        MaterialPair(i, g.message_ids[2 * (i - g.from_pair)], user_text(i), g.message_ids[2 * (i - g.from_pair) + 1],
                     answer_text(i)) for i in range(g.from_pair, g.to_pair + 1))) for g in generations]
    out = []
    for k, (g, m) in enumerate(zip(generations, materials)):
        parent = generations[k - 1].text if k else None
        out.append(c.check_note(g.text, parent=parent, material=m, chain=c.ChainHistory.from_materials(materials[:k + 1])))
    return out


def _stored(generation):
    return [(f.kind, f.code, f.section, f.line, tuple(f.message_ids), f.detail, f.subject)
            for f in DriftFinding.objects.filter(generation=generation).order_by("position")]


def test_every_generation_gets_its_report_when_written_equal_to_the_pure_checks(chain):
    conversation, generations = chain
    assert len(generations) == 4
    for generation, pure in zip(generations, _pure(generations)):
        report = DriftReport.objects.get(generation=generation)
        assert report.finding_count == len(pure) == len(_stored(generation))
        assert [(f.kind, f.code, f.section, f.line, f.message_ids, f.detail, f.subject) for f in pure] == \
            _stored(generation)
    # The scripted notes quote "keep it under 60 EUR", which no user said: the finding names the line.
    codes = {f.code for f in DriftFinding.objects.filter(generation=generations[0])}
    assert DriftCode.QUOTE_NOT_VERBATIM in codes


def test_the_finding_names_the_messages_that_prove_it_by_their_ids(chain):
    conversation, generations = chain
    ids = {m for g in generations for m in g.message_ids}
    for finding in DriftFinding.objects.filter(generation__in=generations):
        assert set(finding.message_ids) <= ids | {m for m in _all_message_ids(conversation)}


def _all_message_ids(conversation):
    from conversations.models import Message

    return Message.objects.filter(conversation=conversation).values_list("external_id", flat=True)


def test_the_report_never_changes_the_generation(chain):
    conversation, generations = chain
    for generation in generations:
        again = SummaryGeneration.objects.get(pk=generation.pk)
        assert again.text == generation.text and again.text_bytes == len(generation.text.encode())


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_report_that_cannot_be_written_takes_the_generation_with_it(monkeypatch):
    """Report and generation share one transaction: when writing the report
    fails, no generation is written either (the attempt ends recorded)."""
    rolling_scope(recent_turns=6, min_new_token_count=0, max_compaction_batch_messages=BATCH)
    conversation = ingest(rolling_document(20))

    def refuse(**kwargs):
        DriftReport.objects.create(generation_id=kwargs["generation_id"])  # written first, then rolled back
        raise RuntimeError("the report could not be written")

    monkeypatch.setattr(services, "drift_report_record", refuse)
    run_chain(conversation, provider=ScriptedHandoffModel(), limit=1)
    job = handoff_jobs(conversation).first()
    assert job is not None and job.attempts_used == 1  # the attempt ran and its end was recorded
    assert job.state != JobState.SUCCEEDED
    assert not SummaryGeneration.objects.filter(conversation=conversation).exists()
    assert not DriftReport.objects.exists()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_report_and_generation_are_written_together_outside_any_test_transaction():
    rolling_scope(recent_turns=6, min_new_token_count=0, max_compaction_batch_messages=BATCH)
    conversation = ingest(rolling_document(26))
    generations = run_chain(conversation, provider=ScriptedHandoffModel())
    assert generations
    assert set(DriftReport.objects.values_list("generation_id", flat=True)) == {g.pk for g in generations}


def test_a_checker_fault_never_costs_the_note(chain, monkeypatch):
    conversation, generations = chain
    rolling_document_more = rolling_document(12, start=46)
    ingest(rolling_document_more)

    def broken(inputs):
        raise ValueError("a checker bug")

    monkeypatch.setattr(services, "drift_compute", broken)
    more = run_chain(conversation, provider=ScriptedHandoffModel())
    assert len(more) > len(generations)
    assert not DriftReport.objects.filter(generation=more[-1]).exists()


def test_check_drift_fills_missing_reports_and_is_idempotent(chain):
    conversation, generations = chain
    before = {g.pk: _stored(g) for g in generations}
    ids_before = set(DriftFinding.objects.values_list("pk", flat=True))
    DriftFinding.objects.filter(generation=generations[1]).delete()
    DriftReport.objects.filter(generation=generations[1]).delete()
    call_command("check_drift", stdout=_Out())
    assert {g.pk: _stored(g) for g in generations} == before
    # The findings that still stood kept their rows.
    assert {f for f in DriftFinding.objects.filter(generation__in=[generations[0], generations[2]])
            .values_list("pk", flat=True)} <= ids_before
    ids = set(DriftFinding.objects.values_list("pk", flat=True))
    out = _Out()
    call_command("check_drift", "--conversation", conversation.external_id, stdout=out)
    assert set(DriftFinding.objects.values_list("pk", flat=True)) == ids
    assert "CHANGED" not in out.text and "checked 4 generation(s)" in out.text


def test_check_drift_replaces_a_stale_report_and_keeps_citations_of_findings_that_stand(chain, django_user_model):
    from compaction.models import Review

    conversation, generations = chain
    g = generations[0]
    standing = DriftFinding.objects.filter(generation=g).first()
    user = django_user_model.objects.create(username="reviewer")
    review = Review.objects.create(job=g.job, generation=g, reviewer=user, verdict="needs_work", note="see finding")
    standing.reviews.add(review)
    bogus = DriftFinding.objects.create(generation=g, position=99, kind="lost", code="lost_constraint",
                                        section="requests", line=1, message_ids=["x"], detail="not a finding")
    call_command("check_drift", "--conversation", str(conversation.pk), stdout=_Out())
    assert not DriftFinding.objects.filter(pk=bogus.pk).exists()
    assert list(DriftFinding.objects.get(pk=standing.pk).reviews.all()) == [review]
    assert DriftReport.objects.get(generation=g).finding_count == DriftFinding.objects.filter(generation=g).count()


def test_check_drift_names_an_unknown_conversation():
    with pytest.raises(CommandError, match="no single conversation"):
        call_command("check_drift", "--conversation", "nope", stdout=_Out())


def test_the_model_codes_are_the_checkers_codes():
    from compaction.models import DriftKind

    assert [code.value for code in DriftCode] == list(c.CODES)
    assert {kind.value for kind in DriftKind} == set(c.CODES.values())


class _Out:
    def __init__(self):
        self.text = ""

    def write(self, value):
        self.text += value

    def flush(self):
        pass


def test_check_drift_leaves_a_stale_generations_report_as_it_was_written(chain):
    from tests.compaction.bindings.rolling import edit_message

    conversation, generations = chain
    before = {g.pk: _stored(g) for g in generations}
    edit_message(conversation, "u-15", "Request 15: corrected, and I never said anything about blue.")
    out = _Out()
    call_command("check_drift", "--conversation", str(conversation.pk), stdout=out)
    # Generation 2 holds pair 15: it and every later one are stale, their reports untouched.
    assert {g.pk: _stored(g) for g in generations} == before
    assert out.text.count("STALE") == 3 and "checked 1 generation(s)" in out.text


def test_the_general_finish_writes_the_report_with_the_generation_too(monkeypatch):
    """The finish used without PostgreSQL's one-statement path (SQLite, or
    when that statement moved nothing) writes the report in its own
    transaction as well."""
    from compaction.engine import finish

    monkeypatch.setattr(finish, "_finish_success_pg", lambda **kwargs: None)
    rolling_scope(recent_turns=6, min_new_token_count=0, max_compaction_batch_messages=BATCH)
    conversation = ingest(rolling_document(26))
    generations = run_chain(conversation, provider=ScriptedHandoffModel())
    assert len(generations) == 2
    for g, pure in zip(generations, _pure(generations)):
        assert DriftReport.objects.get(generation=g).finding_count == len(pure) == DriftFinding.objects.filter(
            generation=g).count()


def test_the_repair_conversation_through_the_engine_and_the_offline_builder_has_no_findings():
    """Seed 001's regression conversation (126 turns, tool calls included),
    ingested and compacted as the demo does: every generation's report is
    written, and the offline builder's notes give none — the stored chain
    read back from the database (tool results and all) agrees with the
    pure regression (``test_builder_regression``)."""
    from conversations.demo import ROLLING_POLICIES, repair_handoff
    from conversations.demo.builder import build

    document = build(repair_handoff.conversation()).document
    rolling_scope(scope=document["scope"], **ROLLING_POLICIES["device-repair"])
    conversation = ingest(document)
    generations = run_chain(conversation)  # the configured provider: handoff-extractive-v1
    assert len(generations) == 9, [(g.from_pair, g.to_pair) for g in generations]  # as in seed 001's regression
    assert DriftReport.objects.filter(generation__in=generations).count() == len(generations)
    assert list(DriftFinding.objects.filter(generation__in=generations).values_list("code", flat=True)) == []
