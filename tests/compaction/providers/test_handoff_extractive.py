"""The offline hand-off builder ``handoff-extractive-v1`` (SPEC §7, seed 001
"交接单该装什么"), on hand-written Chinese and English conversations."""

import re

import pytest

from compaction import contract
from compaction.contract import ProviderResult
from compaction.handoff import note
from compaction.handoff.material import Material, MaterialPair, ToolResult
from compaction.providers.base import SummaryRequest
from compaction.providers.handoff_extractive import (
    HANDOFF_EXTRACTIVE_MODEL_ID,
    HandoffExtractiveProvider,
    HandoffInput,
    build_note,
    make_label,
    result_id,
)

ZH, EN = note.ZH, note.EN


def material(turns, *, start=0):
    """``turns``: (user, assistant) or (user, assistant, [tool, …]) with each
    tool as (name, arguments, result text, ok)."""
    pairs, results = [], []
    for offset, turn in enumerate(turns):
        index = start + offset
        user, assistant, tools = (turn + ([],))[:3] if len(turn) == 2 else turn
        pairs.append(MaterialPair(index, f"u{index}", user, f"a{index}", assistant))
        for k, (name, arguments, text, ok) in enumerate(tools):
            results.append(ToolResult(index, f"t{index}-{k}", f"call{index}-{k}", name, arguments, text, ok))
    return Material(pairs=tuple(pairs), tool_results=tuple(results))


def lines(text, section):
    return [line.text for line in note.parse(text).section(section)]


def all_quotes(text):
    return [q for line in note.parse(text).lines for q in note.quotes(line.text)]


def assert_quotes_verbatim(text, *materials):
    users = "\n".join(re.sub(r"\s+", " ", p.user_text) for m in materials for p in m.pairs)
    for quote in all_quotes(text):
        assert re.sub(r"\s+", " ", quote) in users, quote


# A Chinese repair conversation in the spirit of seed 001 (written for these tests).
REPAIR = [
    ("我的AirPods Pro左耳没声音了，订单号88232，怎么办？",
     "先试试重置。订单88232已于2026-08-31签收，保修至2027-08-31。",
     [("lookup_order", '{"order": "88232"}', '{"order": "88232", "signed": "2026-08-31", "warranty": "2027-08-31"}',
       True)]),
    ("AirPods Max和AirPods Pro 3哪个好？", "AirPods Max有货，售价3999元；Pro 3也有库存。",
     [("check_stock", '{"sku": "max"}', '{"stock": 12}', True)]),
    ("先不买新的了。", "好的。"),
    ("天才吧那边我不去了，直接寄回你们店修吧。现在可以提交送修申请了，我明确同意办理。", "好的，已发起送修申请，请在确认卡上确认。",
     [("submit_ticket", '{"order": "88232"}', "用户拒绝了确认卡，未提交", False)]),
    ("算了，申请还是先别提交，等我下周把包装准备好再说。", "好的，申请先暂缓。请提供耳机序列号，方便后续登记。"),
]


# --- holds and consents --------------------------------------------------------

def test_consent_then_hold_leaves_no_consent_and_quotes_the_hold():
    text = build_note(None, material(REPAIR), language=ZH)
    requests = lines(text, note.REQUESTS)
    hold = [line for line in requests if note.is_hold(line)]
    # the order the user named first (turn 1) is the matter's 关联编号
    assert hold == ["暂缓：寄回你们店修（原话：订单号88232；算了，申请还是先别提交；等我下周把包装准备好再说）"]
    # the withdrawn go-ahead is nowhere: not in a request, a to-do or the next step
    assert "同意" not in text and "现在可以提交送修申请了" not in text
    assert lines(text, note.TODOS) == [] and lines(text, note.NEXT_STEP) == []


def test_a_consent_restated_after_the_hold_is_current_again():
    first = build_note(None, material(REPAIR), language=ZH)
    later = material([("包装准备好了。现在可以提交送修申请了，我同意办理。", "好的。")], start=5)
    text = build_note(first, later, language=ZH)
    requests = lines(text, note.REQUESTS)
    assert not any(note.is_hold(line) for line in requests)
    assert "寄回你们店修（原话：订单号88232；现在可以提交送修申请了；我同意办理）" in requests
    assert "先别提交" not in text  # the hold went with the new consent
    assert lines(text, note.NEXT_STEP) == ["寄回你们店修（原话：我同意办理）"]


