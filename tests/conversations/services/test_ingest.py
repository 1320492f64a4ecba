"""SPEC §3: ingest is an idempotent upsert, validated whole, written in one transaction."""

import json

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as examples
from hypothesis import strategies as st
from django.db import connection  # noqa: F401  (read by skipif conditions)

from compaction.digest import digest_input, source_digest
from conversations.documents import DocumentInvalid, parse_document_bytes, validate_document
from conversations.models import Conversation, Message, MessageRevision, Pair, Run, Segment
from conversations.services.ingest import conversation_ingest
from tests.factories import conversation_document, pair_messages, ts

pytestmark = pytest.mark.django_db


def ingest(doc, actor="tests"):
    return conversation_ingest(document=validate_document(doc), actor=actor)


def test_new_document_creates_conversation_runs_messages_pairs_and_segments():
    result = ingest(conversation_document(31))
    conv = result.conversation
    assert result.created and result.changed
    assert Run.objects.filter(conversation=conv).count() == 31
    assert Message.objects.filter(conversation=conv).count() == 62
    assert result.pair_count == 31 == Pair.objects.filter(conversation=conv).count()
    assert [(s.from_pair, s.to_pair) for s in result.segments] == [(0, 9)]


def test_resending_the_same_document_changes_nothing():
    doc = conversation_document(35)
    ingest(doc)
    before = list(Message.objects.order_by("pk").values_list("pk", "content", "updated_at"))
    result = ingest(doc)
    assert not result.created and not result.changed
    assert list(Message.objects.order_by("pk").values_list("pk", "content", "updated_at")) == before
    assert MessageRevision.objects.count() == 0


def test_messages_and_runs_not_mentioned_are_kept():
    ingest(conversation_document(3))
    run, messages = pair_messages(3)
    ingest({"scope": "default", "id": "conv-1", "runs": [run], "messages": messages})
    conv = Conversation.objects.get()
    assert conv.message_count == 8 and Message.objects.filter(conversation=conv).count() == 8
    assert conv.pair_count == 4


def test_changed_content_keeps_the_earlier_content_as_a_revision():
    doc = conversation_document(30)
    ingest(doc)
    doc["messages"][5]["content"] = "Answer 2, corrected: the fee was 2.20 EUR."
    result = ingest(doc, actor="alice")
    assert result.changed and result.revisions_created == 1
    revision = MessageRevision.objects.get()
    assert revision.message.external_id == "a-2"
    assert revision.content.startswith("Answer 2: the fee was 2.02")
    assert revision.replaced_by == "alice" and revision.number == 1
    assert Message.objects.get(external_id="a-2").content.startswith("Answer 2, corrected")


def test_segment_digest_follows_an_edit_in_the_same_ingest():
    doc = conversation_document(30)
    ingest(doc)
    old = Segment.objects.get().digest
    doc["messages"][4]["content"] = "Question 2, reworded"
    ingest(doc)
    segment = Segment.objects.get()
    pairs = Pair.objects.filter(conversation=segment.conversation, index__lte=9).select_related(
        "user_message", "assistant_message").order_by("index")
    expected = source_digest(
        digest_input(p.index, p.user_message.external_id, p.user_message.content,
                     p.assistant_message.external_id, p.assistant_message.content) for p in pairs)
    assert segment.digest == expected != old
    assert len(segment.message_ids) == 20 and segment.message_ids[:2] == ["u-0", "a-0"]


def test_an_edit_after_a_segment_leaves_its_digest_alone():
    doc = conversation_document(31)
    ingest(doc)
    old = Segment.objects.get().digest
    doc["messages"][-1]["content"] = "Answer 30, edited"
    ingest(doc)
    assert Segment.objects.get().digest == old


def test_run_turning_failed_removes_its_pair_and_renumbers():
    doc = conversation_document(32)
    ingest(doc)
    doc["runs"][0]["status"] = "failed"
    result = ingest(doc)
    assert result.pair_count == 31
    first = Pair.objects.select_related("user_message").get(index=0)
    assert first.user_message.external_id == "u-1"


