"""The offline builder and the drift checks read with one set of rules
(compaction.handoff.reading, clauses, values, results), so the checks find
nothing in what the builder writes (SPEC §7, §8): hand-written chains in
Chinese and English covering each rule of the builder, every generation
checked with the chain it was written in."""

import pytest

from compaction.drift import checkers as c
from compaction.handoff import note
from compaction.handoff.builder import build_note

from .test_handoff_extractive import GENERATIONS_ZH, REPAIR, material

ZH, EN = note.ZH, note.EN

CHAINS = {
    "consent then hold": [(REPAIR, ZH)],
    "hold lifted by a new consent": [(REPAIR, ZH), ([("包装准备好了。现在可以提交送修申请了，我同意办理。", "好的。")], ZH)],
    "five generations with a done item and a drop": [(turns, ZH) for turns in GENERATIONS_ZH],
    "english carry-forward": [([("I want to return order 55120 for a refund.", "OK.")], EN),
                              ([("Only a refund, not a replacement.", "Noted.")], EN),
                              ([("How long will it take?", "5 days.")], EN)],
    "english hold and go-ahead": [
        ([("I want to return the laptop from order 55120 for a refund.", "Sure."),
          ("Yes, go ahead and file the return.", "Filing it now."),
          ("Actually, hold off on the return until I find the original box.", "Understood, it is on hold.")], EN),
        ([("Found the box. Please go ahead and file the return now.", "OK.")], EN)],
    "drop and take up again": [
        ([("我要给妈妈买个iPad，预算4000以内。", "好的。"), ("只要银色或者深空灰。", "好的。"), ("算了，iPad不买了。", "好的。")], ZH),
        ([("我要给妈妈买个iPad，还是买吧。", "好的。")], ZH)],
    "a second order id, then the first asked again": [
        ([("帮我取消订单66001。", "好的，已为您取消。",
           [("cancel_order", '{"order": "66001"}', '{"status": "cancelled", "order_id": "66001"}', True)]),
          ("帮我查一下订单66003到哪了。", "已签收。",
           [("lookup_order", '{"order": "66003"}', '{"status": "delivered"}', True)])], ZH),
        ([("再帮我取消订单66002。", "好的。")], ZH),
        ([("再帮我取消订单66001。", "好的。")], ZH)],
    "a superseded bound": [([("我要给妈妈买个iPad，预算4000以内，只要银色或者深空灰。", "好的。")], ZH),
                           ([("预算改成5000以内吧。", "好的。")], ZH),
                           ([("寄修要多久？", "7天。")], ZH)],
    "english superseded bound": [
        ([("I need a hotel in Cambridge for 3 nights, under $150 a night.", "Here are some."),
          ("Only with free parking, and no smoking rooms.", "Noted.")], EN),
        ([("Actually make it under $200 a night.", "OK.")], EN)],
    "a failure then a success": [
        ([("帮我提交退款申请，订单77001。", "失败了。", [("submit_refund", '{"order": "77001"}', "系统错误", False)])], ZH),
        ([("再提交一次退款申请。", "成功了。",
           [("submit_refund", '{"order": "77001"}', '{"refund_id": "RF-3301"}', True)])], ZH)],
    "a dropped booking and looked-up dates": [
        ([("帮我约9月13号上午10点环贸的天才吧。", "约满了。",
           [("book_genius_bar", '{"slot": "2026-09-13 10:00"}', '{"ok": false, "error": "该时段已被约满"}', False)]),
          ("天才吧那边我不去了。", "好的。")], ZH),
        ([("寄修要多久？", "7到10个工作日，订单88232于2026-08-31签收。")], ZH)],
    "a condition on another part of a done purchase": [
        ([("我要给妈妈买个iPad，只要银色或者深空灰。", "好的。",
           [("create_order", '{"sku": "ipad"}', '{"order_id": "SO-1"}', True)]),
          ("帮我下单。", "已下单。", [("create_order", '{"sku": "ipad"}', '{"order_id": "SO-20260915-3307"}', True)])], ZH),
        ([("对了，iPad的保护壳也只要银色或者深空灰的。", "明白。")], ZH)],
}


@pytest.mark.parametrize("name", CHAINS)
def test_the_drift_checks_find_nothing_in_what_the_builder_writes(name):
    parent, materials, start = None, [], 0
    for number, (turns, language) in enumerate(CHAINS[name], start=1):
        mat = material(turns, start=start)
        start += len(turns)
        materials.append(mat)
        text = build_note(parent, mat, language=language)
        findings = c.check_note(text, parent=parent, material=mat, chain=c.ChainHistory.from_materials(materials))
        assert findings == [], (number, [(f.code, f.line, f.subject) for f in findings], text)
        parent = text
