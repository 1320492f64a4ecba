"""How user messages are read clause by clause (SPEC §7, §8; seed 001)."""

import pytest

from compaction.handoff import clauses as c


def _texts(message):
    return [clause for _, clause in c.split(message)]


def test_every_clause_is_a_verbatim_slice_of_the_message():
    message = "想了想，天才吧那边我不去了，直接寄回你们店修吧。现在可以提交送修申请了，我明确同意办理。"
    for start, clause in c.split(message):
        assert message[start:start + len(clause)] == clause


def test_messages_are_cut_at_sentence_ends_and_commas():
    assert _texts("天才吧那边我不去了，直接寄回你们店修吧。现在可以提交送修申请了，我明确同意办理。") == [
        "天才吧那边我不去了", "直接寄回你们店修吧", "现在可以提交送修申请了", "我明确同意办理"]


def test_a_short_lead_stays_with_what_follows():
    assert _texts("算了，申请还是先别提交，等我下周把包装准备好再说") == ["算了，申请还是先别提交", "等我下周把包装准备好再说"]
    assert _texts("Yes, go ahead and file the claim.") == ["Yes, go ahead and file the claim"]


def test_an_english_list_is_not_cut_at_its_commas():
    assert _texts("I need a hotel with wifi, parking, and breakfast.") == [
        "I need a hotel with wifi, parking, and breakfast"]


def test_decimal_points_do_not_end_a_sentence():
    assert _texts("Keep it under 4.5 kg. Only black.") == ["Keep it under 4.5 kg", "Only black"]


@pytest.mark.parametrize("text, role", [
    ("先不买新的了", c.ABANDON),
    ("天才吧那边我不去了", c.ABANDON),
    ("Forget about the upgrade", c.ABANDON),
    ("算了，申请还是先别提交", c.HOLD),
    ("Hold off on the return until next week", c.HOLD),
    ("我不同意提交", c.HOLD),  # a negated consent withdraws
    ("I don't agree to that", c.HOLD),
    ("我明确同意办理", c.CONSENT),
    ("现在可以提交送修申请了", c.REQUEST),  # a go-ahead by request words: dropped on hold all the same
    ("那就提交吧", c.CONSENT),
    ("Yes, go ahead and file the return", c.CONSENT),
    ("可以提交了吗？", c.QUESTION),  # a go-ahead asked as a question agrees to nothing
    ("寄修要多久？", c.QUESTION),
    ("帮我对比一下两款耳机", c.QUESTION),  # seed 001: comparisons are questions
    ("给我列个清单", c.QUESTION),
    ("How long does the refund take?", c.QUESTION),
    ("帮我寄修左耳", c.REQUEST),
    ("I want to return the laptop", c.REQUEST),
    ("预算4000以内", c.CONSTRAINT),
    ("只要银色或者深空灰", c.CONSTRAINT),
    ("Do not call me before noon", c.CONSTRAINT),  # an imperative, not "Do you …?"
    ("我的左耳没声音了", c.STATEMENT),
])
def test_each_clause_gets_one_role(text, role):
    assert c.classify(text)[0] == role


def test_the_question_mark_of_a_sentence_counts_for_its_clause():
    read = c.read("预算4000以内，有没有推荐的？")
    assert [(x.text, x.role) for x in read] == [("预算4000以内", c.CONSTRAINT), ("有没有推荐的？", c.QUESTION)]


def test_a_hold_is_also_a_user_condition_a_question_is_not():
    hold, question = c.read("申请先别提交。能不能只要银色？")
    assert hold.role == c.HOLD and hold.is_condition
    assert question.role == c.QUESTION and not question.is_condition


def test_ids_leave_dates_out():
    assert c.ids("订单88232于2026-08-31签收，工单RMA-5521") == {"88232", "RMA-5521"}


def test_affinity_weighs_ids_over_names_over_word_pairs():
    assert c.affinity(c.topics("订单88232"), c.topics("88232")) == 3
    assert c.affinity(c.topics("AirPods Max"), c.topics("airpods")) == 2
    assert c.affinity(c.topics("提交送修申请"), c.topics("申请还是先别提交")) == 2
    # agreeing words say how, not what: they tie nothing together
    assert c.affinity(c.topics("我同意"), c.topics("同意退款")) == 0


@pytest.mark.parametrize("text, role", [
    ("申请能不能先别提交？", c.QUESTION),  # a hold asked as a question holds nothing
    ("iPad是不是不买了？", c.QUESTION),  # nor does a drop asked as one
    ("Don't forget about the upgrade", c.STATEMENT),  # a negated drop is no drop
    ("我不再同意", c.HOLD),
    ("还是先修这副吧", c.REQUEST),  # deciding for the repair
    ("我再想想是去天才吧还是寄修", c.STATEMENT),  # deciding nothing
])
def test_near_misses_of_the_roles(text, role):
    assert c.classify(text)[0] == role


def test_the_drift_checks_cut_finer_than_the_builder_quotes():
    message = "算了，申请还是先别提交：等我下周把包装准备好再说。售价1,899元"
    assert c.cut(message) == ("算了", "申请还是先别提交", "等我下周把包装准备好再说", "售价1,899元")
    assert _texts(message) == ["算了，申请还是先别提交", "等我下周把包装准备好再说", "售价1,899元"]
    assert c.cut("有货吗？好的") == ("有货吗？", "好的")


def test_topics_mark_identifiers_and_two_ids_never_point_at_one_matter():
    assert c.topics("取消订单66001") == {"#66001", "取消", "消订", "订单"}
    assert c.affinity(c.topics("取消订单66001"), c.topics("取消订单66002")) == 0
    assert c.affinity(c.topics("取消订单66001"), c.topics("订单66001")) == 4  # the id 3, 订单 1


def test_the_cut_finds_the_marks_finditer_finds():
    """``cut`` looks for a mark only where one of its first characters stands
    (``_ends``): the same matches as trying every position."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from compaction.handoff import clauses as cl

    @settings(max_examples=500, deadline=None)
    @given(st.text(alphabet="。！？!?；;\n.…，：,:1 a文\t", max_size=16))
    def agrees(text):
        assert [m.span() for m in cl._ends(text)] == [m.span() for m in cl._ANY_END.finditer(text)]

    agrees()