def test_invalid_document_writes_nothing():
    doc = conversation_document(30)
    doc["messages"][3]["role"] = "robot"
    with pytest.raises(DocumentInvalid) as exc:
        ingest(doc)
    assert "messages[3].role" in exc.value.errors
    assert Conversation.objects.count() == 0 and Message.objects.count() == 0


def test_run_id_not_in_the_conversation_is_refused_and_nothing_is_written():
    ingest(conversation_document(2))
    doc = {"scope": "default", "id": "conv-1", "messages": [
        {"id": "x-1", "run_id": "run-nowhere", "role": "user", "content": "hi", "created_at": ts(99)}]}
    with pytest.raises(DocumentInvalid) as exc:
        ingest(doc)
    assert list(exc.value.errors) == ["messages[0].run_id"]
    assert not Message.objects.filter(external_id="x-1").exists()


def test_run_id_may_name_a_run_stored_earlier():
    ingest(conversation_document(2))
    doc = {"scope": "default", "id": "conv-1", "messages": [
        {"id": "x-1", "run_id": "run-1", "role": "tool", "tool_call_id": "c-1", "content": "{}", "created_at": ts(3)}]}
    assert ingest(doc).messages_created == 1


def test_role_of_a_stored_message_cannot_change():
    doc = conversation_document(2)
    ingest(doc)
    doc["messages"][0]["role"] = "system"
    with pytest.raises(DocumentInvalid) as exc:
        ingest(doc)
    assert "messages[0].role" in exc.value.errors


def test_same_external_id_in_two_scopes_are_two_conversations():
    ingest(conversation_document(2, scope="a"))
    ingest(conversation_document(2, scope="b"))
    assert Conversation.objects.count() == 2


def test_message_without_run_is_kept_but_never_paired():
    doc = conversation_document(2)
    doc["messages"].append({"id": "loose", "role": "user", "content": "orphan", "created_at": ts(1)})
    result = ingest(doc)
    assert Message.objects.get(external_id="loose").run is None
    assert result.pair_count == 2


@pytest.mark.parametrize(
    "mutate, path",
    [
        (lambda d: d.update(scope=7), "scope"),
        (lambda d: d.pop("id"), "id"),
        (lambda d: d["messages"][0].update(role="robot"), "messages[0].role"),
        (lambda d: d["messages"][0].update(status="done"), "messages[0].status"),
        (lambda d: d["runs"][0].update(status="finished"), "runs[0].status"),
        (lambda d: d["messages"][1].update(id="u-0"), "messages[1].id"),
        (lambda d: d["runs"].append(dict(d["runs"][0])), "runs[2].id"),
        (lambda d: d["messages"][0].pop("id"), "messages[0].id"),
        (lambda d: d["messages"][0].update(content=5), "messages[0].content"),
        (lambda d: d["messages"][0].update(content="a\x00b"), "messages[0].content"),
        (lambda d: d["messages"][0].update(created_at="yesterday"), "messages[0].created_at"),
        (lambda d: d["messages"].append({"id": "t", "run_id": "run-0", "role": "tool", "content": "x",
                                         "created_at": ts(1)}), "messages[4].tool_call_id"),
        (lambda d: d.update(messages="nope"), "messages"),
        (lambda d: d["messages"][1].update(tool_calls=[{"name": "x"}]), "messages[1].tool_calls[0].id"),
        (lambda d: d.update(colour="blue"), "colour"),
    ],
)
def test_each_kind_of_bad_field_is_named(mutate, path):
    doc = conversation_document(2)
    mutate(doc)
    with pytest.raises(DocumentInvalid) as exc:
        validate_document(doc)
    assert path in exc.value.errors, exc.value.errors


def test_content_with_a_nul_character_is_refused_and_nothing_is_written():
    # SPEC §3: content must be valid UTF-8 text without NUL characters.
    doc = conversation_document(2)
    doc["messages"][2]["content"] = "fine\x00not fine"
    with pytest.raises(DocumentInvalid) as exc:
        validate_document(doc)
    assert list(exc.value.errors) == ["messages[2].content"]
    assert not Conversation.objects.exists()


