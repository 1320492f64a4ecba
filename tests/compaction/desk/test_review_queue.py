"""The review queue (issue 16 item 2): summaries awaiting a verdict in the
user's scopes, filterable, oldest first, "x of N left"; each item opens the
segment page in review mode; Save & next, Skip and Previous move through
it; two reviewers never hold the same item at once."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from compaction import actions, reviewclaims
from compaction.bindings.segments import conversation_plan
from compaction.desk import review_queue
from compaction.models import ReviewClaim
from tests.compaction.conftest import live_db
from tests.compaction.desk.conftest import ingest, make_succeeded
from tests.compaction.engine.test_claim_concurrency import require_postgres, run_threads
from tests.factories import conversation_document, make_user


def summaries(n_conversations=2, *, scope="default", prefix="rq"):
    """``n_conversations`` conversations of 50 pairs: three summaries each."""
    gens = []
    for c in range(n_conversations):
        conv = ingest(conversation_document(50, scope=scope, external_id=f"{prefix}-{c}"))
        for k, job in enumerate(conversation_plan(conversation=conv)):
            gens.append(make_succeeded(job, text=f"Summary {c}-{k} [a-{10 * k}].", number=k + 1))
    return gens


@pytest.fixture
def queue(db):
    gens = summaries(2)
    return {"gens": gens, "sue": make_user("sue", role="support"), "rita": make_user("rita", role="support"),
            "olga": make_user("olga", role="operator", scopes=("default", "other"))}


def ids(qs):
    return [g.pk for g in qs]


def test_the_queue_holds_unreviewed_current_summaries_oldest_first(queue):
    gens = queue["gens"]
    awaiting = review_queue.review_awaiting(user=queue["sue"]).order_by("created_at", "generation_id")
    assert ids(awaiting) == [g.pk for g in gens]
    actions.do_review_record(job=gens[0].job, reviewer=queue["sue"], verdict="approved", note="good")
    assert gens[0].pk not in ids(review_queue.review_awaiting(user=queue["sue"]))
    standing = review_queue.review_left(user=queue["sue"], filters={}, current=gens[2])
    assert standing.left == 5 and standing.position == 2 and not standing.capped


def test_the_queue_shows_only_the_users_scopes(queue):
    other = summaries(1, scope="other", prefix="other")
    sue = ids(review_queue.review_awaiting(user=queue["sue"]))
    olga = ids(review_queue.review_awaiting(user=queue["olga"]))
    assert not set(sue) & {g.pk for g in other}
    assert {g.pk for g in other} <= set(olga)


def test_filters_narrow_the_queue(queue, monkeypatch):
    gens = queue["gens"]
    sue = queue["sue"]
    assert ids(review_queue.review_awaiting(user=sue, conversation="rq-1")) == [g.pk for g in gens[3:]]
    assert ids(review_queue.review_awaiting(user=sue, scope="nope")) == []
    assert len(ids(review_queue.review_awaiting(user=sue, prompt_version=gens[0].prompt_version.name))) == 6
    assert ids(review_queue.review_awaiting(user=sue, model="no-such-model")) == []
    assert ids(review_queue.review_awaiting(user=sue, older_than="1d")) == []
    # Generations are immutable (their times too): move the clock instead.
    later = timezone.now() + timedelta(days=2)
    monkeypatch.setattr(review_queue.timezone, "now", lambda: later)
    assert len(ids(review_queue.review_awaiting(user=sue, older_than="1d"))) == 6


def test_a_replaced_or_source_changed_summary_leaves_the_queue_and_its_replacement_enters(queue):
    from tests.compaction.desk.test_verdicts import edit_source, replace_summary

    gens = queue["gens"]
    newer = replace_summary(gens[0].job)
    awaiting = ids(review_queue.review_awaiting(user=queue["sue"]))
    assert gens[0].pk not in awaiting and newer.generation.pk in awaiting
    edit_source(gens[3].conversation, pair=12)  # pair 12 is in the second segment
    assert gens[4].pk not in ids(review_queue.review_awaiting(user=queue["sue"]))


def test_queue_page_counts_what_is_left_and_starts_with_the_oldest(queue, as_user):
    client = as_user(queue["sue"])
    page = client.get(reverse("desk-review"))
    html = page.content.decode()
    assert page.status_code == 200 and '<strong id="left-count">6</strong> left' in html
    response = client.post(reverse("desk-review-next"), {})
    first = queue["gens"][0]
    assert response.status_code == 302 and response["Location"] == f"/jobs/{first.job_id}/?review=1"
    assert ReviewClaim.objects.get(generation=first).reviewer == queue["sue"]


def test_review_mode_shows_position_keys_and_save_and_next(queue, as_user):
    client = as_user(queue["sue"])
    first = queue["gens"][0]
    html = client.get(f"/jobs/{first.job_id}/?review=1").content.decode()
    assert "1 of 6 left" in html and "Save &amp; next" in html and "Skip" in html and "Previous" in html
    assert "Keyboard shortcuts" in html and "desk/review.js" in html
    assert "<script>" not in html.split("</head>")[1]  # no inline script


def test_save_and_next_records_the_verdict_and_opens_the_next_summary(queue, as_user):
    client = as_user(queue["sue"])
    gens = queue["gens"]
    client.post(reverse("desk-review-next"), {"conversation": "rq-1"})
    claim = ReviewClaim.objects.get(generation=gens[3])
    response = client.post(reverse("desk-job-review", args=[gens[3].job_id]),
                           {"verdict": "approved", "note": "faithful", "review": "1", "conversation": "rq-1",
                            "token": claim.token})
    assert response.status_code == 302
    assert response["Location"] == f"/jobs/{gens[4].job_id}/?review=1&conversation=rq-1"
    assert gens[3].reviews.get().note == "faithful"
    assert list(ReviewClaim.objects.values_list("generation_id", flat=True)) == [gens[4].pk]


def test_save_and_next_without_a_note_stays_on_the_item_and_says_why(queue, as_user):
    client = as_user(queue["sue"])
    gens = queue["gens"]
    client.post(reverse("desk-review-next"), {})
    response = client.post(reverse("desk-job-review", args=[gens[0].job_id]),
                           {"verdict": "approved", "note": "  ", "review": "1"})
    assert response.status_code == 400 and "Give a note" in response.content.decode()
    assert "Save &amp; next" in response.content.decode()


def test_skip_and_previous_move_through_the_queue_and_release_the_item_left(queue, as_user):
    client = as_user(queue["sue"])
    gens = queue["gens"]
    client.post(reverse("desk-review-next"), {})
    token = ReviewClaim.objects.get(generation=gens[0]).token
    response = client.post(reverse("desk-review-next"), {"from": gens[0].pk, "token": token, "direction": "next"})
    assert response["Location"] == f"/jobs/{gens[1].job_id}/?review=1"
    assert list(ReviewClaim.objects.values_list("generation_id", flat=True)) == [gens[1].pk]
    token = ReviewClaim.objects.get(generation=gens[1]).token
    response = client.post(reverse("desk-review-next"), {"from": gens[1].pk, "token": token, "direction": "prev"})
    assert response["Location"] == f"/jobs/{gens[0].job_id}/?review=1"


def test_skip_past_the_end_wraps_round_to_the_skipped_items(queue, as_user):
    client = as_user(queue["sue"])
    last = queue["gens"][-1]
    response = client.post(reverse("desk-review-next"), {"from": last.pk, "direction": "next"})
    assert response["Location"] == f"/jobs/{queue['gens'][0].job_id}/?review=1"


def test_two_reviewers_are_given_different_items(queue, as_user, client):
    from django.test import Client

    sue, rita = Client(), Client()
    sue.force_login(queue["sue"])
    rita.force_login(queue["rita"])
    first = sue.post(reverse("desk-review-next"), {})["Location"]
    second = rita.post(reverse("desk-review-next"), {})["Location"]
    assert first != second
    # Rita opening Sue's item directly sees who holds it and holds nothing.
    html = rita.get(first).content.decode()
    assert "sue is reviewing this one" in html
    assert ReviewClaim.objects.filter(reviewer=queue["rita"]).count() == 1


def test_a_claim_expires_and_can_then_be_taken(queue, settings):
    gen = queue["gens"][0]
    now = timezone.now()
    assert reviewclaims.review_claim_take(generation_id=gen.pk, reviewer=queue["sue"], now=now)
    assert reviewclaims.review_claim_take(generation_id=gen.pk, reviewer=queue["rita"], now=now) is None
    later = now + timedelta(seconds=reviewclaims.claim_seconds() + 1)
    taken = reviewclaims.review_claim_take(generation_id=gen.pk, reviewer=queue["rita"], now=later)
    assert taken is not None and ReviewClaim.objects.get(generation=gen).reviewer == queue["rita"]


def test_release_gives_up_only_the_pages_own_claim(queue, as_user):
    gen = queue["gens"][0]
    claim = reviewclaims.review_claim_take(generation_id=gen.pk, reviewer=queue["sue"])
    client = as_user(queue["sue"])
    assert client.post(reverse("desk-review-release"), {"generation": gen.pk, "token": "stale"}).status_code == 204
    assert ReviewClaim.objects.filter(generation=gen).exists()
    client.post(reverse("desk-review-release"), {"generation": gen.pk, "token": claim.token})
    assert not ReviewClaim.objects.filter(generation=gen).exists()


def test_renew_keeps_the_claim_and_retakes_one_released_behind_the_page(queue, as_user):
    gen = queue["gens"][0]
    claim = reviewclaims.review_claim_take(generation_id=gen.pk, reviewer=queue["sue"])
    client = as_user(queue["sue"])
    html = client.post(reverse("desk-review-renew"), {"generation": gen.pk, "token": claim.token}).content.decode()
    assert "held for you" in html and claim.token in html
    reviewclaims.review_claim_release(generation_id=gen.pk, reviewer=queue["sue"])
    html = client.post(reverse("desk-review-renew"), {"generation": gen.pk, "token": claim.token}).content.decode()
    assert "held for you" in html and ReviewClaim.objects.get(generation=gen).token != claim.token


def test_the_queue_is_for_reviewers_only(queue, as_user):
    integrator = make_user("ivan", role="integrator")
    assert as_user(integrator).get(reverse("desk-review")).status_code == 403


def test_a_rolling_note_is_reviewable_too(queue, as_user):
    from tests.compaction.bindings.rolling import ScriptedHandoffModel, rolling_document, rolling_scope, run_chain
    from tests.compaction.bindings.rolling import ingest as rolling_ingest

    rolling_scope("default", recent_turns=6, min_new_token_count=0, max_compaction_batch_messages=20)
    conversation = rolling_ingest(rolling_document(30, scope="default", external_id="chain-q"))
    notes = run_chain(conversation, provider=ScriptedHandoffModel())
    assert notes
    awaiting = ids(review_queue.review_awaiting(user=queue["sue"], conversation="chain-q"))
    assert awaiting == [g.pk for g in notes]
    client = as_user(queue["sue"])
    location = client.post(reverse("desk-review-next"), {"conversation": "chain-q"})["Location"]
    assert location == f"/jobs/{notes[0].job_id}/?review=1&conversation=chain-q"
    client.post(reverse("desk-job-review", args=[notes[0].job_id]),
                {"verdict": "needs_work", "note": "lost a condition", "review": "1", "conversation": "chain-q"})
    assert notes[0].reviews.get().verdict == "needs_work"


def test_the_queue_filters_notes_by_drift_found_and_by_code(queue, as_user):
    from compaction.models import DriftFinding
    from tests.compaction.bindings.rolling import ScriptedHandoffModel, rolling_document, rolling_scope, run_chain
    from tests.compaction.bindings.rolling import ingest as rolling_ingest

    rolling_scope("default", recent_turns=6, min_new_token_count=0, max_compaction_batch_messages=20)
    notes = run_chain(rolling_ingest(rolling_document(30, scope="default", external_id="chain-d")),
                      provider=ScriptedHandoffModel())
    DriftFinding.objects.filter(generation=notes[0]).delete()  # one clean note beside the flagged ones
    flagged = {f.generation_id for f in DriftFinding.objects.filter(generation__in=notes)}
    assert flagged and notes[0].pk not in flagged
    sue = queue["sue"]
    assert set(ids(review_queue.review_awaiting(user=sue, drift="found"))) == flagged
    code = DriftFinding.objects.filter(generation__in=notes).values_list("code", flat=True).first()
    with_code = {f.generation_id for f in DriftFinding.objects.filter(generation__in=notes, code=code)}
    assert set(ids(review_queue.review_awaiting(user=sue, drift=code))) == with_code
    # Segment summaries have no drift checks: "drift found" leaves them out.
    assert not set(ids(review_queue.review_awaiting(user=sue, drift="found"))) & {g.pk for g in queue["gens"]}
    html = as_user(sue).get(reverse("desk-review"), {"drift": "found"}).content.decode()
    assert all(f"job #{g.job_id} · gen {g.number}" in html for g in notes if g.pk in flagged)
    assert f"job #{notes[0].job_id} · gen {notes[0].number}" not in html


@live_db
def test_reviewers_racing_for_one_summary_claim_it_once():
    require_postgres()
    gens = summaries(1, prefix="race")
    users = [make_user(f"r{i}", role="support") for i in range(6)]
    for gen in gens:
        results = run_threads(6, lambda i, gen=gen: reviewclaims.review_claim_take(generation_id=gen.pk,
                                                                                     reviewer=users[i]))
        assert sum(1 for r in results if r is not None) == 1
        assert ReviewClaim.objects.filter(generation=gen).count() == 1


@live_db
def test_reviewers_starting_the_queue_at_once_never_get_the_same_item():
    require_postgres()
    from django.test import Client

    summaries(2, prefix="race2")
    users = [make_user(f"q{i}", role="support") for i in range(4)]

    def start(i):
        client = Client()
        client.force_login(users[i])
        return client.post(reverse("desk-review-next"), {})["Location"]

    locations = run_threads(4, start)
    assert len(set(locations)) == 4
    assert ReviewClaim.objects.count() == 4


def test_the_database_keeps_the_queue_index_for_every_write_path(queue):
    """``ReviewAwaiting`` is kept by triggers: a generation inserted by any
    path adds its row, any review of it removes the row."""
    from compaction.models import Review, ReviewAwaiting

    gens = queue["gens"]
    assert set(ReviewAwaiting.objects.values_list("generation_id", flat=True)) == {g.pk for g in gens}
    row = ReviewAwaiting.objects.get(generation=gens[0])
    assert row.scope == gens[0].scope and row.created_at == gens[0].created_at
    Review.objects.create(job=gens[1].job, generation=gens[1], reviewer=queue["sue"], verdict="approved", note="x")
    Review.objects.create(job=gens[2].job, generation=None, reviewer=queue["sue"], verdict="approved", note="x")
    assert not ReviewAwaiting.objects.filter(generation=gens[1]).exists()
    assert ReviewAwaiting.objects.filter(generation=gens[2]).exists()
