"""Each drift checker on hand-written positive cases and near-misses, in
Chinese and English (SPEC §8, seed 001 §4)."""

import pytest

from compaction.drift import checkers as c
from compaction.handoff import note as notes
from compaction.handoff import vocabulary as v
from compaction.handoff.material import Material

from .helpers import en, material, result, run, where, zh

R, T, N, P, D, DONE = (notes.REQUESTS, notes.TODOS, notes.NEXT_STEP, notes.PROGRESS, notes.DEAD_ENDS, notes.DONE)
sections = {R: "requests", T: "todos", N: "next_step", P: "progress", D: "dead_ends", DONE: "done"}

CONSENT_THEN_HOLD = material(
    ("我的AirPods Pro 3左耳没声音了，订单88232。", "已查到订单88232。"),
    ("想了想，天才吧那边我不去了，直接寄回你们店修吧。现在可以提交送修申请了，我明确同意办理。", "确认卡已弹出。"),
    ("寄修要自己付邮费吗？", "不用，我们提供到付。"),
    ("算了，申请还是先别提交，等我下周把包装准备好再说。", "好的，先不提交。"),
)
REPAIR_LINE = "左耳无声，寄回本店修（订单88232），并明确同意办理送修申请（原话：现在可以提交送修申请了，我明确同意办理）"


# ---------------------------------------------------------------- quote_not_verbatim

def test_a_quote_no_user_said_is_not_verbatim_and_names_the_closest_message():
    mat = material(("算了，申请还是先别提交，等我下周把包装准备好再说。", "好的。"))
    note = zh(**{R: ["暂缓：送修申请（原话：算了，申请先不提交了）"]})
    [finding] = run(c.QUOTE_NOT_VERBATIM, note, mat)
    assert (finding.kind, finding.section, finding.line, finding.message_ids) == ("wrong", R, 2, ("u0",))
    assert finding.subject == "算了，申请先不提交了"
    assert finding.detail == ("The note quotes the user as saying “算了，申请先不提交了”, but no user message contains "
                              "these words. The closest (u0) says “算了，申请还是先别提交，等我下周把包装准备好再说。”.")


def test_a_quote_with_different_whitespace_is_verbatim():
    mat = material(("算了，申请还是先别提交，等我下周把包装准备好再说。", "好的。"),
                   ("Please hold the claim\nuntil next week.", "OK."))
    note = zh(**{R: ["暂缓：送修申请（原话：算了， 申请还是 先别提交；Please hold  the claim until next week）"]})
    assert run(c.QUOTE_NOT_VERBATIM, note, mat) == []


def test_an_elided_quote_is_checked_piece_by_piece():
    mat = material(("算了，申请还是先别提交，等我下周把包装准备好再说。", "好的。"))
    assert run(c.QUOTE_NOT_VERBATIM, zh(**{R: ["暂缓（原话：算了……等我下周把包装准备好再说。）"]}), mat) == []
    assert len(run(c.QUOTE_NOT_VERBATIM, zh(**{R: ["暂缓（原话：算了……等我下个月再说）"]}), mat)) == 1


def test_the_assistants_words_quoted_as_the_users_are_not_verbatim():
    mat = material(("我的左耳没声音了", "建议您先重置耳机再试一次。"))
    [finding] = run(c.QUOTE_NOT_VERBATIM, zh(**{R: ["左耳无声（原话：建议您先重置耳机再试一次）"]}), mat)
    assert finding.message_ids == ("a0",) and finding.subject == "建议您先重置耳机再试一次"
    assert finding.detail == ("The note quotes the user as saying “建议您先重置耳机再试一次”, but these are the "
                              "assistant's or a tool's words (a0), not the user's.")


def test_a_quote_from_an_earlier_generations_material_is_verbatim():
    earlier = material(("只要银色或者深空灰。", "好的。"))
    mat = material(("寄修要多久？", "3到5个工作日。"), start=1)
    assert run(c.QUOTE_NOT_VERBATIM, zh(**{R: ["iPad颜色（原话：只要银色或者深空灰）"]}), mat, earlier=[earlier]) == []


def test_english_quote_positive_and_near_miss():
    mat = material(("Please hold off on the claim until next week.", "Understood."))
    assert where(run(c.QUOTE_NOT_VERBATIM, en(**{R: ['On hold: claim (quote: "hold the claim until Monday")']}),
                     mat)) == [(c.QUOTE_NOT_VERBATIM, R, 2)]
    assert run(c.QUOTE_NOT_VERBATIM, en(**{R: ['On hold: claim (quote: "hold off on the  claim")']}), mat) == []


# ---------------------------------------------------------------- retracted_consent

def test_a_consent_withdrawn_two_turns_later_is_a_retracted_consent():
    [finding] = run(c.RETRACTED_CONSENT, zh(**{R: [REPAIR_LINE]}), CONSENT_THEN_HOLD)
    assert (finding.kind, finding.section, finding.line) == ("wrong", R, 2)
    assert finding.message_ids == ("u1", "u3") and finding.subject == "我明确同意办理"
    assert finding.detail == ("This line still gives the user's go-ahead (“我明确同意办理”, u1), but the user withdrew or "
                              "put it on hold later (“申请还是先别提交”, u3) and has not given it again.")


def test_the_consent_survives_into_a_generation_whose_material_no_longer_holds_it():
    later = material(("寄修需要准备什么？", "原包装或者硬盒。"), start=4)
    note = zh(**{R: [REPAIR_LINE.replace("并明确", "并曾明确")]})
    assert where(run(c.RETRACTED_CONSENT, note, later, earlier=[CONSENT_THEN_HOLD])) == [(c.RETRACTED_CONSENT, R, 2)]


def test_a_consent_restated_after_the_hold_is_current():
    mat = material(*[(p.user_text, p.assistant_text) for p in CONSENT_THEN_HOLD.pairs],
                   ("包装准备好了，现在可以提交送修申请了，我同意办理。", "好的。"))
    note = zh(**{R: ["寄回本店修，同意办理送修申请（原话：包装准备好了，现在可以提交送修申请了，我同意办理）"]})
    assert run(c.RETRACTED_CONSENT, note, mat) == []


def test_a_short_go_ahead_right_after_the_hold_restates_it():
    mat = material(*[(p.user_text, p.assistant_text) for p in CONSENT_THEN_HOLD.pairs], ("好了，就这么办吧。", "好的。"))
    assert run(c.RETRACTED_CONSENT, zh(**{R: [REPAIR_LINE]}), mat) == []


def test_the_hold_line_itself_and_a_line_recording_the_hold_are_not_consents():
    note = zh(**{R: ["暂缓：送修申请先别提交（原话：算了，申请还是先别提交，等我下周把包装准备好再说）",
                     "送修申请：用户曾同意办理，后要求先别提交"]})
    assert run(c.RETRACTED_CONSENT, note, CONSENT_THEN_HOLD) == []


def test_a_hold_about_another_matter_does_not_withdraw_the_consent():
    mat = material(("现在可以提交送修申请了，我明确同意办理。", "好的。"),
                   ("另外给我妈买的iPad先别下单，她还没选好。", "好的。"))
    note = zh(**{R: ["寄回本店修（原话：现在可以提交送修申请了，我明确同意办理）"]})
    assert run(c.RETRACTED_CONSENT, note, mat) == []


def test_a_negated_consent_is_not_a_consent():
    mat = material(("我不同意现在提交申请。", "好的。"), ("先别提交。", "好的。"))
    assert run(c.RETRACTED_CONSENT, zh(**{R: ["送修申请（原话：我不同意现在提交申请）"]}), mat) == []


def test_a_next_step_taken_from_a_withdrawn_consent_is_wrong_too():
    note = zh(**{N: ["提交送修申请（原话：我明确同意办理）"]})
    assert where(run(c.RETRACTED_CONSENT, note, CONSENT_THEN_HOLD)) == [(c.RETRACTED_CONSENT, N, 6)]


def test_english_consent_withdrawn_and_restated():
    mat = material(("Yes, go ahead and file the claim for the cracked screen.", "Filing now."),
                   ("Actually, please hold off on the claim until I find the receipt.", "Okay, on hold."))
    note = en(**{R: ['Claim for the cracked screen '
                     '(quote: "Yes, go ahead and file the claim for the cracked screen")']})
    assert where(run(c.RETRACTED_CONSENT, note, mat)) == [(c.RETRACTED_CONSENT, R, 2)]
    restated = Material(mat.pairs + material(("Found the receipt, go ahead with the claim.", "Filed."), start=2).pairs)
    assert run(c.RETRACTED_CONSENT, note, restated) == []