def test_content_over_the_size_limit_is_refused(settings):
    settings.INGEST_MAX_CONTENT_BYTES = 10
    doc = conversation_document(1)
    doc["messages"][0]["content"] = "é" * 6  # 12 bytes
    with pytest.raises(DocumentInvalid) as exc:
        validate_document(doc)
    assert "12 bytes" in exc.value.errors["messages[0].content"][0]


def test_document_over_the_size_limit_is_refused(settings):
    settings.INGEST_MAX_DOCUMENT_BYTES = 100
    with pytest.raises(DocumentInvalid) as exc:
        parse_document_bytes(json.dumps(conversation_document(2)).encode())
    assert list(exc.value.errors) == ["document"]


def test_document_over_the_message_count_limit_is_refused(settings):
    settings.INGEST_MAX_MESSAGES = 3
    with pytest.raises(DocumentInvalid) as exc:
        validate_document(conversation_document(2))
    assert "limit is 3" in exc.value.errors["messages"][0]


def test_malformed_json_and_invalid_utf8_are_refused():
    with pytest.raises(DocumentInvalid) as exc:
        parse_document_bytes(b'{"scope": "default",')
    assert "malformed JSON" in exc.value.errors["document"][0]
    with pytest.raises(DocumentInvalid) as exc:
        parse_document_bytes(b'{"scope": "d\xff"}')
    assert "UTF-8" in exc.value.errors["document"][0]


def test_lone_surrogate_in_content_is_refused():
    doc = conversation_document(1)
    raw = json.dumps(doc).replace("Question 0", "Question \\ud800")
    with pytest.raises(DocumentInvalid) as exc:
        parse_document_bytes(raw.encode())
    assert "messages[0].content" in exc.value.errors


def test_timestamps_without_an_offset_are_read_as_utc():
    doc = conversation_document(1)
    doc["messages"][0]["created_at"] = "2026-11-01T10:00:00"
    assert validate_document(doc).messages[0].created_at.isoformat() == "2026-11-01T10:00:00+00:00"


def _stored(scope):
    """Everything stored for a scope's conversations, without database ids."""
    rows = {}
    for conv in Conversation.objects.filter(scope=scope).order_by("external_id"):
        runs = {r.pk: r.external_id for r in Run.objects.filter(conversation=conv)}
        msgs = {m.pk: m.external_id for m in Message.objects.filter(conversation=conv)}
        rows[conv.external_id] = {
            "conversation": (conv.title, conv.metadata, conv.pair_count, conv.segment_count, conv.message_count,
                             conv.last_activity_at),
            "runs": sorted((r.external_id, r.status, r.created_at) for r in Run.objects.filter(conversation=conv)),
            "messages": sorted(
                (m.external_id, runs.get(m.run_id), m.role, m.content, m.status, json.dumps(m.tool_calls),
                 m.tool_call_id, m.created_at, m.sequence, m.revision_count)
                for m in Message.objects.filter(conversation=conv)
            ),
            "pairs": sorted(
                (p.index, runs[p.run_id], msgs[p.user_message_id], msgs[p.assistant_message_id], p.user_bytes,
                 p.assistant_bytes)
                for p in Pair.objects.filter(conversation=conv)
            ),
            "segments": sorted(
                (s.number, s.from_pair, s.to_pair, s.message_ids, s.digest, s.user_bytes, s.assistant_bytes)
                for s in Segment.objects.filter(conversation=conv)
            ),
        }
    return rows


def _varied_documents(scope):
    long = conversation_document(45, scope=scope, external_id="long", title="Långt ✓")
    long["metadata"] = {"team": "billing", "tags": ["a", "ü"]}
    run, msgs = pair_messages(99, prefix="t-")
    msgs.insert(1, {"id": "t-call", "run_id": run["id"], "role": "assistant", "content": "",
                    "tool_calls": [{"id": "c1", "name": "lookup", "arguments": {"x": 1}}],
                    "status": "completed", "created_at": ts(198.5)})
    msgs.insert(2, {"id": "t-result", "run_id": run["id"], "role": "tool", "tool_call_id": "c1",
                    "content": "{\"fee\": 1}", "created_at": ts(198.6)})
    failed = {"id": "run-failed", "status": "failed", "created_at": ts(300)}
    long["runs"] += [run, failed]
    long["messages"] += msgs + [
        {"id": "loose", "role": "user", "content": "no run", "created_at": ts(301)},
        {"id": "f-u", "run_id": "run-failed", "role": "user", "content": "lost?", "created_at": ts(302)},
    ]
    empty = {"scope": scope, "id": "empty", "runs": [], "messages": []}
    return [long, conversation_document(3, scope=scope, external_id="short"), empty]


