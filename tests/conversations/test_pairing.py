"""SPEC §4: which runs make pairs. Each exclusion has its own test."""

from datetime import datetime, timedelta, timezone

from conversations.pairing import MessageView, RunView, project_pairs

T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)
_seq = iter(range(10**6))


def msg(mid, run, role, content="text", status="completed", tools=False, minute=0):
    return MessageView(key=mid, external_id=mid, run_key=run, role=role, content=content, status=status,
                       has_tool_calls=tools, created_at=T0 + timedelta(minutes=minute), sequence=next(_seq))


def one_run(status="completed", messages=None):
    run = RunView(key="r1", external_id="r1", status=status)
    messages = messages if messages is not None else [msg("u1", "r1", "user"), msg("a1", "r1", "assistant", minute=1)]
    return project_pairs([run], messages)


def test_completed_run_with_user_and_answer_makes_a_pair():
    pairs = one_run()
    assert [(p.index, p.user.external_id, p.assistant.external_id) for p in pairs] == [(0, "u1", "a1")]


def test_partial_and_clarify_pending_runs_make_pairs():
    assert len(one_run(status="partial")) == 1
    assert len(one_run(status="clarify_pending")) == 1


def test_running_failed_and_cancelled_runs_make_no_pair():
    for status in ("running", "failed", "cancelled"):
        assert one_run(status=status) == [], status


def test_run_without_user_message_makes_no_pair():
    assert one_run(messages=[msg("a1", "r1", "assistant")]) == []


def test_blank_user_message_makes_no_pair():
    assert one_run(messages=[msg("u1", "r1", "user", content="  \n"), msg("a1", "r1", "assistant")]) == []


def test_user_message_is_the_runs_first_user_message():
    pairs = one_run(messages=[
        msg("u1", "r1", "user", "first", minute=0),
        msg("u2", "r1", "user", "second", minute=1),
        msg("a1", "r1", "assistant", minute=2),
    ])
    assert pairs[0].user.external_id == "u1"


def test_streaming_answer_never_enters_a_pair():
    assert one_run(messages=[msg("u1", "r1", "user"), msg("a1", "r1", "assistant", status="streaming")]) == []


def test_failed_answer_never_enters_a_pair():
    assert one_run(messages=[msg("u1", "r1", "user"), msg("a1", "r1", "assistant", status="failed")]) == []


def test_blank_answer_never_enters_a_pair():
    assert one_run(messages=[msg("u1", "r1", "user"), msg("a1", "r1", "assistant", content=" ")]) == []


def test_assistant_message_with_tool_calls_is_not_the_answer():
    pairs = one_run(messages=[
        msg("u1", "r1", "user", minute=0),
        msg("a1", "r1", "assistant", content="let me look", tools=True, minute=1),
        msg("t1", "r1", "tool", content="{\"order\": 1}", minute=2),
        msg("a2", "r1", "assistant", content="Your order shipped.", minute=3),
    ])
    assert [(p.user.external_id, p.assistant.external_id) for p in pairs] == [("u1", "a2")]


def test_run_whose_only_assistant_message_calls_a_tool_makes_no_pair():
    assert one_run(messages=[msg("u1", "r1", "user"), msg("a1", "r1", "assistant", tools=True)]) == []


def test_answer_is_the_last_settled_assistant_message_of_the_run():
    pairs = one_run(messages=[
        msg("u1", "r1", "user", minute=0),
        msg("a1", "r1", "assistant", content="draft", minute=1),
        msg("a2", "r1", "assistant", content="final", minute=2),
    ])
    assert pairs[0].assistant.external_id == "a2"


def test_tool_results_and_system_messages_never_enter_a_pair():
    pairs = one_run(messages=[
        msg("s1", "r1", "system", minute=0),
        msg("u1", "r1", "user", minute=1),
        msg("t1", "r1", "tool", minute=2),
        msg("a1", "r1", "assistant", minute=3),
    ])
    assert (pairs[0].user.external_id, pairs[0].assistant.external_id) == ("u1", "a1")


def test_messages_without_a_run_never_enter_a_pair():
    run = RunView(key="r1", external_id="r1", status="completed")
    pairs = project_pairs([run], [msg("u0", None, "user"), msg("a0", None, "assistant"),
                                  msg("u1", "r1", "user"), msg("a1", "r1", "assistant")])
    assert [p.user.external_id for p in pairs] == ["u1"]


def test_messages_of_an_unknown_run_never_enter_a_pair():
    run = RunView(key="r1", external_id="r1", status="completed")
    pairs = project_pairs([run], [msg("u9", "other", "user"), msg("a9", "other", "assistant")])
    assert pairs == []


def test_pairs_are_ordered_by_user_created_at_then_run_id_and_numbered_without_gaps():
    runs = [RunView(key=k, external_id=k, status="completed") for k in ("r-b", "r-a", "r-c", "r-x")]
    messages = [
        msg("ub", "r-b", "user", minute=5), msg("ab", "r-b", "assistant", minute=6),
        msg("ua", "r-a", "user", minute=5), msg("aa", "r-a", "assistant", minute=6),
        msg("uc", "r-c", "user", minute=1), msg("ac", "r-c", "assistant", minute=2),
        msg("ux", "r-x", "user", minute=3),  # no answer: leaves no gap
    ]
    pairs = project_pairs(runs, messages)
    assert [(p.index, p.user.external_id) for p in pairs] == [(0, "uc"), (1, "ua"), (2, "ub")]


def test_messages_stored_out_of_time_order_pair_by_their_created_at():
    # The run's first user message and last answer are read by created_at,
    # not by the order the snapshot lists them in.
    messages = [
        msg("a-late", "r1", "assistant", minute=9), msg("u-late", "r1", "user", minute=4),
        msg("a-early", "r1", "assistant", minute=2), msg("u-early", "r1", "user", minute=1),
    ]
    (pair,) = one_run(messages=messages)
    assert (pair.user.external_id, pair.assistant.external_id) == ("u-early", "a-late")


def test_runs_listed_out_of_time_order_are_numbered_by_their_user_messages_created_at():
    runs = [RunView(key=k, external_id=k, status="completed") for k in ("r-3", "r-1", "r-2")]
    messages = [msg(f"a{k}", f"r-{k}", "assistant", minute=10 * k + 1) for k in (2, 3, 1)]
    messages += [msg(f"u{k}", f"r-{k}", "user", minute=10 * (4 - k)) for k in (1, 3, 2)]
    pairs = project_pairs(runs, messages)
    assert [(p.index, p.user.external_id) for p in pairs] == [(0, "u3"), (1, "u2"), (2, "u1")]


def test_equal_created_at_within_a_run_falls_back_to_stored_order():
    same = [msg("u1", "r1", "user"), msg("u2", "r1", "user"), msg("a1", "r1", "assistant"),
            msg("a2", "r1", "assistant")]
    (pair,) = one_run(messages=[same[3], same[1], same[0], same[2]])
    assert (pair.user.external_id, pair.assistant.external_id) == ("u1", "a2")


def test_each_pair_carries_the_key_of_its_run():
    runs = [RunView(key=("pk", k), external_id=k, status="completed") for k in ("r-1", "r-2")]
    messages = [msg(f"u{k}", ("pk", f"r-{k}"), "user", minute=k) for k in (1, 2)]
    messages += [msg(f"a{k}", ("pk", f"r-{k}"), "assistant", minute=k + 0.5) for k in (1, 2)]
    assert [p.run_key for p in project_pairs(runs, messages)] == [("pk", "r-1"), ("pk", "r-2")]