# ---------------------------------------------------------------- abandoned_unmarked

ABANDONED_PURCHASE = material(
    ("AirPods Max现在多少钱？是不是太重了？", "AirPods Max售价3999元。"),
    ("先不买新的了，还是先修这副吧。", "好的。"),
)


def test_a_dropped_purchase_still_listed_is_abandoned_unmarked():
    note = zh(**{R: ["左耳AirPods Pro 3无声，寄回本店修", "用户考虑购买AirPods Max作为替代"]})
    [finding] = run(c.ABANDONED_UNMARKED, note, ABANDONED_PURCHASE)
    assert (finding.kind, finding.section, finding.line, finding.message_ids) == ("wrong", R, 3, ("u1",))
    assert finding.subject == "先不买新的了"
    assert finding.detail == ("The user dropped this matter (“先不买新的了”, u1), but the line still lists it without "
                              "marking it abandoned with the user's words.")


def test_a_marked_abandoned_matter_or_one_quoting_the_abandonment_is_fine():
    note = zh(**{R: ["已放弃：购买AirPods Max（原话：先不买新的了）"],
                 T: ["AirPods Max不再考虑（原话：先不买新的了，还是先修这副吧）"]})
    assert run(c.ABANDONED_UNMARKED, note, ABANDONED_PURCHASE) == []


def test_a_matter_asked_for_again_is_not_abandoned():
    mat = Material(ABANDONED_PURCHASE.pairs + material(("我还是想买AirPods Max，帮我下单吧。", "好的。"), start=2).pairs)
    assert run(c.ABANDONED_UNMARKED, zh(**{R: ["购买AirPods Max"]}), mat) == []


def test_an_abandonment_of_one_matter_leaves_other_lines_alone():
    mat = material(("天才吧那边我不去了，直接寄回你们店修吧。", "好的。"))
    note = zh(**{R: ["左耳无声，直接寄回本店修", "去天才吧检测"]})
    assert where(run(c.ABANDONED_UNMARKED, note, mat)) == [(c.ABANDONED_UNMARKED, R, 3)]


def test_english_abandonment_positive_and_near_miss():
    mat = material(("What would the premium seat upgrade cost on the London flight?", "$640 each way."),
                   ("Forget about the upgrade.", "Okay."))
    assert where(run(c.ABANDONED_UNMARKED, en(**{R: ["Premium seat upgrade, London flight"]}), mat)) == [
        (c.ABANDONED_UNMARKED, R, 2)]
    marked = en(**{R: ['Abandoned: premium seat upgrade (quote: "Forget about the upgrade.")']})
    assert run(c.ABANDONED_UNMARKED, marked, mat) == []


# ---------------------------------------------------------------- done_without_proof

def test_a_done_item_whose_submission_failed_has_no_proof():
    mat = material(("帮我提交送修申请。", "提交失败了。"), tools=[
        result(0, "t0", "lookup_order", '{"order": "88232"}', '{"order": "88232", "delivered_at": "2026-08-31"}'),
        result(0, "t1", "submit_ticket", '{"order": "88232"}', '{"error": "用户拒绝了确认卡"}', ok=False)])
    [finding] = run(c.DONE_WITHOUT_PROOF, zh(**{DONE: ["已提交送修申请（订单88232）"]}), mat)
    assert (finding.kind, finding.section, finding.line, finding.message_ids) == ("wrong", DONE, 12, ("t1",))
    assert finding.subject == "88232"
    assert finding.detail == ("No successful tool result returned 88232; done lists only what a tool confirmed, with "
                              "the id it returned. The call call-t1 (submit_ticket) failed: “{\"error\": \"用户拒绝了确认卡\"}”.")


def test_a_done_item_without_any_id_has_no_proof():
    mat = material(("帮我提交", "好的"), tools=[result(0, "t0", "submit_ticket", "{}", '{"ticket": "RMA-0913"}')])
    [finding] = run(c.DONE_WITHOUT_PROOF, zh(**{DONE: ["已提交送修申请"]}), mat)
    assert finding.detail == "This done item names no id, so no tool result can confirm it was done."
    assert (finding.subject, finding.message_ids) == ("", ())


def test_a_done_item_with_the_id_a_successful_tool_returned_is_proven():
    mat = material(("帮我提交送修申请。", "已提交。"), tools=[
        result(0, "t0", "submit_ticket", '{"order": "88232"}', '{"ticket": "RMA-20260903-0412", "status": "created"}')])
    assert run(c.DONE_WITHOUT_PROOF, zh(**{DONE: ["已提交送修申请，单号 RMA-20260903-0412"]}), mat) == []


def test_proof_from_an_earlier_generation_still_counts():
    earlier = material(("帮我提交", "好的"), tools=[result(0, "t0", "submit_ticket", "{}", '{"ticket": "RMA-0913"}')])
    mat = material(("寄修要多久？", "5天"), start=1)
    assert run(c.DONE_WITHOUT_PROOF, zh(**{DONE: ["已提交送修申请（RMA-0913）"]}), mat, earlier=[earlier]) == []


def test_english_lookup_echo_is_no_proof_but_a_reported_change_is():
    lookup = result(0, "t0", "get_reservation", '{"reservation_id": "K7QZ2M"}',
                    '{"reservation": "K7QZ2M", "seat": "23C"}')
    cancel = result(0, "t1", "cancel_reservation", '{"reservation_id": "K7QZ2M"}',
                    '{"reservation": "K7QZ2M", "status": "cancelled"}')
    note = en(**{DONE: ["Cancelled reservation K7QZ2M"]})
    assert where(run(c.DONE_WITHOUT_PROOF, note, material(("Cancel K7QZ2M", "Done."), tools=[lookup]))) == [
        (c.DONE_WITHOUT_PROOF, DONE, 12)]
    assert run(c.DONE_WITHOUT_PROOF, note, material(("Cancel K7QZ2M", "Done."), tools=[lookup, cancel])) == []


def test_a_result_without_ok_that_reports_an_error_is_no_proof():
    mat = material(("Cancel K7QZ2M", "Sorry."), tools=[
        result(0, "t0", "cancel_reservation", "{}", "error: upstream timeout for K7QZ2M-1", ok=None)])
    [finding] = run(c.DONE_WITHOUT_PROOF, en(**{DONE: ["Cancelled K7QZ2M-1"]}), mat)
    assert finding.message_ids == ("t0",)


# ---------------------------------------------------------------- tool_detail_in_requests

DELIVERY = material(
    ("我的AirPods Pro 3左耳没声音了，订单88232。", "订单88232已于2026-08-31签收，保修至2027-08-31，维修费约749元。"),
    tools=[result(0, "t0", "lookup_order", '{"order": "88232"}',
                  '{"order": "88232", "delivered_at": "2026-08-31", "warranty_until": "2027-08-31", "stock": "有货"}')])


def test_a_delivery_date_from_a_tool_in_user_requests_is_extra():
    note = zh(**{R: ["左耳无声，寄回本店修（订单88232，8月31日签收）"]})
    found = run(c.TOOL_DETAIL_IN_REQUESTS, note, DELIVERY)
    assert {(f.subject, f.line) for f in found} == {("8月31日", 2), ("签收", 2)}
    date = next(f for f in found if f.subject == "8月31日")
    assert date.kind == "extra" and date.message_ids == ("t0", "a0")
    assert date.section == R
    assert date.detail == ("“8月31日” in the user's requests comes from tool results or the assistant's answers "
                           "(t0, a0); the user never said it. Look-up details are looked up again, not kept as what "
                           "the user asked for.")


def test_stock_wording_and_an_assistants_price_in_user_requests_are_extra():
    note = zh(**{R: ["左耳无声，寄修（有货，维修费749元）"]})
    assert {f.subject for f in run(c.TOOL_DETAIL_IN_REQUESTS, note, DELIVERY)} == {"有货", "749元"}


def test_a_value_the_user_also_said_is_not_extra():
    mat = Material(DELIVERY.pairs + material(("对，8月31号签收的，现在还有货吗？", "有货。"), start=1).pairs,
                   DELIVERY.tool_results)
    note = zh(**{R: ["左耳无声，寄回本店修（订单88232，2026-08-31签收，有货）"]})
    assert run(c.TOOL_DETAIL_IN_REQUESTS, note, mat) == []