@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="the group write is PostgreSQL-only")
def test_writing_new_conversations_as_a_group_stores_what_ingesting_each_one_stores():
    from conversations.services.ingest_new import conversations_ingest_new

    for doc in _varied_documents("one-by-one"):
        ingest(doc)
    results = conversations_ingest_new(documents=[validate_document(d) for d in _varied_documents("group")])
    assert _stored("group") == _stored("one-by-one")
    assert Segment.objects.filter(conversation__scope="group").count() > 0
    for result in results:
        stored = list(Segment.objects.filter(conversation=result.conversation).order_by("from_pair"))
        assert [(s.pk, s.digest) for s in result.segments] == [(s.pk, s.digest) for s in stored]
        assert result.created and result.conversation.pk == Conversation.objects.get(
            scope="group", external_id=result.conversation.external_id).pk
    assert [r.messages_created for r in results] == [len(d["messages"]) for d in _varied_documents("group")]


@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="the group write is PostgreSQL-only")
def test_group_write_of_a_conversation_that_exists_after_all_writes_nothing():
    from django.db import IntegrityError

    from conversations.services.ingest_new import conversations_ingest_new

    ingest(conversation_document(2, external_id="taken"))
    docs = [validate_document(conversation_document(3, external_id="fresh")),
            validate_document(conversation_document(4, external_id="taken"))]
    with pytest.raises(IntegrityError):
        conversations_ingest_new(documents=docs)
    assert not Conversation.objects.filter(external_id="fresh").exists()
    assert Conversation.objects.get(external_id="taken").pair_count == 2


# Characters COPY's text format treats specially (tab, newline, carriage
# return, backslash, "\N" for NULL, "\." for end of data), quotes and text
# beyond the Basic Multilingual Plane.
AWKWARD = 'tab\there\nnew line\r\nback\\slash \\N \\. "quoted" \u2028 ✓ 中文 😀'


def test_text_with_characters_copy_escapes_is_stored_exactly():
    doc = conversation_document(31, external_id=AWKWARD[:40], title=AWKWARD)
    doc["metadata"] = {AWKWARD: [AWKWARD, {"n": None}]}
    doc["messages"][0]["content"] = AWKWARD
    doc["messages"][1]["content"] = AWKWARD + "!"
    doc["messages"][1]["id"] = "a\\N\t0"
    doc["messages"][3]["tool_calls"] = [{"id": "c\\1", "name": "look\tup", "arguments": AWKWARD}]
    ingest(doc)
    conv = Conversation.objects.get(external_id=AWKWARD[:40])
    assert (conv.title, conv.metadata) == (AWKWARD, {AWKWARD: [AWKWARD, {"n": None}]})
    first, second, _, fourth = Message.objects.filter(conversation=conv).order_by("sequence")[:4]
    assert first.content == AWKWARD
    assert (second.external_id, second.content) == ("a\\N\t0", AWKWARD + "!")
    assert fourth.tool_calls == [{"id": "c\\1", "name": "look\tup", "arguments": AWKWARD}]
    segment = Segment.objects.get(conversation=conv, from_pair=0)
    assert segment.message_ids[:2] == ["u-0", "a\\N\t0"]
    pair = Pair.objects.get(conversation=conv, index=0)
    assert pair.user_bytes == len(AWKWARD.encode())


