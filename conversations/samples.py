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
- SGD (Schema-Guided Dialogue, CC BY-SA 4.0): English task dialogues; a
  system turn's service call becomes a tool call and its result.

``crosswoz_samples`` and ``sgd_samples`` join dialogues into long
conversations (at least ``min_pairs`` pairs) and give, beside each document,
the facts its dialogues' annotations state — the user's current constraints,
the values they superseded, what the assistant told the user, and (SGD) the
service results — so benchmarks can ask which of them reach the next run
(``bench/fidelity.py``) or survive a rolling note (SPEC §8).

Ids and timestamps are generated deterministically (monotonic
``created_at``), so converting the same file twice gives the same documents
and re-ingesting them is a no-op.
"""

from __future__ import annotations

import gzip
import json
import re
import zipfile
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator

from .wording import value_pattern

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
            message_id = _crosswoz_message_id(dialogue_id, turn_no)
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
    for number, group in enumerate(_chunks(dialogues, per_conversation)):
        if limit is not None and number >= limit:
            return
        yield _crosswoz_document(number, group, scope)


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


# --- Long conversations with the facts a next run should still have ------------
#
# For measuring what a projection keeps (bench/fidelity.py) and what a rolling
# note drifts from (SPEC §8): several dialogues concatenated into one long
# conversation, and beside it, taken from the dataset's own annotations
# rather than guessed from the text, the values that were said:
#
# - constraints: what the user stated and still holds at the end — CrossWOZ
#   ``final_goal`` values of constraint slots (those whose ``goal`` value was
#   not empty: a slot with an empty goal value is a request, and its final
#   value is the system's answer); SGD ``INFORM`` values of user turns, the
#   latest per (service, slot) when the user changed it.
# - superseded: values the user stated and later replaced (CrossWOZ ``goal``
#   values that ``final_goal`` changed; SGD earlier ``INFORM`` values of a
#   slot whose canonical value changed), each with what replaced it.
# - assistant facts: values the system turns stated to the user (CrossWOZ
#   ``Inform`` / ``Recommend`` acts; SGD ``OFFER`` / ``INFORM`` /
#   ``INFORM_COUNT`` / ``CONFIRM`` acts — a confirmation states values too,
#   often ones the user never said, such as a default date), each with its
#   ``act``, marked ``from_service`` when the value came from a service
#   result the assistant had. Questions back (``REQUEST``) state nothing.
# - service values (SGD): every value of every ``service_results`` row — tool
#   details that must not turn into user requirements.
#
# A value is kept only where its text is in the message that stated it
# (``mentions``), because what is measured is whether that text reaches the
# next run; values the annotation normalised away from the words
# ("dontcare", "True", "4" for "four") cannot be looked for and are left out.

CONSTRAINT = "constraint"
SUPERSEDED = "superseded"
ASSISTANT = "assistant"
SERVICE = "service"
MIN_VALUE_CHARS = 2  # one character ("是", "2") is found in almost any text


@dataclass(frozen=True)
class Fact:
    kind: str  # CONSTRAINT, SUPERSEDED, ASSISTANT or SERVICE
    value: str  # as the dataset annotates it; ``mentions(text, value)`` finds it in ``message_id``'s text
    message_id: str  # the message that stated it (for a constraint, the latest that did)
    dialogue: str
    domain: str  # CrossWOZ domain or SGD service
    slot: str
    canonical: str = ""  # SGD's canonical value (corrections compare these); CrossWOZ: the value
    replaced_by: str | None = None  # SUPERSEDED: the value that replaced it
    from_service: bool = False  # ASSISTANT: the value is in a service result the assistant had
    act: str = ""  # the dialogue act that stated it (SGD act, CrossWOZ intent)


@dataclass(frozen=True)
class Sample:
    """One ingest document and the facts taken from the dialogues it joins."""

    document: dict
    constraints: tuple[Fact, ...]
    superseded: tuple[Fact, ...]
    assistant_facts: tuple[Fact, ...]
    service_values: tuple[Fact, ...] = ()
    pair_count: int = 0  # the pairs SPEC §4 makes of the document
    # Which dialogue each message of the document comes from, to tell a fact
    # given back in its own dialogue from the same value said in another.
    message_dialogues: dict[str, str] = field(default_factory=dict)


def mentions(text: str, value: str) -> bool:
    """Whether ``text`` says ``value`` (the rule every fact here was kept by)."""
    value = value.strip()
    if len(value) < MIN_VALUE_CHARS:
        return False
    return value_pattern(value).search(text) is not None


def _groups(dialogues: list[tuple[str, dict]], min_pairs: int, pair_count) -> list[list[tuple[str, dict]]]:
    """Consecutive dialogues, as few per group as make ``min_pairs`` pairs;
    a remainder too short for a group of its own joins the last group (a
    file with fewer than ``min_pairs`` pairs in all gives none)."""
    if min_pairs < 1:
        raise ValueError(f"min_pairs must be at least 1, got {min_pairs}")
    groups: list[list[tuple[str, dict]]] = []
    current: list[tuple[str, dict]] = []
    pairs = 0
    for item in dialogues:
        current.append(item)
        pairs += pair_count(item[1])
        if pairs >= min_pairs:
            groups.append(current)
            current, pairs = [], 0
    if current and groups:
        groups[-1].extend(current)
    return groups


def _values(value) -> list[str]:
    items = value if isinstance(value, list) else [value]
    return [v.strip() for v in items if isinstance(v, str) and v.strip()]


def _dedupe(facts: list[Fact]) -> tuple[Fact, ...]:
    seen: set[tuple] = set()
    out = []
    for f in facts:
        key = (f.dialogue, f.domain, f.slot, f.value.lower())
        if key not in seen:
            seen.add(key)
            out.append(f)
    return tuple(out)


def _crosswoz_facts(dialogue_id: str, dialogue: dict) -> tuple[list[Fact], list[Fact], list[Fact]]:
    said_by_user = [(_crosswoz_message_id(dialogue_id, n), t["content"])
                    for n, t in enumerate(dialogue["messages"]) if t["role"] == "usr"]

    def last_user_saying(value: str) -> str | None:
        return next((mid for mid, text in reversed(said_by_user) if mentions(text, value)), None)

    constraints, superseded, told = [], [], []
    for initial, final in zip(dialogue.get("goal", []), dialogue.get("final_goal", [])):
        _, domain, slot, wanted, _ = initial
        if not _values(wanted):
            continue  # a request: its final value is what the system answered
        finals = _values(final[3])
        for value in finals:
            where = last_user_saying(value)
            if where:
                constraints.append(Fact(CONSTRAINT, value, where, dialogue_id, domain, slot, canonical=value))
        for value in _values(wanted):
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
    groups = _groups(_crosswoz_dialogues(path_to_zip), min_pairs, _crosswoz_pair_count)
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
            constraints=_dedupe(constraints), superseded=_dedupe(superseded), assistant_facts=_dedupe(told),
            pair_count=sum(_crosswoz_pair_count(d) for _, d in group),
            message_dialogues={_crosswoz_message_id(did, n): did
                               for did, d in group for n in range(len(d["messages"]))},
        )


# --- SGD (google-research-datasets/dstc8-schema-guided-dialogue, CC BY-SA 4.0) --
#
# English dialogues, USER and SYSTEM turns alternating. A USER turn and the
# SYSTEM turn after it make one completed run. A system turn's
# ``service_call`` becomes what it was: an assistant message carrying the
# tool call, then a ``tool`` message with the ``service_results`` (as JSON),
# then the answer — so the pair holds only the answer (SPEC §4) and the tool
# results sit beside it, as SPEC §7–§8 expect.

SGD_SCOPE = "sgd"
SGD_ASSISTANT_ACTS = ("OFFER", "INFORM", "INFORM_COUNT", "CONFIRM")


def _sgd_dialogues(path: str | Path) -> list[tuple[str, dict]]:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        data = json.load(handle)
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of dialogues")
    return [(d["dialogue_id"], d) for d in data]


def _sgd_pair_count(dialogue: dict) -> int:
    turns = dialogue["turns"]
    return sum(1 for a, b in zip(turns, turns[1:])
               if a["speaker"] == "USER" and b["speaker"] == "SYSTEM" and b["utterance"].strip())


def _sgd_id(dialogue_id: str, turn_no: int, suffix: str = "") -> str:
    return f"sgd-{dialogue_id}-{turn_no:02d}{suffix}"


def _sgd_document(number: int, group: list[tuple[str, dict]], scope: str, source: str) -> dict:
    clock = _T0 + timedelta(days=number, hours=6)
    runs: list[dict] = []
    messages: list[dict] = []
    described = []

    def add(message: dict) -> None:
        nonlocal clock
        clock += timedelta(seconds=10)
        message.setdefault("status", "completed")
        message["created_at"] = _ts(clock)
        messages.append(message)

    for dialogue_id, dialogue in group:
        described.append({"id": dialogue_id, "services": list(dialogue.get("services", []))})
        run: dict | None = None
        for turn_no, turn in enumerate(dialogue["turns"]):
            speaker = turn["speaker"]
            if speaker == "USER":
                run = {"id": _sgd_id(dialogue_id, turn_no, "-run"), "status": "cancelled",
                       "created_at": _ts(clock + timedelta(seconds=10))}
                runs.append(run)
                add({"id": _sgd_id(dialogue_id, turn_no), "run_id": run["id"], "role": "user",
                     "content": turn["utterance"]})
            elif speaker == "SYSTEM":
                in_run = {"run_id": run["id"]} if run is not None else {}
                for j, frame in enumerate(f for f in turn["frames"] if f.get("service_call")):
                    call = frame["service_call"]
                    call_id = _sgd_id(dialogue_id, turn_no, f"-call{j}")
                    add({"id": call_id, **in_run, "role": "assistant", "content": "",
                         "tool_calls": [{"id": call_id, "name": f"{frame['service']}.{call['method']}",
                                         "arguments": json.dumps(call.get("parameters", {}), sort_keys=True)}]})
                    add({"id": _sgd_id(dialogue_id, turn_no, f"-result{j}"), **in_run, "role": "tool",
                         "tool_call_id": call_id,
                         "content": json.dumps(frame.get("service_results", []), sort_keys=True)})
                add({"id": _sgd_id(dialogue_id, turn_no), **in_run, "role": "assistant",
                     "content": turn["utterance"]})
                if run is not None:
                    run["status"] = "completed"
                    run = None
            else:
                raise ValueError(f"SGD dialogue {dialogue_id} turn {turn_no}: unknown speaker {speaker!r}")
    first, last = group[0][0], group[-1][0]
    return {
        "scope": scope,
        "id": f"sgd-{first}-{last}",
        "title": f"SGD dialogues {first}–{last} ({len(group)} dialogues)",
        "metadata": {"source": source, "dialogues": described},
        "runs": runs,
        "messages": messages,
    }


def _sgd_facts(dialogue_id: str, dialogue: dict) -> tuple[list[Fact], list[Fact], list[Fact], list[Fact]]:
    current: dict[tuple[str, str], tuple[str, Fact | None]] = {}  # (service, slot) -> (canonical, fact if said)
    superseded: list[Fact] = []
    told: list[Fact] = []
    service: list[Fact] = []
    results_seen: set[str] = set()
    for turn_no, turn in enumerate(dialogue["turns"]):
        text = turn["utterance"]
        message_id = _sgd_id(dialogue_id, turn_no)
        if turn["speaker"] == "USER":
            for frame in turn["frames"]:
                for action in frame["actions"]:
                    if action["act"] != "INFORM":
                        continue
                    for value, canonical in zip(action["values"], action["canonical_values"]):
                        key = (frame["service"], action["slot"])
                        before = current.get(key)
                        if before is not None and before[0] != canonical and before[1] is not None:
                            superseded.append(replace(before[1], kind=SUPERSEDED, replaced_by=value))
                        said = mentions(text, value)
                        fact = Fact(CONSTRAINT, value, message_id, dialogue_id, frame["service"], action["slot"],
                                    canonical=canonical, act="INFORM") if said else None
                        current[key] = (canonical, fact)
            continue
        for j, frame in enumerate(f for f in turn["frames"] if f.get("service_call")):
            for row in frame.get("service_results", []):
                for slot, value in sorted(row.items()):
                    value = str(value).strip()
                    results_seen.add(value.lower())
                    if len(value) >= MIN_VALUE_CHARS:
                        service.append(Fact(SERVICE, value, _sgd_id(dialogue_id, turn_no, f"-result{j}"),
                                            dialogue_id, frame["service"], slot, canonical=value))
        for frame in turn["frames"]:
            for action in frame["actions"]:
                if action["act"] not in SGD_ASSISTANT_ACTS:
                    continue
                for value, canonical in zip(action["values"], action["canonical_values"] or action["values"]):
                    if mentions(text, value):
                        told.append(Fact(ASSISTANT, value, message_id, dialogue_id, frame["service"], action["slot"],
                                         canonical=canonical, from_service=canonical.lower() in results_seen,
                                         act=action["act"]))
    constraints = [fact for _, fact in current.values() if fact is not None]
    finals = {key: canonical for key, (canonical, _) in current.items()}
    # A value put back later (A, then B, then A again) is current, not superseded.
    superseded = [f for f in superseded if finals[(f.domain, f.slot)] != f.canonical]
    return constraints, superseded, told, service


def _sgd_message_dialogues(document: dict, group: list[tuple[str, dict]]) -> dict[str, str]:
    prefixes = [(f"sgd-{did}-", did) for did, _ in group]
    out = {}
    for message in document["messages"]:
        out[message["id"]] = next(did for prefix, did in prefixes if message["id"].startswith(prefix))
    return out


def sgd_samples(path: str | Path, *, min_pairs: int = 30, limit: int | None = None, scope: str = SGD_SCOPE,
                source: str = "SGD dev set (google-research-datasets/dstc8-schema-guided-dialogue, CC BY-SA 4.0)",
                ) -> Iterator[Sample]:
    """SGD dialogues (a JSON list, optionally gzipped) joined into
    conversations of at least ``min_pairs`` pairs, each with its facts."""
    groups = _groups(_sgd_dialogues(path), min_pairs, _sgd_pair_count)
    for number, group in enumerate(groups):
        if limit is not None and number >= limit:
            return
        constraints, superseded, told, service = [], [], [], []
        for dialogue_id, dialogue in group:
            c, s, t, r = _sgd_facts(dialogue_id, dialogue)
            constraints += c
            superseded += s
            told += t
            service += r
        document = _sgd_document(number, group, scope, source)
        yield Sample(
            document=document,
            constraints=_dedupe(constraints), superseded=_dedupe(superseded),
            assistant_facts=_dedupe(told), service_values=_dedupe(service),
            pair_count=sum(_sgd_pair_count(d) for _, d in group),
            message_dialogues=_sgd_message_dialogues(document, group),
        )


def sgd_documents(path: str | Path, *, min_pairs: int = 30, limit: int | None = None,
                  scope: str = SGD_SCOPE) -> Iterator[dict]:
    """The documents of ``sgd_samples`` alone."""
    for sample in sgd_samples(path, min_pairs=min_pairs, limit=limit, scope=scope):
        yield sample.document