def test_a_looked_up_date_comes_from_the_texts_holding_it_in_its_year_or_in_none():
    mat = material(("签收日期是哪天？", "2027-08-31那天。"), ("另一单呢？", "8月31日签收。"),
                   tools=[result(0, "t0", "lookup_order", "{}", '{"delivered_at": "2026-08-31"}'),
                          result(1, "t1", "lookup_order", "{}", '{"delivered_at": "2027-08-31"}')])
    found = run(c.TOOL_DETAIL_IN_REQUESTS, zh(**{R: ["左耳无声（2026-08-31签收）", "另一单（8月31日）"]}), mat)
    assert {f.subject: f.message_ids for f in found if f.subject != "签收"} == {
        "2026-08-31": ("t0", "a1"), "8月31日": ("t0", "t1", "a0", "a1")}

def test_a_date_the_user_said_in_another_year_is_another_date():
    mat = Material(DELIVERY.pairs + material(("保修到2027-08-31对吧？", "对。"), start=1).pairs, DELIVERY.tool_results)
    note = zh(**{R: ["左耳无声，寄回本店修（订单88232，2026-08-31签收前买的）"]})
    assert [f.subject for f in run(c.TOOL_DETAIL_IN_REQUESTS, note, mat)] == ["2026-08-31", "签收"]


def test_order_numbers_quotes_and_other_sections_are_not_tool_details():
    note = zh(**{R: ["左耳无声，寄回本店修（订单88232）"], P: ["已查询订单，2026-08-31签收"]})
    assert run(c.TOOL_DETAIL_IN_REQUESTS, note, DELIVERY) == []


def test_english_tool_details_positive_and_near_miss():
    mat = material(("Where is order 55120?", "It was delivered on Aug 31 and the case is in stock."),
                   tools=[result(0, "t0", "get_order", '{"order": "55120"}', '{"delivered": "2026-08-31"}')])
    note = en(**{R: ["Replace the case for order 55120, delivered August 31, in stock"]})
    found = run(c.TOOL_DETAIL_IN_REQUESTS, note, mat)
    assert {f.subject for f in found} == {"August 31", "delivered", "in stock"}
    said = Material(mat.pairs + material(("Yes, it was delivered August 31, is it in stock?", "Yes."), start=1).pairs,
                    mat.tool_results)
    assert run(c.TOOL_DETAIL_IN_REQUESTS, en(**{R: ["Replace the case, delivered August 31, in stock"]}), said) == []


# ---------------------------------------------------------------- question_as_requirement

QUESTIONS = material(("寄修大概要多久？", "3到5个工作日。"), ("AirPods Pro 3现在有没有货？", "有货。"),
                     ("能不能帮我把申请提交了？", "好的。"))


def test_lines_that_only_record_questions_are_not_requirements():
    note = zh(**{R: ["左耳无声，寄回本店修", "用户询问寄修大概要多久", "AirPods Pro 3有没有货？"]})
    found = run(c.QUESTION_AS_REQUIREMENT, note, QUESTIONS)
    assert where(found) == [(c.QUESTION_AS_REQUIREMENT, R, 3), (c.QUESTION_AS_REQUIREMENT, R, 4)]
    assert found[0].kind == "extra" and found[0].message_ids == ("u0",)
    assert [f.subject for f in found] == ["用户询问寄修大概要多久", "AirPods Pro 3有没有货？"]
    assert found[1].message_ids == ("u1",)
    assert found[0].detail == ("This line only records a question the user asked. Asking, comparing or learning is "
                               "not something to be done, so it does not belong in the user's requests.")


def test_a_question_phrased_as_a_request_is_a_requirement():
    note = zh(**{R: ["用户要求提交送修申请（原话：能不能帮我把申请提交了？）",
                     "用户询问能否代为提交（原话：能不能帮我把申请提交了？）"]})
    assert run(c.QUESTION_AS_REQUIREMENT, note, QUESTIONS) == []


def test_hold_lines_and_statements_are_not_questions():
    note = zh(**{R: ["暂缓：送修申请先别提交，等下周再说？", "为妈妈买iPad，预算4000以内",
                     "左耳无声，先用右耳，下个月再决定怎么修"]})
    assert run(c.QUESTION_AS_REQUIREMENT, note, QUESTIONS) == []


def test_english_question_record_positive_and_near_miss():
    mat = material(("Are the earbuds covered by warranty?", "Yes."), ("Can you file the claim for me?", "Sure."))
    assert where(run(c.QUESTION_AS_REQUIREMENT, en(**{R: ["User asked whether the earbuds are covered by warranty"]}),
                     mat)) == [(c.QUESTION_AS_REQUIREMENT, R, 2)]
    assert run(c.QUESTION_AS_REQUIREMENT,
               en(**{R: ['User wants the claim filed (quote: "Can you file the claim for me?")']}), mat) == []


# ---------------------------------------------------------------- assistant_ask_as_todo

SERIAL = material(("我的左耳没声音了。", "为了登记送修，请提供设备序列号，在设置-通用-关于本机里可以看到。"),
                  ("序列号在哪里看？", "在设置-通用-关于本机。"))


def test_a_to_do_only_the_assistant_asked_for_is_extra():
    [finding] = run(c.ASSISTANT_ASK_AS_TODO, zh(**{T: ["落实设备序列号，用户尚未提供"]}), SERIAL)
    assert (finding.kind, finding.section, finding.line, finding.message_ids) == ("extra", T, 4, ("a0",))
    assert finding.subject == "落实设备序列号，用户尚未提供"
    assert finding.detail == ("Only the assistant asked for this (a0); the user never asked for it to be done, so it "
                              "is not a to-do.")


def test_a_to_do_that_waits_on_the_user_is_an_assistants_ask_even_without_its_message():
    assert len(run(c.ASSISTANT_ASK_AS_TODO, zh(**{T: ["等待用户提供包装照片"]}), SERIAL)) == 1


def test_a_to_do_the_user_asked_for_is_a_to_do():
    mat = material(("帮我提交送修申请。", "请确认是否现在提交送修申请？"))
    assert run(c.ASSISTANT_ASK_AS_TODO, zh(**{T: ["提交送修申请"]}), mat) == []


def test_english_assistant_ask_positive_and_near_miss():
    mat = material(("My screen cracked.", "Could you send a photo of the receipt for the phone?"),
                   ("Please file the claim for the screen.", "Could you confirm you want the claim filed now?"))
    assert where(run(c.ASSISTANT_ASK_AS_TODO, en(**{T: ["Get the receipt photo for the phone"]}), mat)) == [
        (c.ASSISTANT_ASK_AS_TODO, T, 4)]
    assert run(c.ASSISTANT_ASK_AS_TODO, en(**{T: ["File the claim for the screen"]}), mat) == []


# ---------------------------------------------------------------- lost_constraint

IPAD = material(("我还想给妈妈买个iPad，预算4000以内，只要银色或者深空灰。", "好的。"))


def test_an_only_turned_into_a_preference_is_a_lost_constraint():
    note = zh(**{R: ["为妈妈买iPad，预算4000以内，银色或深空灰优先"]})
    [finding] = run(c.LOST_CONSTRAINT, note, IPAD)
    assert (finding.kind, finding.section, finding.line, finding.message_ids) == ("lost", R, 1, ("u0",))
    assert finding.subject == "只要银色或者深空灰"
    # The detail names the condition, the message that stated it and its operator.
    assert finding.detail == ("The user's condition “只要银色或者深空灰” (u0) is missing from this note: no line keeps "
                              "“只要” with its values, and the user has not withdrawn it.")


def test_conditions_kept_verbatim_or_with_their_operator_and_values_are_kept():
    assert run(c.LOST_CONSTRAINT, zh(**{R: ["为妈妈买iPad（原话：预算4000以内， 只要银色或者深空灰）"]}), IPAD) == []
    assert run(c.LOST_CONSTRAINT, zh(**{R: ["为妈妈买iPad：预算4000以内，只要银色或深空灰"]}), IPAD) == []