def test_a_hold_in_the_same_message_as_a_consent_wins():
    text = build_note(None, material([("帮我退掉订单70011，我同意办理，不过先别提交，等我问问家里人再说。", "好的。")]),
                      language=ZH)
    (line,) = lines(text, note.REQUESTS)
    assert note.is_hold(line) and "同意" not in line
    assert note.quotes(line) == ["不过先别提交", "等我问问家里人再说"]


def test_english_consent_then_hold_and_consent_again():
    turns = [
        ("I want to return the laptop from order 55120 for a refund.", "Sure."),
        ("Yes, go ahead and file the return.", "Filing it now."),
        ("Actually, hold off on the return until I find the original box.", "Understood, it is on hold."),
    ]
    held = build_note(None, material(turns), language=EN)
    (line,) = lines(held, note.REQUESTS)
    assert line.startswith("On hold: ") and "go ahead" not in held
    assert note.quotes(line) == ["Actually, hold off on the return until I find the original box"]
    again = build_note(held, material([("Found the box. Please go ahead and file the return now.", "OK.")],
                                      start=3), language=EN)
    (line,) = lines(again, note.REQUESTS)
    assert not note.is_hold(line) and "hold off" not in again
    assert note.quotes(line)[-1] == "Please go ahead and file the return now"


# --- abandonment ---------------------------------------------------------------

def test_an_abandoned_matter_is_marked_with_the_users_words():
    turns = [("我要给妈妈买个iPad，预算4000以内。", "好的。"), ("只要银色或者深空灰。", "好的。"),
             ("算了，iPad不买了。", "好的。")]
    text = build_note(None, material(turns), language=ZH)
    (line,) = lines(text, note.REQUESTS)
    assert note.is_abandoned(line) and line.startswith("已放弃：给妈妈买个iPad")
    assert note.quotes(line)[-1] == "算了，iPad不买了"
    # its conditions stay on record, but nothing of it is to be done
    assert "预算4000以内" in note.quotes(line) and lines(text, note.TODOS) == []


def test_dropping_an_option_only_asked_about_gets_its_own_marked_line():
    text = build_note(None, material(REPAIR[:3]), language=ZH)
    assert lines(text, note.REQUESTS) == ["已放弃：AirPods Max（原话：先不买新的了）"]


def test_english_abandonment_is_marked():
    turns = [("What about the upgraded model with 32 GB?", "It is in stock at $1,899."),
             ("Forget about the upgrade.", "Okay.")]
    text = build_note(None, material(turns), language=EN)
    assert lines(text, note.REQUESTS) == ['Abandoned: the upgrade (quote: "Forget about the upgrade")']


def test_asking_again_for_an_abandoned_matter_reopens_it():
    dropped = build_note(None, material([("我要给妈妈买个iPad。", "好的。"), ("iPad不买了。", "好的。")]), language=ZH)
    text = build_note(dropped, material([("我要给妈妈买个iPad，还是买吧。", "好的。")], start=2), language=ZH)
    (line,) = lines(text, note.REQUESTS)
    assert not note.is_abandoned(line) and "不买了" not in text
    assert lines(text, note.TODOS) == ["给妈妈买个iPad（原话：我要给妈妈买个iPad）"]


# --- done, progress, dead ends ---------------------------------------------------

def test_done_lists_only_what_a_successful_tool_result_confirms_with_its_id():
    turns = [("帮我取消订单66001。", "好的，已为您取消。",
              [("cancel_order", '{"order": "66001"}', '{"status": "cancelled", "order_id": "66001"}', True)]),
             ("再帮我取消订单66002。", "已经取消了。",  # the assistant says so; no tool result does
              []),
             ("帮我查一下订单66003到哪了。", "已签收。",
              [("lookup_order", '{"order": "66003"}', '{"status": "delivered"}', True)])]
    text = build_note(None, material(turns), language=ZH)
    assert lines(text, note.DONE) == ["cancel_order 成功，单号 66001"]
    assert lines(text, note.REQUESTS)[0].startswith("已办结：取消订单66001")
    # the one the assistant only claims is still to be done; the look-up made nothing
    assert lines(text, note.TODOS) == ["取消订单66002（原话：再帮我取消订单66002）"]
    assert "66003" not in text


