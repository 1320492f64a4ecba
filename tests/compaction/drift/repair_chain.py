"""A scripted model writing nine hand-off notes over the repair conversation,
with seed 001's drifts planted at known generations and lines (test helper).

``RANGES`` are the nine consecutive material ranges (pair indices; pair i is
user turn i + 1); the newest twelve pairs stay raw. ``NOTES`` are what the
scripted model writes for each generation, from its parent note and the new
material, the way seed 001's model wrote them: mostly right, with the drifts
of its regression in some generations and two generations with none.
``PLANTED`` lists every finding the checkers must report, and only those.
"""

from __future__ import annotations

import json
from datetime import datetime

from compaction.drift import checkers as c
from compaction.handoff import note as notes
from compaction.handoff.material import Material, MaterialPair, ToolResult, render_material
from conversations.demo import repair_handoff
from conversations.demo.builder import Built, build
from conversations.pairing import MessageView, RunView, project_pairs

RANGES = [(0, 13), (14, 27), (28, 41), (42, 55), (56, 67), (68, 78), (79, 89), (90, 100), (101, 113)]

R, T, DONE = notes.REQUESTS, notes.TODOS, notes.DONE

# The lines that most generations carry forward.
REPAIR = "左耳AirPods Pro 3无声，右耳正常，需维修（订单88232）"
REPAIR_DELIVERED = "左耳AirPods Pro 3无声，右耳正常，需维修（订单88232，2026-08-31签收）"
REPAIR_LATER = "左耳AirPods Pro 3无声，右耳正常，需维修，先用右耳，下个月再决定怎么修（订单88232）"
MAX_ABANDONED = "已放弃：购买AirPods Max（原话：先不买新的了）"
ROUTE_TODO = "安排左耳维修：去天才吧或寄回本店，用户未定"
IPAD_CHOSEN = "为妈妈买iPad：第11代128GB银色，已收到；预算4000以内，只要银色或者深空灰"
IPAD_DONE = f"已为妈妈下单iPad（第11代128GB银色），订单 {repair_handoff.IPAD_ORDER}"
GENIUS_DEAD_END = "预约Apple 环贸iapm天才吧9月13日10:00：时段已约满，预约失败"
GENIUS_PROGRESS = "预约环贸iapm天才吧9月13日10:00失败（时段已约满），未改约"
MAIL_IN = ("用户已放弃去天才吧，改为直接寄回本店修，并明确同意办理送修申请"
           "（原话：天才吧那边我不去了，直接寄回你们店修吧；现在可以提交送修申请了，我明确同意办理）")
HOLD = "暂缓：送修申请先别提交（原话：算了，申请还是先别提交，等我下周把包装准备好再说）"
HOLD_TODO = "提交送修申请：用户要求先别提交，等其下周准备好包装"
SUBMIT_PROGRESS = "submit_ticket确认卡被拒绝，申请未提交；用户随后要求先别提交"
SUBMIT_DEAD_END = "提交送修申请：确认卡被拒绝，申请未提交"
QUESTIONS_G6 = ["用户询问寄修能不能加急", "用户询问关闭查找会不会丢"]
QUESTIONS_G7 = QUESTIONS_G6 + ["用户询问寄修大概几天能寄回来"]
QUESTIONS_G8 = QUESTIONS_G7 + ["用户询问送修期间有没有替代耳机", "用户询问不在保的话修一只多少钱", "用户询问检测要多久"]
QUESTIONS_G9 = QUESTIONS_G8 + ["用户询问修好寄回来是寄到哪里", "用户询问公司前台能不能代签"]


def _note(requests, todos, next_step, progress, dead_ends, done) -> str:
    return notes.render({notes.REQUESTS: requests, notes.TODOS: todos, notes.NEXT_STEP: next_step,
                         notes.PROGRESS: progress, notes.DEAD_ENDS: dead_ends, notes.DONE: done},
                        language=notes.ZH)


