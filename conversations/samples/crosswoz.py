"""CrossWOZ (thu-coai/CrossWOZ, Apache-2.0): Chinese task-oriented
dialogues, each ``usr`` turn answered by one ``sys`` turn; several dialogues
are concatenated per conversation to pass the 30-pair threshold (SPEC §5)."""

from __future__ import annotations

import json
import zipfile
from datetime import timedelta
from pathlib import Path
from typing import Iterator

from .common import T0, chunks, join_dialogues, timestamp
from .facts import ASSISTANT, CONSTRAINT, SUPERSEDED, Fact, Sample, dedupe, mentions, values_of

CROSSWOZ_SCOPE = "crosswoz"


def _crosswoz_dialogues(path_to_zip: str | Path) -> list[tuple[str, dict]]:
    with zipfile.ZipFile(path_to_zip) as archive:
        members = [n for n in archive.namelist() if n.endswith(".json")]
        if len(members) != 1:
            raise ValueError(f"{path_to_zip}: expected one .json file in the archive, found {members}")
        data = json.loads(archive.read(members[0]).decode("utf-8"))
    return list(data.items())


def _crosswoz_pair_count(dialogue: dict) -> int:
    """Pairs the dialogue will make (SPEC §4): ``usr`` turns answered by a non-blank ``sys`` turn."""
    turns = dialogue["messages"]
    return sum(1 for a, b in zip(turns, turns[1:])
               if a["role"] == "usr" and b["role"] == "sys" and b["content"].strip())


def _crosswoz_document(number: int, group: list[tuple[str, dict]], scope: str) -> dict:
    """A ``usr`` turn and the ``sys`` turn that answers it make one completed
    run. A ``sys`` turn with no ``usr`` turn before it in its dialogue is kept
    as a message without a run; a ``usr`` turn with no answer makes a
    ``cancelled`` run (neither happens in the validation split, but the
    converter does not assume it)."""
    clock = T0 + timedelta(days=number)
    runs: list[dict] = []
    messages: list[dict] = []
    described = []
    for dialogue_id, dialogue in group:
        goal_changed = [g[:4] for g in dialogue.get("goal", [])] != [g[:4] for g in dialogue.get("final_goal", [])]
        described.append({"id": dialogue_id, "type": dialogue.get("type", ""), "goal_changed": goal_changed})
        current_run: dict | None = None
        for turn_no, turn in enumerate(dialogue["messages"]):
            clock += timedelta(seconds=30)
            message_id = _crosswoz_message_id(dialogue_id, turn_no)
            if turn["role"] == "usr":
                current_run = {"id": f"cw-{dialogue_id}-r{turn_no:02d}", "status": "cancelled",
                               "created_at": timestamp(clock)}
                runs.append(current_run)
                messages.append({"id": message_id, "run_id": current_run["id"], "role": "user",
                                 "content": turn["content"], "status": "completed", "created_at": timestamp(clock)})
            elif turn["role"] == "sys":
                message = {"id": message_id, "role": "assistant", "content": turn["content"],
                           "status": "completed", "created_at": timestamp(clock)}
                if current_run is not None:
                    message["run_id"] = current_run["id"]
                    current_run["status"] = "completed"
                    current_run = None  # the next sys turn, if any, belongs to no run
                messages.append(message)
            else:
                raise ValueError(f"CrossWOZ dialogue {dialogue_id} turn {turn_no}: unknown role {turn['role']!r}")
    first, last = group[0][0], group[-1][0]
    return {
        "scope": scope,
        "id": f"crosswoz-val-{first}-{last}",
        "title": f"CrossWOZ 验证集对话 {first}–{last}（{len(group)}段）",
        "metadata": {"source": "CrossWOZ validation split (thu-coai/CrossWOZ, Apache-2.0)",
                     "dialogues": described},
        "runs": runs,
        "messages": messages,
    }


def _crosswoz_message_id(dialogue_id: str, turn_no: int) -> str:
    return f"cw-{dialogue_id}-{turn_no:02d}"


def crosswoz_documents(path_to_zip: str | Path, per_conversation: int = 5, *, limit: int | None = None,
                       scope: str = CROSSWOZ_SCOPE) -> Iterator[dict]:
    """One document per ``per_conversation`` consecutive CrossWOZ dialogues.
    ``limit`` caps the number of documents."""
    dialogues = _crosswoz_dialogues(path_to_zip)
    for number, group in enumerate(chunks(dialogues, per_conversation)):
        if limit is not None and number >= limit:
            return
        yield _crosswoz_document(number, group, scope)


def _crosswoz_facts(dialogue_id: str, dialogue: dict) -> tuple[list[Fact], list[Fact], list[Fact]]:
    said_by_user = [(_crosswoz_message_id(dialogue_id, n), t["content"])
                    for n, t in enumerate(dialogue["messages"]) if t["role"] == "usr"]

    def last_user_saying(value: str) -> str | None:
        return next((mid for mid, text in reversed(said_by_user) if mentions(text, value)), None)

    constraints, superseded, told = [], [], []
    for initial, final in zip(dialogue.get("goal", []), dialogue.get("final_goal", [])):
        _, domain, slot, wanted, _ = initial
        if not values_of(wanted):
            continue  # a request: its final value is what the system answered
        finals = values_of(final[3])
        for value in finals:
            where = last_user_saying(value)
            if where:
                constraints.append(Fact(CONSTRAINT, value, where, dialogue_id, domain, slot, canonical=value))
        for value in values_of(wanted):
            where = last_user_saying(value)
            if value not in finals and where:
                superseded.append(Fact(SUPERSEDED, value, where, dialogue_id, domain, slot, canonical=value,
                                       replaced_by=", ".join(finals) or None))
    for n, turn in enumerate(dialogue["messages"]):
        if turn["role"] != "sys":
            continue
        for intent, domain, slot, value in turn.get("dialog_act", []):
            if intent in ("Inform", "Recommend") and value != "none" and mentions(turn["content"], value):
                told.append(Fact(ASSISTANT, value, _crosswoz_message_id(dialogue_id, n), dialogue_id, domain, slot,
                                 canonical=value, act=intent))
    return constraints, superseded, told


def crosswoz_samples(path_to_zip: str | Path, *, min_pairs: int = 30, limit: int | None = None,
                     scope: str = CROSSWOZ_SCOPE) -> Iterator[Sample]:
    """CrossWOZ dialogues joined into conversations of at least ``min_pairs``
    pairs, each with its facts (see above). ``limit`` caps the number."""
    groups = join_dialogues(_crosswoz_dialogues(path_to_zip), min_pairs, _crosswoz_pair_count)
    for number, group in enumerate(groups):
        if limit is not None and number >= limit:
            return
        constraints, superseded, told = [], [], []
        for dialogue_id, dialogue in group:
            c, s, t = _crosswoz_facts(dialogue_id, dialogue)
            constraints += c
            superseded += s
            told += t
        yield Sample(
            document=_crosswoz_document(number, group, scope),
            constraints=dedupe(constraints), superseded=dedupe(superseded), assistant_facts=dedupe(told),
            pair_count=sum(_crosswoz_pair_count(d) for _, d in group),
            message_dialogues={_crosswoz_message_id(did, n): did
                               for did, d in group for n in range(len(d["messages"]))},
        )
