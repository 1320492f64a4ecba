"""SPEC §6 ``prefer=raw`` (the default) over the database: fidelity is spent
only where the budget forces it, oldest first; the account stays exact."""

import itertools

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compaction.context.formats import omitted_sentence
from compaction.context.projection import conversation_projection
from compaction.tokens import count_tokens
from conversations.models import Pair, Segment
from tests.compaction.context.projection_helpers import (ingest_texts, block_bytes, ingest, ingest_pairs, job_for, summary_for,
                                                        validate_chat_messages)
from tests.factories import conversation_document

pytestmark = pytest.mark.django_db

GENEROUS = 1024 * 1024


def project(conv, budget=GENEROUS, **kwargs):
    return conversation_projection(conversation=conv, budget_bytes=budget, **kwargs)


def forms(body):
    """One letter per ten pairs: S(ummary), R(aw), -(omitted)."""
    by_index = {p["index"]: p["as"] for p in body["pairs"]}
    return "".join({"summary": "S", "raw": "R", "omitted": "-"}[by_index[i]] for i in range(0, len(by_index), 10))


def raw_bytes(conv, lo, hi):
    return sum(p.user_bytes + p.assistant_bytes for p in Pair.objects.filter(conversation=conv, index__range=(lo, hi)))


def summary_block_bytes(conv, from_pair, generation):
    seg = Segment.objects.get(conversation=conv, from_pair=from_pair)
    return seg.user_bytes + generation.text_bytes


@pytest.fixture
def conv():
    """40 pairs: segments 0-9 and 10-19 planned with short usable summaries, 20-39 the raw tail."""
    conv = ingest_pairs(40)
    conv.g0, conv.g10 = summary_for(conv, 0), summary_for(conv, 10)
    return conv


def test_generous_budget_gives_the_whole_history_raw_and_complete(conv):
    body = project(conv)
    assert body["prefer"] == "raw" and body["complete"] is True
    assert [b["kind"] for b in body["blocks"]] == ["raw"] * 40
    assert body["pairs"] == [{"index": i, "as": "raw", "reason": None} for i in range(40)]
    assert body["used"]["bytes"] == raw_bytes(conv, 0, 39) == block_bytes(body)


def test_a_budget_for_all_raw_but_one_segment_summarises_exactly_the_oldest_usable_one(conv):
    budget = raw_bytes(conv, 0, 39) - 1
    body = project(conv, budget)
    assert body["complete"] is True and forms(body) == "SRRR"
    assert body["blocks"][0]["kind"] == "summary" and body["blocks"][0]["generation"] == conv.g0.pk
    assert body["used"]["bytes"] == summary_block_bytes(conv, 0, conv.g0) + raw_bytes(conv, 10, 39)


def test_the_oldest_usable_one_is_next_when_the_oldest_segment_has_no_usable_summary():
    conv = ingest_pairs(40)
    job_for(conv, 0, state="exhausted", attempts=3)
    g10 = summary_for(conv, 10)
    body = project(conv, raw_bytes(conv, 0, 39) - 1)
    assert forms(body) == "RSRR" and body["blocks"][10]["generation"] == g10.pk
    assert {p["reason"] for p in body["pairs"][:10]} == {"exhausted"}
    assert {p["reason"] for p in body["pairs"][10:]} == {None}


def test_a_budget_between_keeps_the_newest_raw_and_summarises_the_oldest(conv):
    budget = summary_block_bytes(conv, 0, conv.g0) + summary_block_bytes(conv, 10, conv.g10) + raw_bytes(conv, 20, 39)
    body = project(conv, budget + 5)
    assert body["complete"] is True and forms(body) == "SSRR"
    # Never a raw segment older than a summarised one.
    body = project(conv, summary_block_bytes(conv, 0, conv.g0) + raw_bytes(conv, 10, 39))
    assert forms(body) == "SRRR"


def test_tighter_still_omits_the_oldest_and_says_over_budget(conv):
    budget = summary_block_bytes(conv, 10, conv.g10) + raw_bytes(conv, 20, 39)
    body = project(conv, budget)
    assert forms(body) == "-SRR" and body["complete"] is False
    assert body["pairs"][:10] == [{"index": i, "as": "omitted", "reason": "over_budget"} for i in range(10)]


