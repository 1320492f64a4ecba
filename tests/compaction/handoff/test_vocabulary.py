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