def test_a_success_that_returns_no_id_is_progress_not_done():
    turns = [("Please book a courier pickup for Friday.", "Booked.",
              [("book_pickup", '{"day": "Friday"}', "Pickup booked successfully.", None)])]
    text = build_note(None, material(turns), language=EN)
    assert lines(text, note.DONE) == []
    assert lines(text, note.PROGRESS) == ["book a courier pickup for Friday: book_pickup succeeded (no id returned)"]
    assert lines(text, note.TODOS) == []  # it did succeed: nothing left to do


def test_a_refused_confirmation_is_progress_and_a_dead_end_not_done():
    text = build_note(None, material(REPAIR), language=ZH)
    assert lines(text, note.DONE) == []
    assert lines(text, note.PROGRESS) == ["寄回你们店修：submit_ticket 未成功（用户拒绝了确认卡，未提交）"]
    assert lines(text, note.DEAD_ENDS) == ["寄回你们店修：submit_ticket 未成功（用户拒绝了确认卡，未提交）"]


def test_dead_ends_keep_the_three_newest_failures():
    turns = [("帮我提交退款申请，订单77001。", "好的。")] + [
        (f"再试一次提交退款申请{'！' * i}", "失败了。",
         [("submit_refund", '{"order": "77001"}', f"系统错误 E{i}0{i}", False)]) for i in range(1, 6)]
    text = build_note(None, material(turns), language=ZH)
    dead = lines(text, note.DEAD_ENDS)
    assert len(dead) == 3
    assert [re.search(r"E\d0\d", line).group() for line in dead] == ["E303", "E404", "E505"]


def test_a_settled_matters_dead_ends_go():
    failing = material([("帮我提交退款申请，订单77001。", "失败了。",
                         [("submit_refund", '{"order": "77001"}', "系统错误", False)])])
    first = build_note(None, failing, language=ZH)
    assert len(lines(first, note.DEAD_ENDS)) == 1
    success = material([("再提交一次退款申请。", "成功了。",
                         [("submit_refund", '{"order": "77001"}', '{"refund_id": "RF-3301"}', True)])], start=1)
    text = build_note(first, success, language=ZH)
    assert lines(text, note.DEAD_ENDS) == [] and lines(text, note.DONE) == ["submit_refund 成功，单号 RF-3301"]


def test_lookups_never_make_progress_dead_ends_or_done():
    turns = [("订单88232到哪了？", "已签收。", [("lookup_order", '{"order": "88232"}', '{"signed": "2026-08-31"}', True),
                                            ("check_stock", '{"sku": "x"}', "error: timeout", False)])]
    text = build_note(None, material(turns), language=ZH)
    for section in (note.PROGRESS, note.DEAD_ENDS, note.DONE):
        assert lines(text, section) == []


# --- what must not be there --------------------------------------------------------

def test_a_question_is_not_a_requirement():
    turns = [("寄修要多久？", "大约7天。"), ("维修大概多少钱？", "保内免费。"), ("能不能换新？", "要看检测结果。"),
             ("帮我对比一下AirPods Pro和Max。", "对比如下……")]
    text = build_note(None, material(turns), language=ZH)
    assert lines(text, note.REQUESTS) == [] and lines(text, note.TODOS) == []


def test_a_question_is_not_merged_into_another_matter():
    turns = [("帮我寄修左耳，订单88232。", "好的。"), ("订单88232寄修要多久？", "大约7天。")]
    text = build_note(None, material(turns), language=ZH)
    (line,) = lines(text, note.REQUESTS)
    assert note.quotes(line) == ["帮我寄修左耳，订单88232"]
    assert "多久" not in text


def test_an_english_question_is_not_a_requirement():
    text = build_note(None, material([("How long does the refund take?", "5 days."),
                                      ("Can I return it without the box?", "Yes.")]), language=EN)
    assert lines(text, note.REQUESTS) == []


def test_an_assistant_ask_is_not_a_todo():
    text = build_note(None, material(REPAIR), language=ZH)
    assert "序列号" not in text  # the assistant asked for it; the user never said they would send it
    english = build_note(None, material([("I want to return the laptop.", "Could you provide the serial number?"),
                                         ("Thanks.", "Please send the serial number when you can.")]), language=EN)
    assert lines(english, note.TODOS) == ['return the laptop (quote: "I want to return the laptop")']
    assert "serial" not in english