def test_a_summary_longer_than_its_raw_pairs_is_never_chosen_under_either_preference():
    conv = ingest_pairs(30)
    summary_for(conv, 0, text="x" * (raw_bytes(conv, 0, 9) + 1))
    for prefer in ("raw", "summary"):
        for budget in (GENEROUS, raw_bytes(conv, 0, 29), raw_bytes(conv, 0, 29) - 1, raw_bytes(conv, 5, 29)):
            body = project(conv, budget, prefer=prefer)
            assert all(b["kind"] == "raw" for b in body["blocks"]), (prefer, budget)
            assert all(p["reason"] is None for p in body["pairs"] if p["as"] == "raw")


def test_a_summary_exactly_as_long_as_its_raw_pairs_is_not_chosen_either():
    conv = ingest_pairs(30)
    seg = Segment.objects.get(conversation=conv, from_pair=0)
    summary_for(conv, 0, text="y" * seg.assistant_bytes)  # user originals + summary == raw
    body = project(conv, raw_bytes(conv, 0, 29) - 1, prefer="summary")
    assert all(b["kind"] == "raw" for b in body["blocks"])


def test_a_summary_cheaper_in_bytes_but_not_in_tokens_is_not_chosen_under_a_token_budget():
    conv = ingest_pairs(30)
    seg = Segment.objects.get(conversation=conv, from_pair=0)
    raw_tokens = sum(count_tokens(p.user_message.content) + count_tokens(p.assistant_message.content)
                     for p in Pair.objects.filter(conversation=conv, index__lt=10)
                     .select_related("user_message", "assistant_message"))
    # Emoji: few bytes saved, many tokens spent.
    user_tokens = sum(count_tokens(p.user_message.content)
                      for p in Pair.objects.filter(conversation=conv, index__lt=10).select_related("user_message"))
    text = "🙂" * max(1, (seg.assistant_bytes - 1) // 4)
    assert count_tokens(text) + user_tokens >= raw_tokens
    summary_for(conv, 0, text=text)
    body = project(conv, GENEROUS, budget_tokens=10_000, prefer="summary")
    assert all(b["kind"] == "raw" for b in body["blocks"])


def test_openai_says_in_one_sentence_how_many_older_pairs_were_left_out():
    doc = conversation_document(40, external_id="long-answers")
    for i in range(40):
        doc["messages"][2 * i + 1]["content"] = f"Answer {i}: the fee stays at 0.45% a year. " * 12
    conv = ingest(doc)
    summary_for(conv, 0)
    summary_for(conv, 10)
    budget = raw_bytes(conv, 20, 39) + 1500  # one summary fits beside the tail, not two
    body = project(conv, budget, format="openai")
    validate_chat_messages(body["messages"])
    omitted = sum(p["as"] == "omitted" for p in body["pairs"])
    system = body["messages"][0]
    assert omitted and system["role"] == "system" and system["content"].endswith("\n\n" + omitted_sentence(omitted))
    assert any(p["as"] == "summary" for p in body["pairs"])
    assert body["used"]["bytes"] == sum(len(m["content"].encode()) for m in body["messages"]) <= budget


def test_openai_without_summaries_tells_the_omission_in_a_system_message_of_its_own():
    conv = ingest_pairs(15)
    budget = raw_bytes(conv, 10, 14) + len(omitted_sentence(15).encode())
    body = project(conv, budget, format="openai", budget_tokens=10_000)
    assert body["messages"][0] == {"role": "system", "content": omitted_sentence(10)}
    assert [m["role"] for m in body["messages"][1:]] == ["user", "assistant"] * 5
    assert body["used"]["bytes"] == sum(len(m["content"].encode()) for m in body["messages"]) <= budget
    assert body["used"]["tokens"] == sum(count_tokens(m["content"]) for m in body["messages"])


def test_nothing_is_said_of_omissions_when_nothing_was_omitted(conv):
    body = project(conv, format="openai")
    assert body["complete"] is True and all(m["role"] != "system" for m in body["messages"])


def test_raw_segments_are_given_without_reading_their_pair_sizes():
    conv = ingest_pairs(300)
    for k in range(28):
        summary_for(conv, k * 10)
    with CaptureQueriesContext(connection) as ctx:
        body = project(conv, raw_bytes(conv, 100, 299))
    assert body["complete"] is True and "S" in forms(body) and forms(body).endswith("R" * 10)
    pair_size_reads = [q for q in ctx.captured_queries if "user_bytes, assistant_bytes FROM" in q["sql"]
                       and "BETWEEN" in q["sql"] and "segment" not in q["sql"]]
    assert pair_size_reads == []


def test_rolling_scopes_keep_their_hand_off_projection_under_either_preference():
    from compaction.models import ScopePolicy

    conv = ingest(conversation_document(12, scope="rolling-scope", external_id="rolling-1"))
    ScopePolicy.objects.create(scope="rolling-scope", policy="rolling")
    for prefer in ("raw", "summary"):
        body = project(conv, prefer=prefer)
        assert body["prefer"] == prefer and body["complete"] is True and len(body["pairs"]) == 12
        assert list(body)[-1] == "pairs"


# --- the properties, over the database -----------------------------------------------

TEXTS = st.text(alphabet=st.sampled_from("ab é中🙂\n"), min_size=1, max_size=90).filter(lambda t: t.strip())
_counter = iter(range(10**9))


@st.composite
def histories(draw):
    n = draw(st.integers(20, 62))
    users = draw(st.lists(TEXTS, min_size=n, max_size=n))
    answers = draw(st.lists(TEXTS, min_size=n, max_size=n))
    kinds = draw(st.lists(st.sampled_from(["short", "short", "long", "failed", "none"]), min_size=5, max_size=5))
    return users, answers, kinds


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(histories(), st.integers(1, 9000), st.sampled_from(["raw", "summary"]))
def test_over_the_database_the_choice_fits_accounts_once_and_under_raw_no_other_choice_does_better(
        history, budget, prefer):
    users, answers, kinds = history
    conv = ingest_texts(users, answers, external_id=f"raw-prop-{next(_counter)}")
    segments = list(Segment.objects.filter(conversation=conv).order_by("from_pair"))
    block = {}  # from_pair -> summary block bytes, where usable
    for seg, kind in zip(segments, kinds):
        if kind in ("short", "long"):
            text = "s" * (3 + seg.from_pair // 10) if kind == "short" else "L" * 800
            summary_for(conv, seg.from_pair, text=text)
            block[seg.from_pair] = seg.user_bytes + len(text.encode())
        elif kind == "failed":
            job_for(conv, seg.from_pair, state="failed", attempts=1)
    body = project(conv, budget, prefer=prefer)

    n = len(users)
    assert block_bytes(body) == body["used"]["bytes"] <= budget
    assert [p["index"] for p in body["pairs"]] == list(range(n))
    omitted = [p["index"] for p in body["pairs"] if p["as"] == "omitted"]
    assert omitted == list(range(len(omitted))) and body["complete"] == (not omitted)
    for b in body["blocks"]:
        if b["kind"] == "summary":
            seg = next(s for s in segments if s.from_pair == b["from_pair"])
            assert block[seg.from_pair] < seg.user_bytes + seg.assistant_bytes  # never dearer than raw
    for p in body["pairs"]:
        seg = next((s for s in segments if s.from_pair <= p["index"] <= s.to_pair), None)
        if p["as"] == "raw":
            failed = seg is not None and kinds[segments.index(seg)] == "failed"
            pending = seg is not None and kinds[segments.index(seg)] == "none"
            assert p["reason"] == ("failed" if failed else "pending" if pending else None)
    if prefer == "summary":
        return

    tail_start = len(segments) * 10
    tail = raw_bytes(conv, tail_start, n - 1)
    if tail > budget:
        assert len(omitted) >= tail_start
        return
    raw = [s.user_bytes + s.assistant_bytes for s in segments]
    cheaper = [s.from_pair in block and block[s.from_pair] < raw[k] for k, s in enumerate(segments)]
    best = None
    for c in range(len(segments) + 1):
        for kept in itertools.product(*[("R", "S") if cheaper[k] else ("R",) for k in range(c, len(segments))]):
            ages = "".join(kept)
            if any(ages[i] == "R" and cheaper[c + i] and "S" in ages[i + 1:] for i in range(len(ages))):
                continue  # spends fidelity on a newer segment before an older one
            cost = tail + sum(block[segments[c + i].from_pair] if f == "S" else raw[c + i] for i, f in enumerate(kept))
            if cost <= budget:
                key = (len(segments) - c, ages.count("R"))
                best = key if best is None or key > best else best
    f = forms(body)[:len(segments)]
    assert (len(segments) - f.count("-"), f.count("R")) == best
