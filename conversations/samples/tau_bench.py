"""τ-bench airline (sierra-research/tau-bench, MIT): trajectories in Chat
Completions shape, one run per user turn up to the next."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Iterator

from .common import T0, chunks, timestamp

TAU_BENCH_SCOPE = "tau-bench-airline"


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
    for number, group in enumerate(chunks(trajectories, per_conversation)):
        if limit is not None and number >= limit:
            return
        clock = T0 + timedelta(days=number, hours=3)
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
                           "status": "completed", "created_at": timestamp(clock)}
                if role == "user":
                    close_run()
                    run = {"id": f"{key}-r{turn_no:03d}", "status": "completed", "created_at": timestamp(clock)}
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