def test_tool_details_never_reach_user_requests():
    text = build_note(None, material(REPAIR), language=ZH)
    requests = "\n".join(lines(text, note.REQUESTS))
    for detail in ("2026-08-31", "2027-08-31", "保修至", "有货", "库存", "3999", "签收"):
        assert detail not in requests
    english = build_note(None, material([
        ("I want to return order 55120, it arrived cracked.", "Order 55120 was delivered on 2026-03-02, "
         "under warranty until 2027-03-02, replacement in stock.",
         [("lookup_order", '{"order": "55120"}', '{"delivered": "2026-03-02", "stock": 4}', True)])]), language=EN)
    requests = "\n".join(lines(english, note.REQUESTS))
    assert "55120" in requests  # the user's own id stays, to look it up again
    for detail in ("2026-03-02", "warranty", "stock", "delivered"):
        assert detail not in requests


def test_an_assistant_restatement_is_not_a_user_requirement():
    turns = [("帮我寄修左耳。", "好的。您的要求是：只寄顺丰、周五前取件、保修期内免费。")]
    text = build_note(None, material(turns), language=ZH)
    assert "顺丰" not in text and "周五" not in text


# --- conditions ---------------------------------------------------------------------

def test_constraints_are_kept_verbatim():
    turns = [("我要给妈妈买个iPad，预算4000以内，有什么推荐？", "推荐iPad Air。"),
             ("只要银色或者深空灰，不要金色。", "好的。"), ("必须在周五之前送到。", "好的。")]
    text = build_note(None, material(turns), language=ZH)
    (line,) = lines(text, note.REQUESTS)
    assert note.quotes(line) == ["我要给妈妈买个iPad", "预算4000以内", "只要银色或者深空灰", "不要金色", "必须在周五之前送到"]
    assert "推荐" not in line


def test_english_constraints_are_kept_verbatim():
    turns = [("I need a hotel in Cambridge for 3 nights, under $150 a night.", "Here are some."),
             ("Only with free parking, and no smoking rooms.", "Noted.")]
    text = build_note(None, material(turns), language=EN)
    (line,) = lines(text, note.REQUESTS)
    assert note.quotes(line) == ["I need a hotel in Cambridge for 3 nights", "under $150 a night",
                                 "Only with free parking", "and no smoking rooms"]


def test_a_condition_said_again_in_the_same_words_adds_nothing():
    first = build_note(None, material([("我要给妈妈买个iPad，预算4000以内。", "好的。")]), language=ZH)
    again = build_note(first, material([("预算4000以内。", "明白。")], start=1), language=ZH)
    assert again == first


# --- carry-forward and growth ----------------------------------------------------------

GENERATIONS_ZH = [
    [("帮我寄修AirPods Pro左耳，订单88232。", "好的。"), ("只要顺丰上门取件。", "好的。")],
    [("我要给妈妈买个iPad，预算4000以内。", "好的。"), ("寄修要多久？", "7天。")],
    [("只要银色或者深空灰。", "好的。"), ("现在可以提交送修申请了，我同意办理。", "好的。",
                                 [("submit_ticket", '{"order": "88232"}', '{"ticket_id": "RMA-5521"}', True)])],
    [("维修多少钱？", "免费。"), ("包装有什么要求？", "原包装。")],
    [("iPad不买了。", "好的。")],
]


def _chain(generations, language):
    notes, parent, start = [], None, 0
    for turns in generations:
        m = material(turns, start=start)
        parent = build_note(parent, m, language=language)
        notes.append((parent, m))
        start += len(turns)
    return notes


