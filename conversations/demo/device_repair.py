"""耳机寄修 in the demo: the repair conversation of ``repair_handoff`` (scope
``device-repair``, compacted by the rolling hand-off policy, SPEC §7),
with one answer that ``seed_demo --edit-after-compaction`` corrects.

The corrected answer is pair 19's (the microphone setting), inside the
second hand-off generation's material with the demo's thresholds
(``conversations.demo.ROLLING_POLICIES``): once it is sent, that generation
and every later one turn stale and the chain is re-planned from the first.
``repair_handoff`` itself stays as the drift regression reads it.
"""

from __future__ import annotations

from dataclasses import replace

from . import repair_handoff
from .builder import Conversation

AFTER_COMPACTION = "after-compaction"  # the key seed_demo sends with --edit-after-compaction
EDITED_PAIR = 19
EDITED_ANSWER = ("设置-蓝牙-点AirPods旁边的i-麦克风-选择“始终右耳AirPods”。（更正：iOS 26里这一项在"
                 "“AirPods设置-麦克风”下，不在蓝牙列表里。）")


def conversation() -> Conversation:
    base = repair_handoff.conversation()
    turns = list(base.turns)
    turns[EDITED_PAIR] = replace(turns[EDITED_PAIR], later=EDITED_ANSWER, later_key=AFTER_COMPACTION)
    return replace(base, turns=turns)
