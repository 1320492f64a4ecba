"""seed_demo (SPEC §8): the demo conversations exercise every rule of SPEC §3–§4,
load through the real ingest path, idempotently, with the demo users.

The demo is loaded once per module inside a transaction that is rolled back
at the end; each test runs in its own savepoint on top of it, so tests that
write (a second run, the edit) leave nothing behind.
"""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import transaction
from rest_framework.authtoken.models import Token

from compaction.models import CompactionJob, JobState
from compaction.bindings.segments import conversation_plan
from conversations.demo import demo_conversations
from conversations.models import Conversation, Message, MessageRevision, Pair, Run, ScopeGrant, Segment

DEMO_USERNAMES = {"admin", "operator", "support", "integrator"}


def seed(*args: str) -> str:
    out = StringIO()
    call_command("seed_demo", *args, stdout=out)
    return out.getvalue()


@pytest.fixture(scope="module")
def seeded(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        with transaction.atomic():
            output = seed("--allow-demo-users")
            yield output
            transaction.set_rollback(True)


@pytest.fixture
def demo(seeded, db):
    return seeded


def snapshot():
    return (
        list(Conversation.objects.order_by("pk").values_list("pk", "title", "metadata", "pair_count", "updated_at")),
        list(Run.objects.order_by("pk").values_list("pk", "status", "created_at")),
        list(Message.objects.order_by("pk").values_list("pk", "content", "status", "tool_calls", "updated_at")),
        list(Pair.objects.order_by("pk").values_list("pk", "index", "user_message_id", "assistant_message_id")),
        list(Segment.objects.order_by("pk").values_list("pk", "digest", "updated_at")),
        MessageRevision.objects.count(),
        list(User.objects.order_by("pk").values_list("pk", "password", "is_staff")),
        list(ScopeGrant.objects.order_by("pk").values_list("pk", "user_id", "scope")),
        list(Token.objects.order_by("key").values_list("key", "user_id")),
    )


def test_seven_conversations_each_with_40_to_130_pairs_and_one_over_100(demo):
    counts = dict(Conversation.objects.values_list("external_id", "pair_count"))
    assert len(counts) == 7
    assert all(40 <= n <= 130 for n in counts.values()), counts
    assert max(counts.values()) >= 100
    for conv in Conversation.objects.all():
        assert conv.pair_count == Pair.objects.filter(conversation=conv).count()
        assert conv.segment_count == Segment.objects.filter(conversation=conv).count() == (conv.pair_count - 20) // 10


def test_chinese_and_english_text_are_both_present(demo):
    languages = set(Conversation.objects.values_list("metadata__language", flat=True))
    assert {"zh", "en", "zh-en"} <= languages
    han = Message.objects.filter(content__regex=r"[\u4e00-\u9fff]{4}")
    latin = Message.objects.filter(content__regex=r"[A-Za-z]{4,} [A-Za-z]{4,}")
    assert han.filter(conversation__metadata__language="zh").exists()
    assert latin.filter(conversation__metadata__language="en").exists()
    mixed = Conversation.objects.get(metadata__language="zh-en")
    assert han.filter(conversation=mixed).exists() and latin.filter(conversation=mixed).exists()


def test_at_least_two_scopes_are_used(demo):
    assert Conversation.objects.values("scope").distinct().count() >= 2


def test_streaming_answer_is_in_no_pair_and_its_run_is_running(demo):
    streaming = Message.objects.filter(status="streaming")
    assert streaming.exists()
    for message in streaming:
        assert message.role == "assistant" and message.content.strip()
        assert message.run.status == "running"
        assert not Pair.objects.filter(assistant_message=message).exists()
        assert not Pair.objects.filter(run=message.run).exists()


def test_failed_run_makes_no_pair(demo):
    failed = Run.objects.filter(status="failed")
    assert failed.exists()
    for run in failed:
        assert Message.objects.filter(run=run, role="user").exists()
        assert not Pair.objects.filter(run=run).exists()


def test_clarify_pending_run_makes_a_pair_with_the_question_as_answer(demo):
    clarifying = Run.objects.filter(status="clarify_pending")
    assert clarifying.count() >= 2
    for run in clarifying:
        pair = Pair.objects.get(run=run)
        assert pair.assistant_message.role == "assistant" and pair.assistant_message.content.strip()


def test_messages_without_a_run_exist_and_never_enter_a_pair(demo):
    loose = Message.objects.filter(run__isnull=True)
    assert loose.exists()
    assert not Pair.objects.filter(user_message__in=loose).exists()
    assert not Pair.objects.filter(assistant_message__in=loose).exists()


def test_tool_results_sit_inside_runs_whose_pair_answer_has_no_tool_calls(demo):
    tools = Message.objects.filter(role="tool")
    assert tools.count() >= 20
    paired_runs = 0
    for message in tools:
        assert message.tool_call_id and message.run_id is not None
        call_ids = {c["id"] for m in Message.objects.filter(run=message.run, tool_calls__isnull=False)
                    for c in m.tool_calls}
        assert message.tool_call_id in call_ids
        pair = Pair.objects.filter(run=message.run).select_related("assistant_message").first()
        if pair is not None:
            paired_runs += 1
            assert not pair.assistant_message.tool_calls
            assert pair.assistant_message.content.strip()
            assert pair.assistant_message.sequence > message.sequence
    assert paired_runs >= 20
    # A remark the assistant made before calling tools is not the answer: the last one is.
    remark = Message.objects.get(content="Updating both Orlando reservations now.")
    pair = Pair.objects.select_related("assistant_message").get(run=remark.run)
    assert pair.assistant_message != remark
    assert pair.assistant_message.content.startswith("Updated: Maya Whitfield's date of birth is now 2013-09-03")
    # The tool-call requests themselves have empty content and are never answers.
    requests = Message.objects.filter(role="assistant", tool_calls__isnull=False)
    assert not Pair.objects.filter(assistant_message__in=requests).exists()


def test_corrections_and_retractions_are_in_the_users_words(demo):
    users = Message.objects.filter(role="user")
    assert users.filter(content__contains="投资期限是5年，不是3年").exists()
    assert users.filter(content__contains="forget what I said about the refund").exists()
    assert users.filter(content__contains="Sorry, I meant Python 3.11, not 3.12").exists()
    assert users.filter(content__contains="出发日期改成10月3日").exists()


def test_plain_seed_keeps_one_earlier_version_as_a_revision(demo):
    revision = MessageRevision.objects.get()
    assert revision.message.conversation.external_id == "en-insurance-claims"
    assert revision.replaced_by == "seed_demo"
    assert revision.message.content.startswith(revision.content) and revision.message.content != revision.content


def test_demo_users_have_their_roles_scopes_and_the_integrator_a_token(demo):
    scopes = set(Conversation.objects.values_list("scope", flat=True))
    admin = User.objects.get(username="admin")
    assert admin.is_staff and admin.is_superuser and admin.check_password("admin-demo")
    for name in ("operator", "support", "integrator"):
        user = User.objects.get(username=name)
        assert not user.is_staff
        assert list(user.groups.values_list("name", flat=True)) == [name]
        assert user.check_password(f"{name}-demo")
        assert set(ScopeGrant.objects.filter(user=user).values_list("scope", flat=True)) == scopes
    token = Token.objects.get(user__username="integrator")
    assert f"API token: {token.key}" in demo


def test_the_output_ends_with_the_integrators_token_and_how_to_use_it(demo):
    """The final banner (./scripts/demo reads its first line) names the token."""
    key = Token.objects.get(user__username="integrator").key
    assert demo.rstrip("\n").splitlines()[-2:] == [
        f"integrator API token: {key}",
        f"  curl -H 'Authorization: Token {key}' http://127.0.0.1:8000/api/v1/conversations/",
    ]
    # Running it again prints the same token last (demo users are left as they are).
    from io import StringIO

    out = StringIO()
    call_command("seed_demo", "--allow-demo-users", stdout=out)
    assert out.getvalue().rstrip("\n").splitlines()[-2] == f"integrator API token: {key}"


def test_the_curl_example_names_the_address_the_desk_is_served_at(demo):
    """./scripts/demo serves on $PORT and passes it, so the example never points at the wrong port."""
    from io import StringIO

    out = StringIO()
    call_command("seed_demo", "--allow-demo-users", "--base-url", "http://127.0.0.1:8123/", stdout=out)
    key = Token.objects.get(user__username="integrator").key
    assert out.getvalue().rstrip("\n").splitlines()[-1] == (
        f"  curl -H 'Authorization: Token {key}' http://127.0.0.1:8123/api/v1/conversations/"
    )


def test_summary_names_conversations_pairs_and_planned_segments(demo):
    total_pairs = sum(Conversation.objects.values_list("pair_count", flat=True))
    total_segments = Segment.objects.count()
    assert f"7 conversations, {total_pairs} pairs, {total_segments} planned segments" in demo


def test_running_seed_demo_again_changes_nothing(demo):
    before = snapshot()
    output = seed("--allow-demo-users")
    assert snapshot() == before
    assert output.count("unchanged ") == 7


def test_edit_after_compaction_revises_one_message_in_the_first_segment_and_moves_its_digest(demo):
    conv = Conversation.objects.get(external_id="cn-fund-research")
    jobs = conversation_plan(conversation=conv)
    digests = dict(Segment.objects.filter(conversation=conv).values_list("from_pair", "digest"))
    revisions = MessageRevision.objects.count()

    output = seed("--edit-after-compaction", "--allow-demo-users")

    assert MessageRevision.objects.count() == revisions + 2  # this one, and one in the rolling repair chain
    revision = MessageRevision.objects.get(message__conversation=conv, replaced_by="seed_demo",
                                           message__revision_count=1, message__content__contains="更正")
    edited = revision.message
    assert edited.conversation == conv and edited.revision_count == 1
    assert "更正" in edited.content and "更正" not in revision.content
    assert Pair.objects.get(assistant_message=edited).index < 10
    after = dict(Segment.objects.filter(conversation=conv).values_list("from_pair", "digest"))
    assert after[0] != digests[0]
    assert {k: v for k, v in after.items() if k} == {k: v for k, v in digests.items() if k}
    states = {j.from_pair: CompactionJob.objects.get(pk=j.pk).state for j in jobs}
    assert states[0] == JobState.STALE
    assert all(state == JobState.PENDING for k, state in states.items() if k)
    assert "1 edit(s) applied" in output

    # Neither a second flagged run nor a plain run undoes or repeats the edit.
    before = snapshot()
    seed("--edit-after-compaction", "--allow-demo-users")
    seed("--allow-demo-users")
    assert snapshot() == before


def test_without_debug_or_flag_demo_users_are_refused_with_a_reason(demo, settings):
    User.objects.filter(username__in=DEMO_USERNAMES).delete()
    settings.DEBUG = False
    output = seed()
    assert not User.objects.filter(username__in=DEMO_USERNAMES).exists()
    assert "Demo users NOT created" in output and "--allow-demo-users" in output and "DJANGO_DEBUG" in output
    settings.DEBUG = True
    seed()
    assert set(User.objects.filter(username__in=DEMO_USERNAMES).values_list("username", flat=True)) == DEMO_USERNAMES


def test_demo_source_is_built_deterministically_and_stays_small():
    first, second = demo_conversations(), demo_conversations()
    assert [b.document for b in first] == [b.document for b in second]
    import json
    size = sum(len(json.dumps(b.document, ensure_ascii=False).encode()) for b in first)
    assert size < 400_000


def test_the_demo_sets_two_scopes_to_the_rolling_policy_before_loading(demo):
    from compaction.models import ScopePolicy
    from compaction.policies import rolling_scopes
    from conversations.demo import ROLLING_POLICIES

    assert rolling_scopes() == {"device-repair", "airline-support"} == set(ROLLING_POLICIES)
    repair = ScopePolicy.objects.get(scope="device-repair")
    assert (repair.recent_turns, repair.max_compaction_batch_messages) == (6, 28)
    assert Conversation.objects.get(external_id="cn-airpods-repair").pair_count == 126
    assert "scope device-repair: rolling hand-off notes" in demo


def test_the_repair_chain_compacts_into_nine_generations_and_the_after_compaction_edit_breaks_it_at_the_second(demo):
    from compaction.bindings.handoff import HANDOFF_KIND, handoff_plan
    from compaction.models import HandoffPlan, SummaryGeneration
    from tests.compaction.bindings.rolling import run_chain

    conv = Conversation.objects.get(external_id="cn-airpods-repair")
    generations = run_chain(conv)  # the offline builder
    assert len(generations) == 9 and generations[-1].to_pair == 119
    seed("--edit-after-compaction", "--allow-demo-users")
    jobs = CompactionJob.objects.filter(conversation=conv, kind=HANDOFF_KIND)
    assert not jobs.get(pk=generations[0].job_id).source_changed_at
    assert all(jobs.get(pk=g.job_id).source_changed_at for g in generations[1:])
    assert HandoffPlan.objects.get(job_id=generations[1].job_id).break_generation_id == generations[1].pk
    (replanned,) = handoff_plan(conversation=conv)
    assert replanned.parent_generation_id == generations[0].pk
    assert SummaryGeneration.objects.filter(conversation=conv).count() == 9