def test_lines_are_carried_forward_across_several_generations():
    chain = _chain(GENERATIONS_ZH, ZH)
    first, _ = chain[0]
    assert lines(first, note.REQUESTS) == ["寄修AirPods Pro左耳，订单88232（原话：帮我寄修AirPods Pro左耳，订单88232；只要顺丰上门取件）"]
    last, _ = chain[-1]
    assert lines(last, note.REQUESTS) == [
        "已办结：寄修AirPods Pro左耳，订单88232（原话：帮我寄修AirPods Pro左耳，订单88232；只要顺丰上门取件；"
        "现在可以提交送修申请了；我同意办理）",
        "已放弃：给妈妈买个iPad（原话：预算4000以内；只要银色或者深空灰；iPad不买了）",
    ]
    assert lines(last, note.DONE) == ["submit_ticket 成功，单号 RMA-5521"]
    # every conditional word of every generation is still there, verbatim
    for phrase in ("只要顺丰上门取件", "预算4000以内", "只要银色或者深空灰"):
        assert phrase in all_quotes(last)
    for text, _ in chain:
        assert_quotes_verbatim(text, *[m for _, m in chain])


def test_a_generation_whose_material_brings_nothing_new_is_its_parent_unchanged():
    chain = _chain(GENERATIONS_ZH, ZH)
    third, fourth = chain[2][0], chain[3][0]  # generation 4 only asked questions
    assert fourth == third


def test_no_growth_over_many_generations_of_questions_only():
    parent = _chain(GENERATIONS_ZH[:3], ZH)[-1][0]
    start = 100
    for k in range(6):
        questions = material([("寄修要多久？", "7天，订单88232已签收。"), (f"第{k}次问：维修进度怎么样了？", "检测中。"),
                              ("保修到什么时候？", "保修至2027-08-31。",
                               [("lookup_warranty", '{"order": "88232"}', '{"until": "2027-08-31"}', True)])],
                             start=start)
        child = build_note(parent, questions, language=ZH)
        assert len(child) <= len(parent) and child == parent
        parent, start = child, start + 3


def test_english_carry_forward():
    generations = [[("I want to return order 55120 for a refund.", "OK.")],
                   [("Only a refund, not a replacement.", "Noted.")],
                   [("How long will it take?", "5 days.")]]
    chain = _chain(generations, EN)
    last = chain[-1][0]
    assert lines(last, note.REQUESTS) == ['return order 55120 for a refund (quote: "I want to return order 55120 for a '
                                          'refund" ; "Only a refund" ; "not a replacement")']
    assert chain[2][0] == chain[1][0]


# --- determinism, length, format ----------------------------------------------------------

def test_the_same_input_gives_the_same_note():
    m = material(REPAIR)
    assert len({build_note(None, m, language=ZH) for _ in range(5)}) == 1
    parent = build_note(None, m, language=ZH)
    later = material(GENERATIONS_ZH[2], start=5)
    assert build_note(parent, later, language=ZH) == build_note(parent, later, language=ZH)


def test_the_note_stays_within_6000_characters():
    turns = [(f"我要订第{i}号会议室，只要带投影的，人数不超过{i + 3}人，必须在周{i % 5 + 1}之前确认，"
              f"预算{1000 + i}元以内，{'不要靠窗的' * 6}。", "好的。",
              [("book_room", f'{{"room": {i}}}', f'{{"booking_id": "BK-{1000 + i}"}}', True)]) for i in range(80)]
    text = build_note(None, material(turns), language=ZH)
    assert len(text) <= contract.MAX_SUMMARY_CHARS
    assert note.heading_problem(text) == ""
    assert_quotes_verbatim(text, material(turns))


@pytest.mark.parametrize("language, turns", [(ZH, REPAIR), (EN, [("Hi", "Hello")]), (ZH, [])])
def test_every_note_has_the_six_headings_in_order(language, turns):
    text = build_note(None, material(turns), language=language)
    assert note.heading_problem(text) == ""
    assert [line[3:] for line in text.splitlines() if line.startswith("## ")] == [
        note.HEADINGS[language][key] for key in note.SECTIONS]


def test_every_quote_is_a_verbatim_substring_of_a_user_message():
    m = material(REPAIR + [("好的，包装准备好了。现在可以提交送修申请了，我同意办理。", "好的。")], start=0)
    assert_quotes_verbatim(build_note(None, m, language=ZH), m)


# --- parents written by others: what must not be there is repaired ------------------------------

def _parent(requests=(), todos=(), language=ZH):
    return note.render({note.REQUESTS: list(requests), note.TODOS: list(todos)}, language=language)


