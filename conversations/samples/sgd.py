"""SGD (google-research-datasets/dstc8-schema-guided-dialogue, CC BY-SA 4.0)."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Iterator

from .common import T0, join_dialogues, timestamp
from .facts import ASSISTANT, CONSTRAINT, MIN_VALUE_CHARS, SERVICE, SUPERSEDED, Fact, Sample, dedupe, mentions

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
    clock = T0 + timedelta(days=number, hours=6)
    runs: list[dict] = []
    messages: list[dict] = []
    described = []

    def add(message: dict) -> None:
        nonlocal clock
        clock += timedelta(seconds=10)
        message.setdefault("status", "completed")
        message["created_at"] = timestamp(clock)
        messages.append(message)

    for dialogue_id, dialogue in group:
        described.append({"id": dialogue_id, "services": list(dialogue.get("services", []))})
        run: dict | None = None
        for turn_no, turn in enumerate(dialogue["turns"]):
            speaker = turn["speaker"]
            if speaker == "USER":
                run = {"id": _sgd_id(dialogue_id, turn_no, "-run"), "status": "cancelled",
                       "created_at": timestamp(clock + timedelta(seconds=10))}
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
    groups = join_dialogues(_sgd_dialogues(path), min_pairs, _sgd_pair_count)
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
            constraints=dedupe(constraints), superseded=dedupe(superseded),
            assistant_facts=dedupe(told), service_values=dedupe(service),
            pair_count=sum(_sgd_pair_count(d) for _, d in group),
            message_dialogues=_sgd_message_dialogues(document, group),
        )


def sgd_documents(path: str | Path, *, min_pairs: int = 30, limit: int | None = None,
                  scope: str = SGD_SCOPE) -> Iterator[dict]:
    """The documents of ``sgd_samples`` alone."""
    for sample in sgd_samples(path, min_pairs=min_pairs, limit=limit, scope=scope):
        yield sample.document
