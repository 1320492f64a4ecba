"""The review desk in a real browser (issue 16 item 7): a support user
works through a queue with the keyboard alone; two reviewers in two
browser contexts never get the same item; a verdict on a summary that is
then replaced shows as unreviewed again."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from compaction.bindings.segments import conversation_plan
from compaction.extraction import summarise
from compaction.models import Review, ReviewClaim
from conversations.documents import validate_document
from conversations.models import Pair
from conversations.services.ingest import conversation_ingest
from tests.browser.conftest import sign_in
from tests.compaction.desk.conftest import make_succeeded
from tests.compaction.desk.test_verdicts import replace_summary
from tests.factories import make_user, pair_messages

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def answer(i: int) -> str:
    return (f"Sure, let me check. The refund of {i}.50 EUR for order 8823{i} was issued on 2026-10-{(i % 28) + 1:02d}. "
            f"Thanks for waiting! It should reach your card within 5 working days, not 10. "
            f"Is there anything else I can help with?")


def five_summaries():
    """One conversation of 70 pairs: five planned segments, each summarised
    by the real extractive summariser, oldest first."""
    runs, messages = [], []
    for i in range(70):
        run, msgs = pair_messages(i, user_text=f"Where is the refund for order 8823{i}?", assistant_text=answer(i))
        runs.append(run)
        messages += msgs
    doc = {"scope": "default", "id": "refunds-42", "title": "Refunds, customer 42", "metadata": {}, "runs": runs,
           "messages": messages}
    conversation = conversation_ingest(document=validate_document(doc), actor="tests").conversation
    jobs = conversation_plan(conversation=conversation)
    assert len(jobs) == 5
    gens = []
    for n, job in enumerate(jobs, start=1):
        pairs = Pair.objects.filter(conversation=conversation, index__gte=job.from_pair, index__lte=job.to_pair)
        answers = [(p.assistant_message.external_id, p.assistant_message.content)
                   for p in pairs.select_related("assistant_message").order_by("index")]
        gens.append(make_succeeded(job, text=summarise(answers), number=n))
    return gens


def left(page) -> str:
    return page.inner_text("#queue-position")


def test_support_works_through_five_summaries_with_the_keyboard_alone(live_server, page, shot):
    gens = five_summaries()
    make_user("sue", role="support")
    sign_in(page, live_server, "sue")
    page.goto(f"{live_server.url}{reverse('desk-review')}")
    assert page.inner_text("#left-count") == "5"
    shot(page, "review-queue")
    page.keyboard.press("Enter")  # the start button has the focus
    for n, gen in enumerate(gens):
        page.wait_for_url(re.compile(rf"/jobs/{gen.job_id}/\?review=1"))
        assert left(page) == f"1 of {5 - n} left"
        if n == 0:
            page.keyboard.press("?")
            assert page.is_visible("#keys")
            shot(page, "review-mode-shortcuts")
            page.keyboard.press("?")
            assert not page.is_visible("#keys")
            # The whole summary is shown, its labels link to the sources they came from.
            assert page.locator("#summary a.cite").count() >= 1
            assert page.locator("mark.kept").count() >= 1
            shot(page, "review-mode")
        page.keyboard.press("a" if n % 2 == 0 else "w")
        assert page.evaluate("document.activeElement.id") == "id_note"
        page.keyboard.type(f"checked item {n + 1} against its sources")
        page.keyboard.press("Control+Enter")
    page.wait_for_url(re.compile(r"/review/$"))
    assert page.inner_text("#left-count") == "0"
    assert "Nothing left to review" in page.inner_text("main")
    shot(page, "review-queue-done")
    reviews = Review.objects.order_by("created_at")
    assert [r.generation_id for r in reviews] == [g.pk for g in gens]
    assert [r.verdict for r in reviews] == ["approved", "needs_work", "approved", "needs_work", "approved"]
    assert not ReviewClaim.objects.exists()


def test_a_summary_label_scrolls_to_and_highlights_its_source_card(live_server, page, shot):
    gens = five_summaries()
    make_user("sue", role="support")
    sign_in(page, live_server, "sue")
    page.goto(f"{live_server.url}{reverse('desk-job', args=[gens[1].job_id])}")
    cite = page.locator("#summary a.cite").first
    target = cite.get_attribute("href").lstrip("#")
    cite.click()
    assert page.evaluate("document.querySelector(':target').id") == target
    outline = page.evaluate(f"getComputedStyle(document.getElementById('{target}')).outlineStyle")
    assert outline == "solid"
    # The summary box shows all of its text: nothing clipped.
    clipped = page.evaluate("(() => { const t = document.querySelector('#summary .summary-text');"
                            " return t.scrollHeight > t.clientHeight + 1; })()")
    assert clipped is False
    shot(page, "segment-cite-highlight")


def test_two_reviewers_in_two_browsers_never_get_the_same_item(live_server, browser, shot):
    five_summaries()
    make_user("sue", role="support")
    make_user("rita", role="support")
    pages = []
    for name in ("sue", "rita"):
        context = browser.new_context(viewport={"width": 1366, "height": 900})
        p = context.new_page()
        p.set_default_timeout(10_000)
        sign_in(p, live_server, name)
        p.goto(f"{live_server.url}{reverse('desk-review')}")
        pages.append(p)
    sue, rita = pages
    sue.click("#start-review")
    rita.click("#start-review")
    sue.wait_for_url(re.compile(r"/jobs/\d+/\?review=1"))
    rita.wait_for_url(re.compile(r"/jobs/\d+/\?review=1"))
    assert sue.url != rita.url
    held_by_sue = sue.url
    seen = set()
    for _ in range(6):  # Rita skips round the whole queue: never Sue's item
        seen.add(rita.url)
        assert rita.url != held_by_sue
        with rita.expect_navigation():
            rita.keyboard.press("n")
    assert len(seen) == 4
    rita.goto(held_by_sue)
    assert "sue is reviewing this one" in rita.inner_text("#reviewbar")
    shot(rita, "review-held-by-another")
    # Sue leaves: her claim goes with the page, and Rita may have it.
    sue.goto(f"{live_server.url}/")
    sue.wait_for_load_state()
    for _ in range(50):
        if not ReviewClaim.objects.filter(reviewer__username="sue").exists():
            break
        sue.wait_for_timeout(100)
    assert not ReviewClaim.objects.filter(reviewer__username="sue").exists()
    for p in pages:
        p.context.close()


def test_a_verdict_on_a_summary_that_is_then_replaced_shows_as_unreviewed_again(live_server, page, shot):
    gens = five_summaries()
    make_user("sue", role="support")
    sign_in(page, live_server, "sue")
    old_job = gens[0].job
    page.goto(f"{live_server.url}{reverse('desk-job', args=[old_job.pk])}")
    page.check("input[name=verdict][value=approved]")
    page.fill("#id_note", "faithful to the ten answers")
    page.click("button:has-text('Record verdict')")
    page.wait_for_selector("#review >> text=Verdict recorded.")
    assert "Current verdict" in page.inner_text("#review")
    newer = replace_summary(old_job)
    page.goto(f"{live_server.url}{reverse('desk-job', args=[newer.pk])}")
    review = page.inner_text("#review")
    assert "Not reviewed yet" in review and "faithful to the ten answers" in review and "no longer stands" in review
    shot(page, "segment-replaced-unreviewed")
    page.goto(f"{live_server.url}{reverse('desk-job', args=[old_job.pk])}")
    assert "Not reviewed yet" in page.inner_text("#review")
    assert "the summary was replaced" in page.inner_text("#review")
    page.goto(f"{live_server.url}{reverse('desk-conversation', args=[old_job.conversation_id])}")
    assert "unreviewed again" in page.inner_text("main")
    page.goto(f"{live_server.url}{reverse('desk-review')}")
    assert page.inner_text("#left-count") == "5"  # the replacement awaits its verdict


def test_a_verdict_whose_source_then_changes_shows_unreviewed_with_a_word_diff(live_server, page, shot):
    gens = five_summaries()
    sue = make_user("sue", role="support")
    from compaction.actions import do_review_record
    from tests.compaction.bindings.rolling import edit_message

    job = gens[0].job
    do_review_record(job=job, reviewer=sue, verdict="approved", note="matched the answers")
    edit_message(job.conversation, "a-3", answer(3).replace("within 5 working days, not 10", "within 10 working days"))
    sign_in(page, live_server, "sue")
    page.goto(f"{live_server.url}{reverse('desk-job', args=[job.pk])}")
    review = page.inner_text("#review")
    assert "Not reviewed yet" in review and "its source changed after it" in review
    assert page.locator("p.worddiff del.w-del").count() >= 1 and page.locator("p.worddiff ins.w-add").count() >= 1
    shot(page, "segment-source-changed-word-diff")