NOTES = [
    # 1 (turns 1–14): the delivery date copied from the look-up into the request (line 2);
    # AirPods Max still listed although the user said "先不买新的了" (line 3).
    _note([REPAIR_DELIVERED, "用户考虑购买AirPods Max作为替代"],
          [ROUTE_TODO],
          ["安排左耳维修（原话：先不买新的了，还是先修这副吧）"],
          ["远程诊断：左耳无音频输出，右耳正常；保修查询：在保"],
          [], []),
    # 2 (turns 15–28): the date again (line 2); the serial number the assistant asked for
    # became a to-do (line 6).
    _note([REPAIR_DELIVERED, MAX_ABANDONED],
          [ROUTE_TODO, "落实设备序列号，用户尚未提供"],
          ["安排左耳维修（原话：先不买新的了，还是先修这副吧）"],
          ["已查到离徐汇最近的天才吧为Apple 环贸iapm，尚未预约"],
          [], []),
    # 3 (turns 29–42): clean — the iPad matter with the user's verbatim conditions.
    _note([REPAIR, MAX_ABANDONED,
           "为妈妈买iPad，看视频和视频通话用：预算4000以内，只要银色或者深空灰（原话：预算4000以内，只要银色或者深空灰）"],
          [ROUTE_TODO, "为妈妈选定并购买iPad"],
          ["为妈妈选定并购买iPad（原话：另外我想给我妈买个iPad，她主要看视频和视频通话。）"],
          ["已查到离徐汇最近的天才吧为Apple 环贸iapm，尚未预约"],
          [], []),
    # 4 (turns 43–56): "只要银色或者深空灰" became "银色或深空灰优先" (lost, at the
    # requests heading, line 1); the failed Genius Bar booking listed as done (line 15).
    _note([REPAIR, MAX_ABANDONED, "为妈妈买iPad：第11代128GB银色，寄到妈妈家；预算4000以内，银色或深空灰优先"],
          [ROUTE_TODO],
          ["安排左耳维修（原话：还是先修这副吧）"],
          [GENIUS_PROGRESS],
          [GENIUS_DEAD_END],
          [IPAD_DONE, "已预约Apple 环贸iapm天才吧检测（订单88232）"]),
    # 5 (turns 57–68): clean — the user restated the colour condition for the case.
    _note([REPAIR_LATER, MAX_ABANDONED, IPAD_CHOSEN + "（原话：iPad的保护壳也只要银色或者深空灰的）"],
          ["安排左耳维修：去天才吧或寄回本店，用户下个月再决定"],
          [],
          [GENIUS_PROGRESS],
          [GENIUS_DEAD_END],
          [IPAD_DONE]),
    # 6 (turns 69–79, questions only): a quote the user did not write (line 4); two
    # question lines in the requests (lines 5, 6); the note grew on questions alone.
    _note([REPAIR_LATER, MAX_ABANDONED, IPAD_CHOSEN + "（原话：保护壳也只要银色或深空灰）", *QUESTIONS_G6],
          ["安排左耳维修：去天才吧或寄回本店，用户下个月再决定"],
          [],
          [GENIUS_PROGRESS],
          [GENIUS_DEAD_END],
          [IPAD_DONE]),
    # 7 (turns 80–90): the hold is written, but the consent it withdrew stays on the
    # matter's line (line 2); three question lines (6–8). Growth here is justified.
    _note(["左耳AirPods Pro 3无声（订单88232），右耳正常；" + MAIL_IN, HOLD, MAX_ABANDONED,
           IPAD_CHOSEN + "（原话：iPad的保护壳也只要银色或者深空灰的）", *QUESTIONS_G7],
          [HOLD_TODO],
          [],
          [SUBMIT_PROGRESS],
          [GENIUS_DEAD_END, SUBMIT_DEAD_END],
          [IPAD_DONE]),
    # 8 (turns 91–101, questions and a restated hold): the consent survives as "曾明确同意"
    # and the delivery date is back from the assistant's restatement (line 2); six question
    # lines (6–11); the note grew without new matters.
    _note(["左耳AirPods Pro 3无声（订单88232，2026-08-31签收），右耳正常；" + MAIL_IN.replace("并明确", "并曾明确"),
           HOLD.replace("再说）", "再说；申请先别提交，包装还没准备好）"), MAX_ABANDONED,
           IPAD_CHOSEN + "（原话：iPad的保护壳也只要银色或者深空灰的）", *QUESTIONS_G8],
          [HOLD_TODO],
          [],
          [SUBMIT_PROGRESS],
          [GENIUS_DEAD_END, SUBMIT_DEAD_END],
          [IPAD_DONE]),
    # 9 (turns 102–114): the same, a third generation; eight question lines (6–13).
    _note(["左耳AirPods Pro 3无声（订单88232，2026-08-31签收），右耳正常；" + MAIL_IN.replace("并明确", "并曾明确"),
           HOLD.replace("再说）", "再说；申请先别提交，包装还没准备好；申请先别提交，等我准备好了再说）"), MAX_ABANDONED,
           IPAD_CHOSEN + "（原话：iPad的保护壳也只要银色或者深空灰的）", *QUESTIONS_G9],
          [HOLD_TODO],
          [],
          [SUBMIT_PROGRESS],
          [GENIUS_DEAD_END, SUBMIT_DEAD_END],
          [IPAD_DONE]),
]