def test_a_condition_kept_by_the_parent_and_dropped_is_lost_at_the_parents_section():
    parent = zh(**{R: ["左耳无声"], T: ["为妈妈买iPad，预算4000以内（原话：预算4000以内）"]})
    mat = material(("寄修要多久？", "3到5个工作日。"), start=1)
    [finding] = run(c.LOST_CONSTRAINT, zh(**{R: ["左耳无声"], T: ["为妈妈买iPad"]}), mat, parent=parent, earlier=[IPAD])
    assert (finding.section, finding.line, finding.message_ids) == (T, 3, ("u0",))
    assert finding.detail.startswith("The user's condition “预算4000以内” (u0) is missing from this note although the "
                                     "previous note kept it: ")


def test_a_superseded_bound_need_not_be_kept_but_the_new_one_must():
    mat = Material(IPAD.pairs + material(("预算改成5000以内吧。", "好的。"), start=1).pairs)
    kept_new = zh(**{R: ["为妈妈买iPad：预算改成5000以内，只要银色或者深空灰"]})
    assert run(c.LOST_CONSTRAINT, kept_new, mat) == []
    kept_old = zh(**{R: ["为妈妈买iPad：预算4000以内，只要银色或者深空灰"]})
    assert [f.subject for f in run(c.LOST_CONSTRAINT, kept_old, mat)] == ["预算改成5000以内吧"]


def test_a_hold_the_user_lifted_need_not_be_kept():
    mat = Material(CONSENT_THEN_HOLD.pairs + material(("包装准备好了，现在可以提交了。", "好的。"), start=4).pairs)
    assert run(c.LOST_CONSTRAINT, zh(**{R: ["寄回本店修，提交送修申请"]}), mat) == []
    held = zh(**{R: ["寄回本店修"]})
    assert [f.subject for f in run(c.LOST_CONSTRAINT, held, CONSENT_THEN_HOLD)] == ["申请还是先别提交"]


def test_questions_and_abandoned_matters_carry_no_conditions():
    mat = material(("能不能不要寄快递？", "可以到店。"), ("AirPods Max只要银色的，多少钱？", "3999元。"),
                   ("算了，Max不买了。", "好的。"))
    assert run(c.LOST_CONSTRAINT, zh(**{R: ["左耳无声"]}), mat) == []


def test_english_only_positive_and_near_miss():
    mat = material(("I only want a window seat on the Boston flight.", "Noted."))
    assert where(run(c.LOST_CONSTRAINT, en(**{R: ["Window seat preferred, Boston flight"]}), mat)) == [
        (c.LOST_CONSTRAINT, R, 1)]
    assert run(c.LOST_CONSTRAINT, en(**{R: ["Only a window seat on the Boston flight"]}), mat) == []


# ---------------------------------------------------------------- growth_without_new_matters

PARENT = zh(**{R: ["左耳无声，寄回本店修（订单88232）"]})
LONGER = zh(**{R: ["左耳无声，寄回本店修（订单88232）", "用户询问寄修大概要多久"]})
ONLY_QUESTIONS = material(("寄修大概要多久？", "3到5个工作日。"), ("邮费谁出？", "到付。"),
                          tools=[result(0, "t0", "repair_eta", "{}", '{"days": "3-5"}')], start=10)


def test_a_note_that_grew_on_questions_alone_grew_without_new_matters():
    [finding] = run(c.GROWTH_WITHOUT_NEW_MATTERS, LONGER, ONLY_QUESTIONS, parent=PARENT)
    assert (finding.kind, finding.section, finding.line) == ("length", None, None)
    assert finding.message_ids == ("u10", "u11")
    assert finding.subject == f"{len(PARENT)}→{len(LONGER)}"
    assert f"from {len(PARENT)} to {len(LONGER)} characters" in finding.detail


def test_a_note_that_did_not_grow_is_fine_and_a_first_generation_never_grew():
    assert run(c.GROWTH_WITHOUT_NEW_MATTERS, PARENT, ONLY_QUESTIONS, parent=PARENT) == []
    assert run(c.GROWTH_WITHOUT_NEW_MATTERS, LONGER, ONLY_QUESTIONS, parent=LONGER + "\n- 补一行") == []
    assert run(c.GROWTH_WITHOUT_NEW_MATTERS, LONGER, ONLY_QUESTIONS, parent=None) == []


@pytest.mark.parametrize("user, tools", [
    ("我还想给妈妈买个iPad，预算4000以内。", ()),  # a new matter with a condition
    ("算了，申请还是先别提交。", ()),  # a hold
    ("我的右耳也开始有杂音了。", ()),  # a new statement
    ("好的", [result(11, "t1", "submit_ticket", "{}", '{"error": "rejected"}', ok=False)]),  # a dead end
    ("好的", [result(11, "t1", "submit_ticket", "{}", '{"ticket": "RMA-0913"}')]),  # a done item
])
def test_growth_with_something_new_is_fine(user, tools):
    mat = Material(ONLY_QUESTIONS.pairs + material((user, "好的。"), start=11).pairs,
                   ONLY_QUESTIONS.tool_results + tuple(tools))
    assert run(c.GROWTH_WITHOUT_NEW_MATTERS, LONGER, mat, parent=PARENT) == []


def test_a_hold_the_parent_already_keeps_is_no_new_matter():
    parent = zh(**{R: ["暂缓：送修申请先别提交（原话：算了，申请还是先别提交，等我下周把包装准备好再说）"]})
    longer = zh(**{R: ["暂缓：送修申请先别提交（原话：算了，申请还是先别提交，等我下周把包装准备好再说）",
                       "用户询问寄修大概要多久"]})
    restated = Material(ONLY_QUESTIONS.pairs + material(("再说一次，申请先别提交。", "好的。"), start=11).pairs)
    assert len(run(c.GROWTH_WITHOUT_NEW_MATTERS, longer, restated, parent=parent)) == 1
    fresh = Material(ONLY_QUESTIONS.pairs + material(("iPad先别下单。", "好的。"), start=11).pairs)
    assert run(c.GROWTH_WITHOUT_NEW_MATTERS, longer, fresh, parent=parent) == []


def test_an_acknowledgement_is_no_new_matter():
    mat = Material(ONLY_QUESTIONS.pairs + material(("好的，谢谢。", "不客气。"), start=11).pairs)
    assert len(run(c.GROWTH_WITHOUT_NEW_MATTERS, LONGER, mat, parent=PARENT)) == 1


def test_english_growth_positive_and_near_miss():
    parent = en(**{R: ["Claim for the cracked screen"]})
    longer = en(**{R: ["Claim for the cracked screen", "User asked how long repairs take"]})
    questions = material(("How long do repairs take?", "About a week."), start=5)
    assert len(run(c.GROWTH_WITHOUT_NEW_MATTERS, longer, questions, parent=parent)) == 1
    new = material(("My laptop was damaged in the same accident, please add it to the claim.", "Added."), start=5)
    assert run(c.GROWTH_WITHOUT_NEW_MATTERS, longer, new, parent=parent) == []


# ---------------------------------------------------------------- the entry point

def test_findings_are_sorted_deterministically_and_serialise_with_the_spec_keys():
    note = zh(**{R: [REPAIR_LINE, "用户询问寄修要不要自己付邮费"], DONE: ["已提交送修申请"]})
    first = c.check_note(note, parent=None, material=CONSENT_THEN_HOLD,
                         chain=c.ChainHistory.from_materials([CONSENT_THEN_HOLD]))
    again = c.check_note(note, parent=None, material=CONSENT_THEN_HOLD, chain=c.ChainHistory())
    assert first == again
    assert [(f.line, f.code) for f in first] == [
        (1, c.LOST_CONSTRAINT),  # the hold 申请还是先别提交 is missing from the requests
        (2, c.RETRACTED_CONSENT), (3, c.QUESTION_AS_REQUIREMENT), (13, c.DONE_WITHOUT_PROOF)]
    assert set(first[1].as_dict()) >= {"kind", "code", "section", "line", "message_ids", "detail"}
    assert first[1].as_dict()["message_ids"] == ["u1", "u3"]


def test_every_code_has_a_checker_and_a_kind_from_the_spec():
    assert list(c.CHECKERS) == list(c.CODES)
    assert set(c.CODES.values()) == {"wrong", "extra", "lost", "length"}