def test_a_parent_line_that_only_records_a_question_is_dropped():
    parent = _parent(["用户询问寄修需要多久", "寄修左耳（原话：帮我寄修左耳）", "维修价格（原话：维修多少钱？）"])
    text = build_note(parent, material([]), language=ZH)
    assert lines(text, note.REQUESTS) == ["寄修左耳（原话：帮我寄修左耳）"]


def test_a_parent_consent_in_its_own_words_beside_the_hold_goes():
    # seed 001 §2, generation 7: one line agrees, the other holds
    parent = _parent([
        "用户已放弃去天才吧，改为直接寄回本店修，并明确同意办理送修申请（原话：直接寄回你们店修吧；我明确同意办理）",
        "暂缓：送修申请先别提交（原话：算了，申请还是先别提交）"])
    text = build_note(parent, material([]), language=ZH)
    assert "同意" not in text
    assert "暂缓：送修申请先别提交（原话：算了，申请还是先别提交）" in lines(text, note.REQUESTS)


def test_a_parent_todo_only_the_assistant_asked_for_is_dropped():
    parent = _parent(["寄修左耳（原话：帮我寄修左耳）"], ["寄修左耳（原话：帮我寄修左耳）", "落实设备序列号，请提供序列号"])
    text = build_note(parent, material([]), language=ZH)
    assert lines(text, note.TODOS) == ["寄修左耳（原话：帮我寄修左耳）"]


def test_a_looked_up_date_in_a_parent_request_goes_the_id_stays():
    parent = _parent(["订单88232，2026-08-31签收，左耳无声要寄修（原话：帮我寄修左耳）"])
    text = build_note(parent, material([]), language=ZH)
    (line,) = lines(text, note.REQUESTS)
    assert "2026-08-31" not in line and "签收" not in line and "88232" in line


def test_a_parent_in_summary_tags_is_read_from_inside_them():
    parent = "<summary>\n" + _parent(["寄修左耳（原话：帮我寄修左耳）"]) + "\n</summary>"
    assert build_note(parent, material([]), language=ZH) == _parent(["寄修左耳（原话：帮我寄修左耳）"])


def test_a_malformed_parent_is_refused():
    with pytest.raises(note.MalformedNote):
        build_note("just prose", material([]), language=ZH)


# --- labels, ids ------------------------------------------------------------------------------

@pytest.mark.parametrize("text, role, label", [
    ("现在可以提交送修申请了", "consent", "提交送修申请"),
    ("天才吧那边我不去了", "abandon", "天才吧"),
    ("先不买新的了", "abandon", None),
    ("Please book a table for 4 people on Friday", "request", "book a table for 4 people on Friday"),
    ("我明确同意办理", "consent", None),
])
def test_labels_name_the_matter_without_agreeing_or_dropping_words(text, role, label):
    assert make_label(text, language=ZH if re.search(r"[\u4e00-\u9fff]", text) else EN, role=role) == label


def test_result_ids_are_ids_the_result_proves():
    def r(text, arguments="{}"):
        return ToolResult(0, "t", "c", "x", arguments, text, True)
    assert result_id(r('{"status": "created", "ticket_id": "RMA-5521"}')) == "RMA-5521"
    assert result_id(r('{"data": {"booking_id": 77120}}')) == "77120"
    assert result_id(r("工单RMA-5521已创建，2026-09-01前寄出")) == "RMA-5521"
    assert result_id(r('{"booking_id": 77, "price": 1899}')) is None  # too short to be an id, a price
    assert result_id(r("done")) is None
    # an id the call was given proves nothing unless the result reports the change
    assert result_id(r('{"order_id": "66001", "state": "open"}', '{"order": "66001"}')) is None
    assert result_id(r('{"order_id": "66001", "status": "cancelled"}', '{"order": "66001"}')) == "66001"


# --- the provider ---------------------------------------------------------------------------------

def test_the_provider_wraps_the_builder_and_passes_the_contract():
    m = material(REPAIR)
    request = SummaryRequest(answers=(), system="s", user="u", prompt_version="handoff@1",
                             extra={"handoff": HandoffInput(parent_note=None, material=m, language=ZH)})
    result = HandoffExtractiveProvider().summarise(request)
    assert result.model == HANDOFF_EXTRACTIVE_MODEL_ID == "handoff-extractive-v1"
    assert result.text == build_note(None, m, language=ZH)
    assert contract.check(result).ok


