"""Converters from real, third-party conversation datasets to ingest documents (SPEC §3).

Pure: a file path in, plain ingest documents (dicts, the shape
``documents.validate_document`` accepts) out; no database. They let the
product be tested on conversations nobody here wrote. The datasets are read
where they lie (``../shared/data``) and never copied into the repository.

- CrossWOZ (thu-coai/CrossWOZ, Apache-2.0): Chinese task-oriented dialogues,
  each ``usr`` turn answered by one ``sys`` turn. A dialogue has about 8
  exchanges, so several dialogues are concatenated per conversation to pass
  the 30-pair threshold (SPEC §5). Each user turn and the system turn that
  answers it make one completed run.
- τ-bench airline (sierra-research/tau-bench, MIT): trajectories in Chat
  Completions shape. Each user turn, up to the next user turn, is one run:
  assistant messages keep their ``tool_calls``, ``tool`` messages keep their
  ``tool_call_id``. The system prompt belongs to no run.

Ids and timestamps are generated deterministically (monotonic
``created_at``), so converting the same file twice gives the same documents
and re-ingesting them is a no-op.
"""

from __future__ import annotations

import json
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator

CROSSWOZ_SCOPE = "crosswoz"
TAU_BENCH_SCOPE = "tau-bench-airline"
_T0 = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)