def test_summary_tags_are_unwrapped_and_a_malformed_note_is_refused():
    note = "<summary>\n" + zh(**{R: [REPAIR_LINE]}) + "\n</summary>"
    assert [f.code for f in c.check_note(note, parent=None, material=CONSENT_THEN_HOLD, chain=c.ChainHistory(),
                                         codes=[c.RETRACTED_CONSENT])] == [c.RETRACTED_CONSENT]
    with pytest.raises(notes.MalformedNote):
        c.check_note("just prose", parent=None, material=CONSENT_THEN_HOLD, chain=c.ChainHistory())
    with pytest.raises(ValueError, match=r"^unknown drift code\(s\): nope, zzz$"):
        c.check_note(note, parent=None, material=CONSENT_THEN_HOLD, chain=c.ChainHistory(), codes=["zzz", "nope"])


def test_a_scope_vocabulary_teaches_the_checkers_new_words():
    mat = material(("现在可以提交送修申请了，我明确同意办理。", "好的。"), ("送修申请先挂起。", "好的。"))
    note = zh(**{R: ["寄回本店修（原话：现在可以提交送修申请了，我明确同意办理）"]})
    chain = c.ChainHistory.from_materials([mat])
    assert c.check_note(note, parent=None, material=mat, chain=chain, codes=[c.RETRACTED_CONSENT]) == []
    scoped = v.DEFAULT.extended({v.HOLD: {"zh": ["挂起"]}})
    assert len(c.check_note(note, parent=None, material=mat, chain=chain, vocabulary=scoped,
                            codes=[c.RETRACTED_CONSENT])) == 1


# ---------------------------------------------------------------- rules the builder shares

def test_a_new_order_id_alone_is_a_new_matter_and_the_same_id_is_not():
    parent = zh(**{R: ["已办结：取消订单66001（原话：帮我取消订单66001）"], DONE: ["cancel_order 成功，单号 66001"]})
    longer = zh(**{R: ["已办结：取消订单66001（原话：帮我取消订单66001）", "取消订单66002（原话：再帮我取消订单66002）"],
                   DONE: ["cancel_order 成功，单号 66001"]})
    assert run(c.GROWTH_WITHOUT_NEW_MATTERS, longer, material(("再帮我取消订单66002。", "好的。")), parent=parent) == []
    assert len(run(c.GROWTH_WITHOUT_NEW_MATTERS, longer, material(("再帮我取消订单66001。", "好的。")),
                   parent=parent)) == 1


def test_taking_up_a_dropped_matter_again_is_new_and_asking_about_it_is_not():
    earlier = material(("我要给妈妈买个iPad。", "好的。"), ("iPad不买了。", "好的。"))
    parent = zh(**{R: ["已放弃：给妈妈买个iPad（原话：我要给妈妈买个iPad；iPad不买了）"]})
    longer = zh(**{R: ["给妈妈买个iPad（原话：我要给妈妈买个iPad）"], T: ["给妈妈买个iPad（原话：我要给妈妈买个iPad）"]})
    again = material(("我要给妈妈买个iPad，还是买吧。", "好的。"), start=2)
    assert run(c.GROWTH_WITHOUT_NEW_MATTERS, longer, again, parent=parent, earlier=[earlier]) == []
    asked = material(("iPad多少钱？", "2999元。"), start=2)
    assert len(run(c.GROWTH_WITHOUT_NEW_MATTERS, longer, asked, parent=parent, earlier=[earlier])) == 1


def test_a_condition_on_another_part_is_lost_when_only_the_colours_are_kept():
    mat = material(("我要给妈妈买个iPad，只要银色或者深空灰。", "好的。"), ("对了，iPad的保护壳也只要银色或者深空灰的。", "明白。"))
    colours = zh(**{R: ["为妈妈买iPad（原话：我要给妈妈买个iPad；只要银色或者深空灰）"]})
    assert [f.subject for f in run(c.LOST_CONSTRAINT, colours, mat)] == ["iPad的保护壳也只要银色或者深空灰的"]
    case = zh(**{R: ["为妈妈买iPad，保护壳也只要银色或者深空灰（原话：我要给妈妈买个iPad；只要银色或者深空灰）"]})
    assert run(c.LOST_CONSTRAINT, case, mat) == []


def test_a_hold_asked_as_a_question_withdraws_nothing():
    mat = material(("现在可以提交送修申请了，我明确同意办理。", "好的。"), ("申请能不能先别提交？", "可以的。"))
    assert run(c.RETRACTED_CONSENT, zh(**{R: ["寄回本店修（原话：现在可以提交送修申请了，我明确同意办理）"]}), mat) == []
    held = material(("现在可以提交送修申请了，我明确同意办理。", "好的。"), ("申请先别提交。", "好的。"))
    assert len(run(c.RETRACTED_CONSENT, zh(**{R: ["寄回本店修（原话：现在可以提交送修申请了，我明确同意办理）"]}), held)) == 1


def test_a_negated_consent_is_a_hold_that_withdraws_the_go_ahead():
    mat = material(("现在可以提交送修申请了，我明确同意办理。", "好的。"), ("送修申请我不再同意了。", "好的。"))
    assert len(run(c.RETRACTED_CONSENT, zh(**{R: ["寄回本店修（原话：现在可以提交送修申请了，我明确同意办理）"]}), mat)) == 1


def test_a_negated_abandonment_drops_nothing():
    mat = material(("What would the premium seat upgrade cost?", "$640."), ("Don't forget about the upgrade.", "OK."))
    assert run(c.ABANDONED_UNMARKED, en(**{R: ["Premium seat upgrade"]}), mat) == []


# ---------------------------------------------------------------- near-misses at each threshold

def test_the_question_proof_needs_shared_terms_worth_two():
    mat = material(("寄修大概要多久？", "3到5个工作日。"), ("充电盒怎么充电？", "用线充。"))
    [two] = run(c.QUESTION_AS_REQUIREMENT, zh(**{R: ["用户询问寄修要多久"]}), mat)
    assert two.message_ids == ("u0",)  # 寄修 + 多久 (a question word, still a term): worth 2
    [one] = run(c.QUESTION_AS_REQUIREMENT, zh(**{R: ["用户询问充电器寄出"]}), mat)
    assert one.message_ids == ()  # 充电 alone: worth 1


def test_an_assistant_ask_needs_shared_terms_worth_two():
    mat = material(("我的左耳没声音了。", "请提供设备序列号。"))
    assert where(run(c.ASSISTANT_ASK_AS_TODO, zh(**{T: ["落实序列号"]}), mat)) == [(c.ASSISTANT_ASK_AS_TODO, T, 4)]
    assert run(c.ASSISTANT_ASK_AS_TODO, zh(**{T: ["设备保修卡寄出"]}), mat) == []  # 设备 alone: worth 1


def test_growing_by_one_character_without_news_is_growth():
    longer = PARENT.replace("（订单88232）", "（订单88232）。")
    assert len(longer) == len(PARENT) + 1
    assert len(run(c.GROWTH_WITHOUT_NEW_MATTERS, longer, ONLY_QUESTIONS, parent=PARENT)) == 1


def test_a_single_digit_amount_is_too_common_to_be_a_tool_detail_but_two_digits_are_not():
    mat = material(("寄修要多久？", "一般3天，最多12天。"))
    assert run(c.TOOL_DETAIL_IN_REQUESTS, zh(**{R: ["寄修左耳，3天内寄回"]}), mat) == []
    assert [f.subject for f in run(c.TOOL_DETAIL_IN_REQUESTS, zh(**{R: ["寄修左耳，12天内寄回"]}), mat)] == ["12天"]


def test_a_consent_line_without_a_quote_needs_a_consent_about_its_matter():
    mat = material(("现在可以提交送修申请了，我明确同意办理。", "好的。"), ("算了，申请还是先别提交。", "好的。"))
    assert len(run(c.RETRACTED_CONSENT, zh(**{R: ["送修申请：用户同意提交"]}), mat)) == 1
    assert run(c.RETRACTED_CONSENT, zh(**{R: ["保护壳的申请：用户同意购买"]}), mat) == []  # 申请 alone: worth 1


# ------------------------------------------------ every line is checked (issue 18)

def test_a_wrong_quote_after_a_verbatim_one_is_still_found():
    mat = material(("算了，申请还是先别提交，等我下周把包装准备好再说。", "好的。"))
    note = zh(**{R: ["暂缓（原话：算了，申请还是先别提交）", "暂缓：送修申请（原话：算了，申请先不提交了）"]})
    assert where(run(c.QUOTE_NOT_VERBATIM, note, mat)) == [(c.QUOTE_NOT_VERBATIM, R, 3)]


