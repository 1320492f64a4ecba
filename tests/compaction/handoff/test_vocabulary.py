"""The shared vocabulary of the hand-off builder and the drift checks (SPEC §7, §8)."""

import pytest

from compaction.handoff import vocabulary as v


@pytest.mark.parametrize("category, text", [
    (v.CONSENT, "现在可以提交送修申请了，我明确同意办理"),
    (v.HOLD, "算了，申请还是先别提交，等我下周把包装准备好再说"),
    (v.ABANDON, "先不买新的了"),
    (v.QUESTION, "AirPods Pro 有货吗？"),
    (v.CONSTRAINT, "预算4000以内"),
    (v.CONSENT, "Yes, go ahead and file the claim"),
    (v.HOLD, "Please hold off on the claim until next week"),
    (v.ABANDON, "Forget about the upgrade"),
    (v.QUESTION, "How long does shipping take?"),
    (v.CONSTRAINT, "I only want a window seat"),
])
def test_builtin_phrases_are_recognised(category, text):
    assert v.DEFAULT.matches(category, text)


def test_a_plain_statement_is_not_a_question_or_a_hold():
    assert not v.DEFAULT.matches(v.QUESTION, "我的左耳没有声音")
    assert not v.DEFAULT.matches(v.HOLD, "I want to file the claim today")


def test_a_scope_can_extend_a_category_without_losing_builtins():
    extended = v.DEFAULT.extended({v.HOLD: {"zh": ["挂起"]}})
    assert extended.matches(v.HOLD, "申请先挂起")
    assert extended.matches(v.HOLD, "先别提交")
    assert not v.DEFAULT.matches(v.HOLD, "申请先挂起")


@pytest.mark.parametrize("extra, message", [
    ({"mood": {"zh": ["x"]}}, "unknown vocabulary category 'mood'"),
    ({v.HOLD: {"fr": ["x"]}}, "unknown language 'fr'"),
    ({v.HOLD: {"en": ["(unclosed"]}}, "does not compile"),
])
def test_a_bad_extension_is_refused_by_name(extra, message):
    with pytest.raises(ValueError, match=message):
        v.DEFAULT.extended(extra)


def test_language_can_be_restricted():
    assert v.DEFAULT.matches(v.HOLD, "hold off", language="en")
    assert not v.DEFAULT.matches(v.HOLD, "hold off", language="zh")


@pytest.mark.parametrize("category, text", [
    (v.QUESTION, "用户询问送修申请提交后多久有结果"),
    (v.QUESTION, "寄修大概要多久？"),
    (v.QUESTION, "User asked whether the earbuds are in stock"),
    (v.DIRECT_REQUEST, "能不能帮我把申请提交了？"),
    (v.DIRECT_REQUEST, "用户要求提交送修申请"),
    (v.DIRECT_REQUEST, "Could you file the claim for me?"),
    (v.ASSISTANT_ASK, "落实设备序列号，用户尚未提供"),
    (v.ASSISTANT_ASK, "Serial number, awaiting the user"),
    (v.TOOL_DETAIL, "保修到2027年3月"),
    (v.CONSTRAINT, "申请还是先别提交"),
])
def test_phrases_added_for_the_drift_checks_are_recognised(category, text):
    assert v.DEFAULT.matches(category, text)


@pytest.mark.parametrize("category, text", [
    (v.DIRECT_REQUEST, "帮我对比一下两款耳机"),  # a comparison is a question (seed 001)
    (v.DIRECT_REQUEST, "用户要求了解维修价格"),
    (v.CONSTRAINT, "别的颜色她不喜欢"),  # 别的 is "other", not a negation
    (v.CONSTRAINT, "这两款有什么区别"),
    (v.CONSTRAINT, "左耳现在完全不能用"),  # a fault, not a condition
])
def test_near_misses_of_the_added_phrases(category, text):
    assert not v.DEFAULT.matches(category, text)


def test_find_all_lists_every_match_in_order():
    matches = v.DEFAULT.find_all(v.CONSENT, "我不同意，后来又同意办理")
    assert [(m.start(), m.group()) for m in matches] == [(2, "同意"), (8, "同意办理")]