@pytest.mark.parametrize("extra, detail", [
    ({}, "needs extra['handoff']"),
    ({"handoff": HandoffInput(parent_note="prose", material=material([]), language=ZH)}, "not a six-section note"),
])
def test_the_provider_reports_what_it_cannot_build(extra, detail):
    request = SummaryRequest(answers=(), system="", user="", prompt_version="handoff@1", extra=extra)
    result = HandoffExtractiveProvider().summarise(request)
    assert isinstance(result, ProviderResult) and result.error == "provider_error" and detail in result.error_detail


# --- a note reads back as itself ---------------------------------------------------------------

QUESTIONS_ONLY = material([("寄修要多久？", "7到10个工作日，订单88232于2026-08-31签收。"),
                           ("How long does it take?", "About a week.")], start=1000)


@pytest.mark.parametrize("language, turns", [
    (ZH, REPAIR),
    (ZH, REPAIR + [("好的，包装准备好了。现在可以提交送修申请了，我同意办理。", "好的。",
                    [("submit_ticket", '{"order": "88232"}', '{"ticket_id": "RMA-5521"}', True)])]),
    (ZH, [("帮我约9月13号上午10点环贸的天才吧。", "约满了。",
           [("book_genius_bar", '{"slot": "2026-09-13 10:00"}', '{"ok": false, "error": "该时段已被约满"}', False)]),
          ("天才吧那边我不去了。", "好的。")]),
    (EN, [("I want to return order 55120 for a refund.", "OK."), ("Only a refund, not a replacement.", "OK."),
          ("Actually, hold off on the return until Friday.", "OK.")]),
])
def test_a_note_followed_by_questions_only_is_given_back_unchanged(language, turns):
    first = build_note(None, material(turns), language=language)
    assert build_note(first, QUESTIONS_ONLY, language=language) == first


def test_an_abandoned_request_keeps_the_words_its_dated_name_came_from():
    turns = [("帮我约9月13号上午10点环贸的天才吧。", "约满了。"), ("天才吧那边我不去了。", "好的。")]
    (line,) = lines(build_note(None, material(turns), language=ZH), note.REQUESTS)
    assert line == "已放弃：约9月13号上午10点环贸的天才吧（原话：帮我约9月13号上午10点环贸的天才吧；天才吧那边我不去了）"


# --- superseded conditions, new ids, ids named first, dropped parts ---------------------------------

def test_a_superseded_bound_is_replaced_by_the_new_one():
    first = build_note(None, material([("我要给妈妈买个iPad，预算4000以内，只要银色或者深空灰。", "好的。")]), language=ZH)
    text = build_note(first, material([("预算改成5000以内吧。", "好的。")], start=1), language=ZH)
    (line,) = lines(text, note.REQUESTS)
    assert note.quotes(line) == ["我要给妈妈买个iPad", "只要银色或者深空灰", "预算改成5000以内吧"]
    assert "4000" not in text


def test_a_superseded_bound_in_a_parents_own_words_goes_too():
    parent = _parent(["为妈妈买iPad：预算4000以内（原话：我要给妈妈买个iPad）"])
    text = build_note(parent, material([("预算改成5000以内。", "好的。")]), language=ZH)
    (line,) = lines(text, note.REQUESTS)
    assert "4000" not in line and "预算改成5000以内" in note.quotes(line)


@pytest.mark.parametrize("said", ["预算4000以内吧。", "另外人数5人以内。"])
def test_a_restated_bound_or_one_about_something_else_replaces_nothing(said):
    first = build_note(None, material([("我要给妈妈买个iPad，预算4000以内。", "好的。")]), language=ZH)
    text = build_note(first, material([(said, "好的。")], start=1), language=ZH)
    assert "预算4000以内" in note.quotes(lines(text, note.REQUESTS)[0])


def test_a_new_order_id_opens_a_new_matter_and_a_done_one_asked_again_stays_done():
    first = build_note(None, material([("帮我取消订单66001。", "好的。", [
        ("cancel_order", '{"order": "66001"}', '{"status": "cancelled", "order_id": "66001"}', True)])]), language=ZH)
    again = build_note(first, material([("再帮我取消订单66001。", "好的。")], start=1), language=ZH)
    assert again == first
    second = build_note(first, material([("再帮我取消订单66002。", "好的。")], start=1), language=ZH)
    assert lines(second, note.REQUESTS) == ["已办结：取消订单66001（原话：帮我取消订单66001）",
                                            "取消订单66002（原话：再帮我取消订单66002）"]