def test_a_withdrawn_consent_after_a_plain_line_is_still_found():
    assert where(run(c.RETRACTED_CONSENT, zh(**{R: ["左耳无声", REPAIR_LINE]}), CONSENT_THEN_HOLD)) == [
        (c.RETRACTED_CONSENT, R, 3)]


def test_a_done_item_without_proof_after_a_proven_one_is_still_found():
    mat = material(("帮我提交", "好的"), tools=[result(0, "t0", "submit_ticket", "{}", '{"ticket": "RMA-0913"}')])
    found = run(c.DONE_WITHOUT_PROOF, zh(**{DONE: ["已提交送修申请（RMA-0913）", "已提交退款申请"]}), mat)
    assert [(f.code, f.section) for f in found] == [(c.DONE_WITHOUT_PROOF, DONE)]
    assert found[0].line == 13


def test_tool_details_after_a_hold_line_are_still_found():
    note = zh(**{R: ["暂缓：送修申请先别提交（原话：算了，申请还是先别提交）", "左耳无声，寄回本店修（订单88232，8月31日签收）"]})
    assert {(f.subject, f.line) for f in run(c.TOOL_DETAIL_IN_REQUESTS, note, DELIVERY)} == {("8月31日", 3),
                                                                                          ("签收", 3)}


def test_a_question_line_after_a_hold_line_is_still_found_with_the_message_it_quotes():
    note = zh(**{R: ["暂缓：送修申请先别提交（原话：算了，申请还是先别提交）", "用户询问寄修多久（原话：寄修大概要多久）"]})
    found = run(c.QUESTION_AS_REQUIREMENT, note, QUESTIONS)
    assert [(f.line, f.message_ids) for f in found] == [(3, ("u0",))]


def test_an_assistants_ask_after_a_real_to_do_is_still_found():
    found = run(c.ASSISTANT_ASK_AS_TODO, zh(**{T: ["提交送修申请", "落实设备序列号，用户尚未提供"]}), SERIAL)
    assert [(f.line, f.message_ids) for f in found] == [(5, ("a0",))]


def test_every_condition_the_parent_kept_must_stay_not_only_the_last():
    parent = zh(**{R: ["左耳无声，预算4000以内（原话：预算4000以内）"], T: ["为妈妈买iPad，只要银色（原话：只要银色）"]})
    mat = material(("寄修要多久？", "3到5个工作日。"), start=1)
    found = run(c.LOST_CONSTRAINT, zh(**{R: ["左耳无声"], T: ["为妈妈买iPad"]}), mat, parent=parent,
                earlier=[material(("预算4000以内，只要银色。", "好的。"))])
    assert sorted(f.section for f in found) == sorted([R, T])


def test_a_condition_the_parent_recorded_as_a_dead_end_need_not_stay():
    parent = zh(**{R: ["左耳无声"], D: ["只要银色的iPad：已停产（原话：只要银色）"]})
    mat = material(("寄修要多久？", "3到5个工作日。"), start=1)
    assert run(c.LOST_CONSTRAINT, zh(**{R: ["左耳无声"]}), mat, parent=parent,
               earlier=[material(("只要银色。", "好的。"))]) == []


# ---------------------------------------------------------------- each rule's edges (issue 18: mutants)

def test_a_wrong_fragment_after_a_verbatim_one_in_the_same_quote_is_still_found():
    mat = material(("算了，申请还是先别提交，等我下周把包装准备好再说。", "好的。"))
    note = zh(**{R: ["暂缓（原话：算了，申请还是先别提交；申请先不提交了）"]})
    assert [(f.line, f.subject) for f in run(c.QUOTE_NOT_VERBATIM, note, mat)] == [(2, "申请先不提交了")]


def test_words_others_said_name_at_most_three_of_their_messages():
    said = "建议您先重置耳机再试一次"
    mat = material(("左耳没声音了", said + "。"), ("还是不行", said + "吧。"), ("重置过了", said + "呢。"),
                   ("没用", "好的。"), tools=[result(3, "t3", "advice", "{}", f'{{"advice": "{said}"}}')])
    [finding] = run(c.QUOTE_NOT_VERBATIM, zh(**{R: [f"左耳无声（原话：{said}）"]}), mat)
    assert finding.message_ids == ("a0", "a1", "a2")
    assert finding.detail == (f"The note quotes the user as saying “{said}”, but these are the assistant's or a "
                              f"tool's words (a0, a1, a2), not the user's.")


def test_a_quote_like_nothing_anyone_said_names_no_message():
    mat = material(("左耳没声音了", "好的。"))
    [finding] = run(c.QUOTE_NOT_VERBATIM, zh(**{R: ["左耳无声（原话：Please ship it tomorrow）"]}), mat)
    assert finding.message_ids == ()
    assert finding.detail == ("The note quotes the user as saying “Please ship it tomorrow”, but no user message "
                              "contains these words.")


def test_consents_recorded_as_abandoned_or_outside_the_go_ahead_sections_are_not_retracted_consents():
    quote = "（原话：现在可以提交送修申请了，我明确同意办理）"
    assert run(c.RETRACTED_CONSENT, zh(**{R: ["已放弃：送修申请" + quote]}), CONSENT_THEN_HOLD) == []
    assert run(c.RETRACTED_CONSENT, zh(**{D: ["送修申请未提交" + quote], DONE: ["确认卡已弹出" + quote]}),
               CONSENT_THEN_HOLD) == []


def test_a_retracted_consent_is_found_after_every_kind_of_line_that_is_not_one():
    lines = ["暂缓：送修申请（原话：算了，申请还是先别提交）",  # a hold line
             "申请先别提交，等包装准备好",  # its own words hold
             "同意办理保护壳的订单",  # a consent about nothing the user consented to
             "确认寄回本店修（原话：直接寄回你们店修吧）",  # no go-ahead: a request
             REPAIR_LINE]
    mat = material(*[(p.user_text, p.assistant_text) for p in CONSENT_THEN_HOLD.pairs[:3]],
                   ("邮费到付的话，同意寄回你们店修。", "好的。"), *[(p.user_text, p.assistant_text)
                                                            for p in CONSENT_THEN_HOLD.pairs[3:]])
    assert where(run(c.RETRACTED_CONSENT, zh(**{R: lines}), mat)) == [(c.RETRACTED_CONSENT, R, 6)]


def test_the_consent_a_line_quotes_is_the_one_that_was_withdrawn_whatever_else_the_line_says():
    # The line names nothing of the matter in its own words: only its quote ties it to u1's consent,
    # and the hold (u3) names the matter of u1's message, not of the line.
    [finding] = run(c.RETRACTED_CONSENT, zh(**{R: ["办理（原话：我明确同意办理）"]}), CONSENT_THEN_HOLD)
    assert finding.message_ids == ("u1", "u3")


def test_a_line_quoting_two_consents_is_anchored_at_the_later_one():
    mat = material(("可以寄回你们店修，我同意寄修。", "好的。"), ("现在可以提交送修申请了，我明确同意办理。", "确认卡已弹出。"),
                   ("算了，申请还是先别提交。", "好的。"))
    [finding] = run(c.RETRACTED_CONSENT, zh(**{R: ["送修申请（原话：我明确同意办理；我同意寄修）"]}), mat)
    assert finding.message_ids == ("u1", "u2")
    [finding] = run(c.RETRACTED_CONSENT, zh(**{R: ["送修申请（原话：我同意寄修；我明确同意办理）"]}), mat)
    assert finding.message_ids == ("u1", "u2")


def test_a_consent_quote_no_user_said_falls_back_to_the_consent_about_the_same_matter():
    [finding] = run(c.RETRACTED_CONSENT, zh(**{R: ["提交送修申请（原话：我同意提交送修申请）"]}), CONSENT_THEN_HOLD)
    assert finding.message_ids == ("u1", "u3")


def test_an_unquoted_consent_needs_terms_worth_two_shared_with_the_users_consent():
    mat = material(("Yes, go ahead and file the claim.", "Filing it."), ("Please hold off on the claim until next week.", "OK."))
    assert where(run(c.RETRACTED_CONSENT, en(**{R: ["Go ahead: claim"]}), mat)) == [(c.RETRACTED_CONSENT, R, 2)]