def test_deleting_a_conversation_takes_everything_of_it_and_nothing_else():
    ingest(conversation_document(31, external_id="goes"))
    ingest({**conversation_document(31, external_id="goes"), "messages": [
        {**conversation_document(31)["messages"][0], "content": "edited"}]})
    ingest(conversation_document(31, external_id="stays"))
    Conversation.objects.get(external_id="goes").delete()
    assert not Conversation.objects.filter(external_id="goes").exists()
    for model in (Run, Message, Pair, Segment):
        assert set(model.objects.values_list("conversation__external_id", flat=True)) == {"stays"}
    assert not MessageRevision.objects.exists()
    assert Pair.objects.count() == 31


@pytest.mark.parametrize("value", [1e23, 1e300, 12345678901234567890123, 0.1])
def test_resending_metadata_with_a_number_the_database_rewrites_changes_nothing(value):
    # PostgreSQL's jsonb keeps 1e23 as the integer 100000000000000000000000,
    # which Python reads back as an int unequal to the float 1e23.
    doc = conversation_document(2)
    doc["metadata"] = {"x": value, "nested": [value]}
    ingest(doc)
    updated_at = Conversation.objects.get().updated_at
    result = ingest(doc)
    assert not result.changed
    assert Conversation.objects.get().updated_at == updated_at
    doc["metadata"] = {"x": 2e23, "nested": [value]}
    assert ingest(doc).changed


# --- an ingest in parts, or with edits later, stores what one ingest of the final document stores ---

_EXAMPLE = iter(range(10**6))


def _in_parts(doc, cuts):
    """``doc`` as consecutive documents of whole runs (each run with its
    messages), cut before the runs at ``cuts``; the messages without a run go
    with the last part."""
    by_run = {}
    for m in doc["messages"]:
        by_run.setdefault(m.get("run_id"), []).append(m)
    bounds = [0, *sorted(set(cuts)), len(doc["runs"])]
    parts = []
    for start, end in zip(bounds, bounds[1:]):
        runs = doc["runs"][start:end]
        messages = [m for r in runs for m in by_run.get(r["id"], [])]
        parts.append({**doc, "runs": runs, "messages": messages})
    parts[-1]["messages"] += by_run.get(None, [])
    return parts


def _edited(doc, edits):
    """``doc`` after ``edits``: (what, run or message number) — new content, an
    earlier or later time (so the pairs reorder), a run turned failed or back,
    a message moved to the next run."""
    doc = json.loads(json.dumps(doc))
    messages, runs = doc["messages"], doc["runs"]
    for what, k in edits:
        m, r = messages[k % len(messages)], runs[k % len(runs)]
        if what == "content":
            m["content"] = m["content"] + " (edited)" if m["content"] else "now with words"
        elif what == "time":
            m["created_at"] = ts(-5 + k % 7)
        elif what == "status":
            r["status"] = "failed" if r["status"] == "completed" else "completed"
        elif what == "run" and m.get("run_id"):
            m["run_id"] = runs[(k + 1) % len(runs)]["id"]
    return doc


@examples(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(1, 46), max_size=5),
       edits=st.lists(st.tuples(st.sampled_from(["content", "time", "status", "run"]), st.integers(0, 200)),
                      max_size=6))
def test_ingesting_in_parts_then_editing_stores_what_one_ingest_of_the_final_document_stores(db, cuts, edits):
    n = next(_EXAMPLE)
    (long,) = _in_parts(_varied_documents(f"parts-{n}")[0], [])  # its messages in the order the parts send them
    for part in _in_parts(long, cuts):
        ingest(part)
    final = _edited(long, edits)
    result = ingest(final)
    ingest({**final, "scope": f"whole-{n}"})

    def without_revisions(stored):
        conv = stored["long"]
        return {**conv, "messages": [m[:-1] for m in conv["messages"]]}

    assert without_revisions(_stored(f"parts-{n}")) == without_revisions(_stored(f"whole-{n}"))
    content_edited = {m["id"] for m, before in zip(final["messages"], long["messages"])
                      if (m["content"], m.get("status")) != (before["content"], before.get("status"))}
    assert result.revisions_created == len(content_edited)
    assert set(MessageRevision.objects.filter(message__conversation__scope=f"parts-{n}")
               .values_list("message__external_id", flat=True)) == content_edited