def test_an_id_named_before_the_request_joins_the_matter_the_user_then_opens():
    turns = [("我上个月买的AirPods Pro 3左耳没声音了。订单号是88232。", "好的，我查一下。"),
             ("重置也不行。", "那需要维修。"), ("还是先修这副吧。", "好的。")]
    text = build_note(None, material(turns), language=ZH)
    assert lines(text, note.REQUESTS) == ["订单号是88232（原话：还是先修这副吧；订单号是88232）"]


def test_an_id_named_first_joins_no_dropped_matter_and_no_matter_already_listed():
    parent = _parent(["给妈妈买个iPad（原话：我要给妈妈买个iPad）"])
    turns = [("订单号是88232。", "好的。"), ("AirPods Max多少钱？", "3999元。"), ("先不买新的了。", "好的。"),
             ("iPad只要银色的。", "好的。")]
    text = build_note(parent, material(turns), language=ZH)
    assert "88232" not in text


def test_dropping_one_route_of_a_matter_keeps_the_matter_and_quotes_the_drop():
    turns = [("帮我寄修左耳，订单88232。", "好的。"),
             ("帮我约9月13号上午10点环贸的天才吧。", "约满了。",
              [("book_genius_bar", '{"order": "88232"}', '{"ok": false, "error": "该时段已被约满"}', False)]),
             ("天才吧那边我不去了。", "好的。")]
    text = build_note(None, material(turns), language=ZH)
    (line,) = lines(text, note.REQUESTS)
    assert not note.is_abandoned(line)
    assert note.quotes(line) == ["帮我寄修左耳，订单88232", "天才吧那边我不去了"]
    assert lines(text, note.TODOS) == ["寄修左耳，订单88232（原话：帮我寄修左耳，订单88232）"]


def test_dropping_what_names_the_matter_drops_it_whole():
    turns = [("帮我约9月13号上午10点环贸的天才吧。", "好的。"), ("天才吧那边我不去了。", "好的。")]
    (line,) = lines(build_note(None, material(turns), language=ZH), note.REQUESTS)
    assert note.is_abandoned(line)


def test_a_condition_on_another_part_of_a_matter_is_kept_as_new():
    first = build_note(None, material([("我要给妈妈买个iPad，只要银色或者深空灰。", "好的。")]), language=ZH)
    text = build_note(first, material([("对了，iPad的保护壳也只要银色或者深空灰的。", "明白。")], start=1), language=ZH)
    assert "对了，iPad的保护壳也只要银色或者深空灰的" in note.quotes(lines(text, note.REQUESTS)[0])
    same = build_note(first, material([("iPad只要银色或者深空灰。", "明白。")], start=1), language=ZH)
    assert same == first


def test_dropping_what_every_quote_of_a_matter_is_about_drops_it_whole():
    parent = _parent(["周末的安排（原话：帮我约9月13号上午10点环贸的天才吧）"])
    (line,) = lines(build_note(parent, material([("天才吧那边我不去了。", "好的。")]), language=ZH), note.REQUESTS)
    assert note.is_abandoned(line) and note.quotes(line)[-1] == "天才吧那边我不去了"


@pytest.mark.parametrize("value", ["维修费749元", "取件14:30", "保修期内"])
def test_any_looked_up_value_in_a_parents_own_words_goes(value):
    parent = _parent([f"寄修左耳，{value}，订单88232（原话：帮我寄修左耳）"])
    (line,) = lines(build_note(parent, material([]), language=ZH), note.REQUESTS)
    assert value not in line and "88232" in line


def test_a_label_is_cut_at_twenty_chinese_characters_and_at_48_english_ones_never_inside_a_word():
    zh_text = "帮我把这台用了三年的旧笔记本电脑的键盘和屏幕一起送去维修"
    assert make_label(zh_text, language=ZH) == "这台用了三年的旧笔记本电脑的键盘和屏幕一"
    en_text = "Please book a table by the window for four people on Friday evening at eight"
    assert make_label(en_text, language=EN) == "book a table by the window for four people on Friday"