def test_an_abandoned_matter_named_under_progress_or_dead_ends_is_not_unmarked():
    note = zh(**{P: ["用户考虑购买AirPods Max作为替代"], D: ["AirPods Max太重，用户考虑购买"]})
    assert run(c.ABANDONED_UNMARKED, note, ABANDONED_PURCHASE) == []


def test_an_unmarked_abandoned_matter_is_found_after_every_kind_of_line_that_is_not_one():
    note = zh(**{R: ["已放弃：购买AirPods Max（原话：先不买新的了）",  # marked
                     "AirPods Max不再考虑（原话：先不买新的了，还是先修这副吧）",  # quoting the abandonment
                     "左耳AirPods Pro 3无声，先修这副",  # about nothing dropped
                     "用户考虑购买AirPods Max作为替代"]})
    assert where(run(c.ABANDONED_UNMARKED, note, ABANDONED_PURCHASE)) == [(c.ABANDONED_UNMARKED, R, 5)]


def test_a_matter_dropped_by_name_and_asked_for_again_is_not_abandoned():
    mat = material(("保护壳先不买了。", "好的。"), ("还是帮我下单那个iPad保护壳吧。", "好的，已下单。"))
    assert run(c.ABANDONED_UNMARKED, zh(**{R: ["购买iPad保护壳"]}), mat) == []
    dropped = material(("保护壳先不买了。", "好的。"))
    assert where(run(c.ABANDONED_UNMARKED, zh(**{R: ["购买iPad保护壳"]}), dropped)) == [(c.ABANDONED_UNMARKED, R, 2)]


def test_a_done_item_naming_two_ids_no_result_returned_names_both():
    mat = material(("帮我提交", "好的"), tools=[result(0, "t0", "submit_ticket", "{}", '{"ok": false}', ok=False)])
    [finding] = run(c.DONE_WITHOUT_PROOF, zh(**{DONE: ["已提交送修申请RMA-0913和RMA-0914"]}), mat)
    assert finding.subject == "RMA-0913, RMA-0914"
    assert finding.detail.startswith("No successful tool result returned RMA-0913, RMA-0914; done lists only")


def test_a_to_do_the_user_asked_for_sharing_terms_worth_two_is_the_users():
    mat = material(("我的左耳没声音了。", "为了登记送修，请提供设备序列号。"), ("帮我登记序列号。", "在设置-通用-关于本机。"))
    assert run(c.ASSISTANT_ASK_AS_TODO, zh(**{T: ["序列号"]}), mat) == []


def test_an_assistants_ask_after_a_to_do_both_asked_for_is_still_found():
    mat = material(("我的左耳没声音了。", "为了登记送修，请提供设备序列号。"), ("帮我登记序列号。", "请提供购买凭证照片。"))
    found = run(c.ASSISTANT_ASK_AS_TODO, zh(**{T: ["序列号", "购买凭证照片"]}), mat)
    assert [(f.line, f.message_ids) for f in found] == [(5, ("a1",))]


def test_an_assistants_ask_names_the_last_three_messages_that_asked():
    ask = "请提供设备序列号。"
    mat = material(*[(f"第{n}次：左耳没声音了。", ask) for n in "一二三四"])
    [finding] = run(c.ASSISTANT_ASK_AS_TODO, zh(**{T: ["提供设备序列号"]}), mat)
    assert finding.message_ids == ("a0", "a1", "a2", "a3")
    assert finding.detail == ("Only the assistant asked for this (a1, a2, a3); the user never asked for it to be "
                              "done, so it is not a to-do.")


def test_a_to_do_waiting_on_the_user_without_an_asking_message_names_none():
    [finding] = run(c.ASSISTANT_ASK_AS_TODO, zh(**{T: ["等待用户提供包装照片"]}), material(("左耳没声音了", "好的。")))
    assert finding.message_ids == ()
    assert finding.detail == ("Only the assistant asked for this; the user never asked for it to be done, so it is "
                              "not a to-do.")


def test_question_lines_under_to_dos_or_marked_abandoned_are_not_question_requirements():
    mat = material(("What would the premium seat upgrade cost?", "$640."), ("Forget about the upgrade.", "Okay."))
    assert run(c.QUESTION_AS_REQUIREMENT, en(**{R: ["Abandoned: user asked what the upgrade would cost"]}), mat) == []
    assert run(c.QUESTION_AS_REQUIREMENT, zh(**{T: ["用户询问寄修大概要多久"]}), QUESTIONS) == []


def test_a_question_record_is_found_after_question_lines_that_ask_for_something():
    note = zh(**{R: ["用户询问能不能帮我把申请提交了",  # a direct request
                     "用户询问是否办理（原话：我明确同意办理）",  # a consent quoted
                     "用户询问AirPods Max（原话：先不买新的了）",  # an abandonment quoted
                     "用户询问寄修大概要多久"]})
    mat = material(("寄修大概要多久？", "3到5个工作日。"), ("现在可以提交了，我明确同意办理。", "好的。"),
                   ("AirPods Max多少钱？先不买新的了。", "好的。"))
    assert where(run(c.QUESTION_AS_REQUIREMENT, note, mat)) == [(c.QUESTION_AS_REQUIREMENT, R, 5)]


def test_a_question_quoting_words_several_users_said_names_the_latest():
    mat = material(("寄修大概要多久？", "3到5个工作日。"), ("寄修大概要多久？我急用。", "3到5天。"),
                   ("再问一次，寄修大概要多久？", "3到5天。"))
    [finding] = run(c.QUESTION_AS_REQUIREMENT, zh(**{R: ["用户询问寄修时长（原话：寄修大概要多久）"]}), mat)
    assert finding.message_ids == ("u2",)


def test_every_tool_detail_of_a_line_is_found_after_values_the_user_said_or_nobody_said():
    mat = material(("8月31日之前能修好吗？维修费多少？", "维修费约749元，9月3日寄回。"))
    found = run(c.TOOL_DETAIL_IN_REQUESTS, zh(**{R: ["8月31日前修好，9月5日前寄到，维修费约749元，9月3日寄回"]}), mat)
    assert sorted(f.subject for f in found) == ["749元", "9月3日"]


def test_a_tool_detail_names_at_most_three_sources_and_says_there_are_more():
    said = [("订单88232呢？", f"第{n}次查询：8月31日签收。") for n in "一二三"]
    three = run(c.TOOL_DETAIL_IN_REQUESTS, zh(**{R: ["8月31日签收"]}), material(*said))
    [date] = [f for f in three if f.subject == "8月31日"]
    assert date.message_ids == ("a0", "a1", "a2") and "(a0, a1, a2); the user" in date.detail
    four = run(c.TOOL_DETAIL_IN_REQUESTS, zh(**{R: ["8月31日签收"]}), material(*said, ("还有吗？", "8月31日签收。")))
    [date] = [f for f in four if f.subject == "8月31日"]
    assert date.message_ids == ("a0", "a1", "a2", "a3") and "(a0, a1, a2 …); the user" in date.detail


def test_abandoning_another_matter_withdraws_no_condition():
    mat = material(("给妈妈买iPad，只要银色。", "好的。"), ("保护壳先不买了。", "好的。"))
    assert [f.subject for f in run(c.LOST_CONSTRAINT, zh(**{R: ["为妈妈买iPad"]}), mat)] == ["只要银色"]


def test_dropping_a_matter_named_only_by_the_message_before_withdraws_only_what_it_shares():
    mat = material(("给妈妈买iPad，只要银色。", "好的。"), ("AirPods Max现在多少钱？", "3999元。"), ("算了，先不买了。", "好的。"))
    assert [f.subject for f in run(c.LOST_CONSTRAINT, zh(**{R: ["为妈妈买iPad"]}), mat)] == ["只要银色"]


def test_a_hold_the_parent_kept_is_withdrawn_by_a_later_go_ahead_about_it():
    parent = zh(**{R: ["暂缓：送修申请周五之前先别提交"]})
    go_ahead = material(("现在可以提交送修申请了，我同意提交。", "好的。"), ("包装也准备好了。", "好的。"), start=3)
    assert run(c.LOST_CONSTRAINT, zh(**{R: ["送修申请"]}), go_ahead, parent=parent) == []
    other = material(("保护壳的订单我同意了。", "好的。"), start=3)
    assert "送修申请周五之前先别提交" in [f.subject for f in run(c.LOST_CONSTRAINT, zh(**{R: ["送修申请"]}), other,
                                                         parent=parent)]