def _ts(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _chunks(items: list, size: int) -> Iterator[list]:
    if size < 1:
        raise ValueError(f"per_conversation must be at least 1, got {size}")
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _crosswoz_dialogues(path_to_zip: str | Path) -> list[tuple[str, dict]]:
    with zipfile.ZipFile(path_to_zip) as archive:
        members = [n for n in archive.namelist() if n.endswith(".json")]
        if len(members) != 1:
            raise ValueError(f"{path_to_zip}: expected one .json file in the archive, found {members}")
        data = json.loads(archive.read(members[0]).decode("utf-8"))
    return list(data.items())


def crosswoz_documents(path_to_zip: str | Path, per_conversation: int = 5, *, limit: int | None = None,
                       scope: str = CROSSWOZ_SCOPE) -> Iterator[dict]:
    """One document per ``per_conversation`` consecutive CrossWOZ dialogues.

    ``limit`` caps the number of documents. A ``sys`` turn with no ``usr``
    turn before it in its dialogue is kept as a message without a run; a
    ``usr`` turn with no answer makes a ``cancelled`` run (neither happens
    in the validation split, but the converter does not assume it).
    """
    dialogues = _crosswoz_dialogues(path_to_zip)
    for number, group in enumerate(_chunks(dialogues, per_conversation)):
        if limit is not None and number >= limit:
            return
        clock = _T0 + timedelta(days=number)
        runs: list[dict] = []
        messages: list[dict] = []
        described = []
        for dialogue_id, dialogue in group:
            goal_changed = [g[:4] for g in dialogue.get("goal", [])] != [g[:4] for g in dialogue.get("final_goal", [])]
            described.append({"id": dialogue_id, "type": dialogue.get("type", ""), "goal_changed": goal_changed})
            current_run: dict | None = None
            for turn_no, turn in enumerate(dialogue["messages"]):
                clock += timedelta(seconds=30)
                message_id = f"cw-{dialogue_id}-{turn_no:02d}"
                if turn["role"] == "usr":
                    current_run = {"id": f"cw-{dialogue_id}-r{turn_no:02d}", "status": "cancelled",
                                   "created_at": _ts(clock)}
                    runs.append(current_run)
                    messages.append({"id": message_id, "run_id": current_run["id"], "role": "user",
                                     "content": turn["content"], "status": "completed", "created_at": _ts(clock)})
                elif turn["role"] == "sys":
                    message = {"id": message_id, "role": "assistant", "content": turn["content"],
                               "status": "completed", "created_at": _ts(clock)}
                    if current_run is not None:
                        message["run_id"] = current_run["id"]
                        current_run["status"] = "completed"
                        current_run = None  # the next sys turn, if any, belongs to no run
                    messages.append(message)
                else:
                    raise ValueError(f"CrossWOZ dialogue {dialogue_id} turn {turn_no}: unknown role {turn['role']!r}")
        first, last = group[0][0], group[-1][0]
        yield {
            "scope": scope,
            "id": f"crosswoz-val-{first}-{last}",
            "title": f"CrossWOZ 验证集对话 {first}–{last}（{len(group)}段）",
            "metadata": {"source": "CrossWOZ validation split (thu-coai/CrossWOZ, Apache-2.0)",
                         "dialogues": described},
            "runs": runs,
            "messages": messages,
        }


def _tool_calls(raw_calls: list[dict]) -> list[dict]:
    calls = []
    for call in raw_calls:
        function = call.get("function") or {}
        calls.append({"id": call["id"], "name": function.get("name") or call.get("name", ""),
                      "arguments": function.get("arguments", call.get("arguments", ""))})
    return calls


def tau_bench_documents(path: str | Path, per_conversation: int = 1, *, limit: int | None = None,
                        scope: str = TAU_BENCH_SCOPE) -> Iterator[dict]:
    """One document per ``per_conversation`` consecutive τ-bench trajectories.

    Run status: ``cancelled`` when the user's turn got no assistant message at
    all (the simulated user ended the conversation), ``partial`` when the run
    ended on a tool result without a closing answer (for example a hand-off
    to a human agent), ``completed`` otherwise. Pairing then applies SPEC §4
    to what is stored, whatever the status says.
    """
    with open(path, encoding="utf-8") as handle:
        trajectories = json.load(handle)
    if not isinstance(trajectories, list):
        raise ValueError(f"{path}: expected a JSON list of trajectories")
    for number, group in enumerate(_chunks(trajectories, per_conversation)):
        if limit is not None and number >= limit:
            return
        clock = _T0 + timedelta(days=number, hours=3)
        runs: list[dict] = []
        messages: list[dict] = []
        tasks = []
        for trajectory in group:
            key = f"tau-{trajectory['task_id']}-{trajectory.get('trial', 0)}"
            task = (trajectory.get("info") or {}).get("task") or {}
            tasks.append({"key": key, "task_id": trajectory["task_id"], "trial": trajectory.get("trial", 0),
                          "reward": trajectory.get("reward"), "user_id": task.get("user_id", ""),
                          "instruction": task.get("instruction", "")})
            run: dict | None = None
            run_roles: list[str] = []

            def close_run() -> None:
                if run is None:
                    return
                if not any(r in ("assistant", "tool") for r in run_roles):
                    run["status"] = "cancelled"
                elif run_roles[-1] == "tool":
                    run["status"] = "partial"

            for turn_no, turn in enumerate(trajectory["traj"]):
                clock += timedelta(seconds=15)
                role = turn["role"]
                message = {"id": f"{key}-{turn_no:03d}", "role": role, "content": turn.get("content") or "",
                           "status": "completed", "created_at": _ts(clock)}
                if role == "user":
                    close_run()
                    run = {"id": f"{key}-r{turn_no:03d}", "status": "completed", "created_at": _ts(clock)}
                    run_roles = []
                    runs.append(run)
                if role in ("user", "assistant", "tool") and run is not None:
                    message["run_id"] = run["id"]
                    run_roles.append(role)
                if role == "assistant" and turn.get("tool_calls"):
                    message["tool_calls"] = _tool_calls(turn["tool_calls"])
                if role == "tool":
                    message["tool_call_id"] = turn["tool_call_id"]
                messages.append(message)
            close_run()
        first, last = tasks[0]["key"], tasks[-1]["key"]
        yield {
            "scope": scope,
            "id": first if len(tasks) == 1 else f"{first}--{last}",
            "title": f"τ-bench airline {first}" + (f" … {last} ({len(tasks)} trajectories)" if len(tasks) > 1 else ""),
            "metadata": {"source": "τ-bench airline, gpt-4o trajectories (sierra-research/tau-bench, MIT)",
                         "tasks": tasks},
            "runs": runs,
            "messages": messages,
        }