_QUESTION_LINES = {6: range(5, 7), 7: range(6, 9), 8: range(6, 12), 9: range(6, 14)}

# (generation, code, section, line, subject): every finding the checkers must report.
PLANTED = {
    (1, c.TOOL_DETAIL_IN_REQUESTS, R, 2, "2026-08-31"),
    (1, c.TOOL_DETAIL_IN_REQUESTS, R, 2, "签收"),
    (1, c.ABANDONED_UNMARKED, R, 3, "先不买新的了"),
    (2, c.TOOL_DETAIL_IN_REQUESTS, R, 2, "2026-08-31"),
    (2, c.TOOL_DETAIL_IN_REQUESTS, R, 2, "签收"),
    (2, c.ASSISTANT_ASK_AS_TODO, T, 6, "落实设备序列号，用户尚未提供"),
    (4, c.LOST_CONSTRAINT, R, 1, "只要银色或者深空灰"),
    (4, c.DONE_WITHOUT_PROOF, DONE, 15, "88232"),
    (6, c.QUOTE_NOT_VERBATIM, R, 4, "保护壳也只要银色或深空灰"),
    (6, c.GROWTH_WITHOUT_NEW_MATTERS, None, None, None),
    (7, c.RETRACTED_CONSENT, R, 2, "我明确同意办理"),
    (8, c.RETRACTED_CONSENT, R, 2, "我明确同意办理"),
    (8, c.TOOL_DETAIL_IN_REQUESTS, R, 2, "2026-08-31"),
    (8, c.TOOL_DETAIL_IN_REQUESTS, R, 2, "签收"),
    (8, c.GROWTH_WITHOUT_NEW_MATTERS, None, None, None),
    (9, c.RETRACTED_CONSENT, R, 2, "我明确同意办理"),
    (9, c.TOOL_DETAIL_IN_REQUESTS, R, 2, "2026-08-31"),
    (9, c.TOOL_DETAIL_IN_REQUESTS, R, 2, "签收"),
    (9, c.GROWTH_WITHOUT_NEW_MATTERS, None, None, None),
} | {(gen, c.QUESTION_AS_REQUIREMENT, R, line, None) for gen, lines in _QUESTION_LINES.items() for line in lines}

CLEAN_GENERATIONS = (3, 5)


class ScriptedHandoffModel:
    """Answers each hand-off request with the scripted note of its
    generation, and keeps what it was asked (the parent note and the
    rendered material), like a model endpoint would see it. Generation 5
    comes wrapped in ``<summary>`` with a preamble, as models do."""

    def __init__(self):
        self.requests: list[tuple[int, str | None, str]] = []

    def write(self, generation: int, *, parent: str | None, material: Material) -> str:
        self.requests.append((generation, parent, render_material(material, language=notes.ZH)))
        text = NOTES[generation - 1]
        return f"好的，以下是交接单。\n<summary>\n{text}\n</summary>" if generation == 5 else text


def built() -> Built:
    return build(repair_handoff.conversation())


def materials(document: dict) -> list[Material]:
    """The nine generations' material, read from the ingest document the
    way the rolling binding reads stored messages: pairs by SPEC §4, and the
    tool results of each pair's run beside them (``ok`` from the result's
    own flag)."""
    runs = [RunView(key=r["id"], external_id=r["id"], status=r["status"]) for r in document["runs"]]
    views = [MessageView(key=m["id"], external_id=m["id"], run_key=m.get("run_id"), role=m["role"],
                         content=m["content"], status=m["status"], has_tool_calls=bool(m.get("tool_calls")),
                         created_at=datetime.fromisoformat(m["created_at"].replace("Z", "+00:00")), sequence=i)
             for i, m in enumerate(document["messages"])]
    pairs = project_pairs(runs, views)
    calls = {call["id"]: call for m in document["messages"] for call in m.get("tool_calls", ())}
    by_run: dict[str, list[dict]] = {}
    for m in document["messages"]:
        if m["role"] == "tool":
            by_run.setdefault(m["run_id"], []).append(m)
    out = []
    for start, end in RANGES:
        chosen = [p for p in pairs if start <= p.index <= end]
        results = []
        for p in chosen:
            for m in by_run.get(p.run_key, ()):
                call = calls[m["tool_call_id"]]
                ok = json.loads(m["content"]).get("ok")
                results.append(ToolResult(pair_index=p.index, message_id=m["id"], call_id=call["id"],
                                          tool=call["name"], arguments=call["arguments"], text=m["content"], ok=ok))
        out.append(Material(
            pairs=tuple(MaterialPair(p.index, p.user.external_id, p.user.content, p.assistant.external_id,
                                     p.assistant.content) for p in chosen),
            tool_results=tuple(results)))
    return out