def test_a_hold_the_parent_kept_needs_a_go_ahead_sharing_terms_worth_two():
    parent = en(**{R: ["On hold: do not file the claim before Friday, hold off"]})
    go_ahead = material(("Go ahead with the claim now.", "Filing it."), start=3)
    assert run(c.LOST_CONSTRAINT, en(**{R: ["Claim"]}), go_ahead, parent=parent) == []


def test_the_proof_of_a_condition_said_twice_is_the_first_message_that_stated_it():
    mat = material(("给妈妈买iPad，只要银色。", "好的。"), ("对，只要银色。", "好的。"))
    [finding] = run(c.LOST_CONSTRAINT, zh(**{R: ["为妈妈买iPad"]}), mat)
    assert (finding.subject, finding.message_ids) == ("只要银色", ("u0",))


def test_a_condition_the_parent_kept_names_the_latest_user_who_said_it():
    parent = zh(**{R: ["为妈妈买iPad，只要银色（原话：只要银色）"]})
    earlier = material(("给妈妈买iPad，只要银色。", "好的。"), ("对，只要银色。", "好的。"))
    [finding] = run(c.LOST_CONSTRAINT, zh(**{R: ["为妈妈买iPad"]}), material(("寄修要多久？", "3天。"), start=2),
                    parent=parent, earlier=[earlier])
    assert finding.message_ids == ("u1",)
    assert finding.detail == ("The user's condition “只要银色” (u1) is missing from this note although the previous "
                              "note kept it: no line keeps “只要” with its values, and the user has not withdrawn it.")


def test_a_condition_only_the_parent_stated_names_no_message():
    parent = zh(**{R: ["为妈妈买iPad，只要银色"]})
    [finding] = run(c.LOST_CONSTRAINT, zh(**{R: ["为妈妈买iPad"]}), material(("寄修要多久？", "3天。"), start=2),
                    parent=parent)
    assert finding.message_ids == ()
    assert finding.detail == ("The user's condition “只要银色” is missing from this note although the "
                              "previous note kept it: no line keeps “只要” with its values, and the user has not "
                              "withdrawn it.")


def test_acknowledgements_in_several_clauses_are_no_new_matter():
    parent = zh(**{R: ["左耳无声，寄回本店修"]})
    mat = material(("好的，明白，辛苦了。", "不客气。"), start=3)
    grown = zh(**{R: ["左耳无声，寄回本店修，用户表示明白"]})
    assert where(run(c.GROWTH_WITHOUT_NEW_MATTERS, grown, mat, parent=parent)) == [
        (c.GROWTH_WITHOUT_NEW_MATTERS, None, None)]


def test_a_retracted_consent_is_found_after_a_consent_that_still_stands():
    mat = material(*[(p.user_text, p.assistant_text) for p in CONSENT_THEN_HOLD.pairs[:3]],
                   ("邮费到付的话，同意寄回你们店修。", "好的。"), *[(p.user_text, p.assistant_text)
                                                            for p in CONSENT_THEN_HOLD.pairs[3:]])
    note = zh(**{R: ["寄回本店修（原话：同意寄回你们店修）", REPAIR_LINE]})
    assert where(run(c.RETRACTED_CONSENT, note, mat)) == [(c.RETRACTED_CONSENT, R, 3)]


def test_a_go_ahead_lifts_a_hold_only_the_parent_stated_when_it_shares_terms_worth_two():
    parent = zh(**{R: ["暂缓：送修申请周五之前先别提交"]})
    lifted = material(("可以提交申请了，我同意。", "好的。"), start=3)
    assert run(c.LOST_CONSTRAINT, zh(**{R: ["送修申请"]}), lifted, parent=parent) == []
    kept = material(("送修我同意了。", "好的。"), start=3)
    assert [f.subject for f in run(c.LOST_CONSTRAINT, zh(**{R: ["送修申请"]}), kept, parent=parent)] == [
        "送修申请周五之前先别提交"]


def test_a_short_go_ahead_right_after_the_users_hold_lifts_the_hold_the_parent_kept():
    parent = zh(**{R: ["暂缓：送修申请周五之前先别提交（原话：送修申请周五之前先别提交）"]})
    earlier = material(("送修申请周五之前先别提交。", "好的。"))
    lifted = material(("好，可以了，我同意。", "好的，这就提交。"), start=1)
    assert run(c.LOST_CONSTRAINT, zh(**{R: ["送修申请"]}), lifted, parent=parent, earlier=[earlier]) == []


def test_a_line_marked_abandoned_is_no_question_record_whatever_the_scopes_question_words():
    scope = v.DEFAULT.extended({v.QUESTION: {v.EN: [r"\babandoned\b"]}})
    mat = material(("What would the premium seat upgrade cost?", "$640."), ("Forget about the upgrade.", "Okay."))
    note = en(**{R: ["Abandoned: user asked what the upgrade would cost"]})
    assert c.check_note(note, parent=None, material=mat, chain=c.ChainHistory.from_materials([mat]), vocabulary=scope,
                        codes=[c.QUESTION_AS_REQUIREMENT]) == []
    asked = en(**{R: ["User asked what the upgrade would cost"]})
    assert len(c.check_note(asked, parent=None, material=mat, chain=c.ChainHistory.from_materials([mat]),
                            vocabulary=scope, codes=[c.QUESTION_AS_REQUIREMENT])) == 1


def test_a_later_question_repeating_a_holds_words_does_not_lift_it():
    mat = material(("送修申请周五之前先别提交。", "好的。"), ("你记下“送修申请周五之前先别提交”这句了吗？", "记下了。"))
    assert [f.subject for f in run(c.LOST_CONSTRAINT, zh(**{R: ["送修申请"]}), mat)] == ["送修申请周五之前先别提交"]


# Only a LATER user message withdraws a condition (check_lost_constraint's
# rule): one message may state a condition and drop another matter, or state
# two bounds, at once; its own words never cancel the condition it states.

def test_an_abandonment_in_the_conditions_own_message_does_not_withdraw_it():
    swap = material(("周五去上海的航班不要了，只要周六去上海的航班。", "好的，改查周六的。"))
    assert [f.subject for f in run(c.LOST_CONSTRAINT, zh(**{R: ["订去上海的航班"]}), swap)] == ["只要周六去上海的航班"]
    assert run(c.LOST_CONSTRAINT, zh(**{R: ["订去上海的航班：只要周六去上海的航班"]}), swap) == []
    # The same abandonment in the next message does withdraw it.
    dropped = material(("只要周六去上海的航班。", "好的。"), ("周六去上海的航班也不要了。", "好的，不订了。"))
    assert run(c.LOST_CONSTRAINT, zh(**{R: ["订去上海的航班"]}), dropped) == []


def test_english_an_abandonment_in_the_conditions_own_message_does_not_withdraw_it():
    swap = material(("Forget the Friday flight to Boston; I only want the Saturday flight to Boston.",
                     "Looking at Saturday instead."))
    assert [f.subject for f in run(c.LOST_CONSTRAINT, en(**{R: ["Flight to Boston"]}), swap)] == [
        "I only want the Saturday flight to Boston"]
    dropped = material(("I only want the Saturday flight to Boston.", "Noted."),
                       ("Forget the Saturday flight to Boston too.", "Okay, no flight."))
    assert run(c.LOST_CONSTRAINT, en(**{R: ["Flight to Boston"]}), dropped) == []


def test_two_bounds_in_one_message_do_not_supersede_each_other():
    mat = material(("iPad预算4000以内，保护壳预算300以内。", "好的。"))
    assert [f.subject for f in run(c.LOST_CONSTRAINT, zh(**{R: ["买iPad和保护壳"]}), mat)] == [
        "iPad预算4000以内", "保护壳预算300以内"]
    assert run(c.LOST_CONSTRAINT, zh(**{R: ["买iPad（预算4000以内），保护壳预算300以内"]}), mat) == []


def test_english_two_bounds_in_one_message_do_not_supersede_each_other():
    mat = material(("Keep the hotel budget under $200 a night, and the flight budget under $450.", "Noted."))
    assert [f.subject for f in run(c.LOST_CONSTRAINT, en(**{R: ["Hotel and flight to Boston"]}), mat)] == [
        "Keep the hotel budget under $200 a night", "and the flight budget under $450."]
    assert run(c.LOST_CONSTRAINT, en(**{R: ["Hotel budget under $200 a night, flight budget under $450"]}), mat) == []
