"""Long sample conversations and the facts a next run should get
(``conversations.samples``: CrossWOZ and SGD, for bench/fidelity.py and the
drift benchmark). Small hand-written fixtures in the datasets' own shapes;
the real files are only read by the last tests, which skip without them."""

from __future__ import annotations

import gzip
import json
import os
import zipfile
from datetime import datetime
from pathlib import Path

import pytest

from conversations.pairing import MessageView, RunView, project_pairs
from conversations.samples import (
    ASSISTANT,
    CONSTRAINT,
    SERVICE,
    SUPERSEDED,
    crosswoz_documents,
    crosswoz_samples,
    mentions,
    sgd_documents,
    sgd_samples,
)

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("SHARED_DATA_DIR") or REPO.parent / "shared" / "data")


def pairs_of(document: dict):
    """SPEC §4 applied to a document as it would be stored."""
    runs = [RunView(r["id"], r["id"], r["status"]) for r in document["runs"]]
    messages = [
        MessageView(m["id"], m["id"], m.get("run_id"), m["role"], m["content"], m["status"], bool(m.get("tool_calls")),
                    datetime.fromisoformat(m["created_at"].replace("Z", "+00:00")), n)
        for n, m in enumerate(document["messages"])
    ]
    return project_pairs(runs, messages)


def by_value(facts):
    return {f.value: f for f in facts}


# --- mentions --------------------------------------------------------------------


def test_mentions_is_case_insensitive():
    assert mentions("We booked a table at SINO tonight.", "Sino")


def test_mentions_needs_word_boundaries_around_latin_letters_and_digits():
    assert not mentions("in 2012 we", "12")
    assert not mentions("AAA battery", "AA")
    assert mentions("for 12 people", "12")
    assert mentions("call 408-247-8880.", "408-247-8880")


def test_mentions_finds_chinese_inside_running_text():
    assert mentions("推荐您去讲礼驴肉馆用餐。", "讲礼驴肉馆")


def test_one_character_values_are_never_mentioned():
    assert not mentions("是的，是这家。", "是")
    assert not mentions("2 people", "2")


# --- CrossWOZ --------------------------------------------------------------------


def crosswoz_dialogue(turns, goal, final_goal):
    return {"type": "单领域", "goal": goal, "final_goal": final_goal,
            "messages": [{"role": role, "content": text, "dialog_act": acts} for role, text, acts in turns]}


CW_A = crosswoz_dialogue(
    turns=[
        ("usr", "你好，我想找人均消费100-150元、有驴杂汤的餐馆。", [["Inform", "餐馆", "人均消费", "100-150元"]]),
        ("sys", "没有符合的，推荐您去人均消费68元的讲礼驴肉馆。",
         [["Inform", "餐馆", "人均消费", "68元"], ["Recommend", "餐馆", "名称", "讲礼驴肉馆"],
          ["NoOffer", "餐馆", "none", "none"]]),
        ("usr", "好的，驴杂汤一定要有，地址在哪？", [["Request", "餐馆", "地址", ""]]),
        ("sys", "地址是小汤山镇讲礼村。电话是无。", [["Inform", "餐馆", "地址", "小汤山镇讲礼村"], ["Inform", "餐馆", "电话", "无"],
                                   ["Inform", "餐馆", "评分", "4.8分"]]),
    ],
    goal=[[1, "餐馆", "人均消费", "100-150元", False], [1, "餐馆", "推荐菜", ["驴杂汤"], False],
          [1, "餐馆", "名称", "", False], [1, "餐馆", "地址", "", False], [1, "餐馆", "门票", "是", False]],
    final_goal=[[1, "餐馆", "人均消费", "68元", True], [1, "餐馆", "推荐菜", ["驴杂汤"], True],
                [1, "餐馆", "名称", "讲礼驴肉馆", True], [1, "餐馆", "地址", "小汤山镇讲礼村", True],
                [1, "餐馆", "门票", "是", True]],
)


def crosswoz_zip(tmp_path, dialogues: dict) -> Path:
    path = tmp_path / "cw.json.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("val.json", json.dumps(dialogues, ensure_ascii=False))
    return path


def test_crosswoz_constraint_is_a_final_goal_value_of_a_constraint_slot_that_the_user_said(tmp_path):
    [sample] = crosswoz_samples(crosswoz_zip(tmp_path, {"7": CW_A}), min_pairs=1)
    constraints = by_value(sample.constraints)
    assert set(constraints) == {"驴杂汤"}
    # The latest user message that said it.
    assert constraints["驴杂汤"].message_id == "cw-7-02" and constraints["驴杂汤"].kind == CONSTRAINT
    assert (constraints["驴杂汤"].domain, constraints["驴杂汤"].slot) == ("餐馆", "推荐菜")


def test_crosswoz_requested_slots_are_not_user_constraints(tmp_path):
    # 名称 and 地址 had empty goal values: the user asked, the system answered.
    [sample] = crosswoz_samples(crosswoz_zip(tmp_path, {"7": CW_A}), min_pairs=1)
    assert "讲礼驴肉馆" not in by_value(sample.constraints)
    assert "小汤山镇讲礼村" not in by_value(sample.constraints)


def test_crosswoz_goal_value_that_final_goal_changed_is_superseded_by_the_new_one(tmp_path):
    [sample] = crosswoz_samples(crosswoz_zip(tmp_path, {"7": CW_A}), min_pairs=1)
    [old] = sample.superseded
    assert (old.kind, old.value, old.replaced_by, old.message_id) == (SUPERSEDED, "100-150元", "68元", "cw-7-00")
    # 68元 is the system's offer, never said by the user: not a current constraint.
    assert "68元" not in by_value(sample.constraints)


def test_crosswoz_assistant_facts_are_inform_and_recommend_values_said_in_the_answer(tmp_path):
    [sample] = crosswoz_samples(crosswoz_zip(tmp_path, {"7": CW_A}), min_pairs=1)
    told = by_value(sample.assistant_facts)
    # "无" is one character; "4.8分" is annotated but not in the text; NoOffer has no value.
    assert set(told) == {"68元", "讲礼驴肉馆", "小汤山镇讲礼村"}
    assert told["讲礼驴肉馆"].message_id == "cw-7-01" and told["小汤山镇讲礼村"].message_id == "cw-7-03"
    assert all(f.kind == ASSISTANT and not f.from_service for f in told.values())


def test_crosswoz_samples_join_dialogues_until_min_pairs_and_the_remainder_joins_the_last(tmp_path):
    path = crosswoz_zip(tmp_path, {str(n): CW_A for n in range(7)})  # 2 pairs each
    samples = list(crosswoz_samples(path, min_pairs=5))
    # 3 + 3 dialogues make 6 pairs each; the 7th (2 pairs) joins the last group.
    assert [s.pair_count for s in samples] == [6, 8]
    assert [len(pairs_of(s.document)) for s in samples] == [6, 8]
    assert [d["id"] for d in samples[1].document["metadata"]["dialogues"]] == ["3", "4", "5", "6"]


def test_crosswoz_samples_make_nothing_of_a_file_too_short_for_one_conversation(tmp_path):
    assert list(crosswoz_samples(crosswoz_zip(tmp_path, {"1": CW_A}), min_pairs=3)) == []


def test_crosswoz_samples_limit_caps_the_conversations(tmp_path):
    path = crosswoz_zip(tmp_path, {str(n): CW_A for n in range(6)})
    assert len(list(crosswoz_samples(path, min_pairs=2, limit=2))) == 2


def test_crosswoz_samples_documents_are_the_documents_of_the_older_converter(tmp_path):
    path = crosswoz_zip(tmp_path, {str(n): CW_A for n in range(4)})
    documents = [s.document for s in crosswoz_samples(path, min_pairs=4)]
    assert documents == list(crosswoz_documents(path, per_conversation=2))


# --- SGD -------------------------------------------------------------------------


def user(text, *informs, service="Restaurants_2"):
    actions = [{"act": "INFORM", "slot": slot, "values": [value], "canonical_values": [canonical]}
               for slot, value, canonical in informs]
    return {"speaker": "USER", "utterance": text, "frames": [{"service": service, "actions": actions, "slots": []}]}


def system(text, *acts, call=None, results=None, service="Restaurants_2"):
    actions = [{"act": act, "slot": slot, "values": [value] if value else [],
                "canonical_values": [canonical] if canonical else []} for act, slot, value, canonical in acts]
    frame = {"service": service, "actions": actions, "slots": []}
    if call is not None:
        frame["service_call"] = {"method": call, "parameters": {"location": "San Jose"}}
        frame["service_results"] = results or []
    return {"speaker": "SYSTEM", "utterance": text, "frames": [frame]}


SGD_A = {
    "dialogue_id": "1_00001",
    "services": ["Restaurants_2"],
    "turns": [
        user("A table for four at Sipan in San Jose, please.", ("restaurant_name", "Sipan", "Sipan Peruvian"),
             ("location", "San Jose", "San Jose"), ("number_of_seats", "4", "4")),
        system("What time would you like?", ("REQUEST", "time", "", "")),
        user("Actually make it Rosie Mccann's, at 7 pm.", ("restaurant_name", "Rosie Mccann's", "Rosie Mccann's Pub"),
             ("time", "7 pm", "19:00")),
        system("Rosie Mccann's in San Jose at 7 pm: confirm?",
               ("CONFIRM", "restaurant_name", "Rosie Mccann's", "Rosie Mccann's Pub"),
               ("CONFIRM", "time", "7 pm", "19:00")),
        user("No, make it for five people and at 8 pm.", ("number_of_seats", "5", "5"), ("time", "8 pm", "20:00")),
        system("Booked. Their phone is 408-555-0101 and I found 3 other places.",
               ("INFORM", "phone_number", "408-555-0101", "408-555-0101"), ("INFORM_COUNT", "count", "3", "3"),
               ("NOTIFY_SUCCESS", "", "", ""),
               call="ReserveRestaurant",
               results=[{"restaurant_name": "Rosie Mccann's Pub", "phone_number": "408-555-0101", "rating": "4.3",
                         "has_vegetarian_options": "True", "x": "1"}]),
        user("Hmm, 7 pm after all.", ("time", "7 pm", "19:00")),
        system("How about Sino, rated 4.5?", ("OFFER", "restaurant_name", "Sino", "Sino"),
               ("OFFER", "rating", "4.5", "4.5")),
    ],
}


def sgd_file(tmp_path, dialogues, *, gz=True) -> Path:
    path = tmp_path / ("sgd.json.gz" if gz else "sgd.json")
    data = json.dumps(dialogues).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def test_sgd_current_constraints_are_the_latest_value_the_user_said_per_slot(tmp_path):
    [sample] = sgd_samples(sgd_file(tmp_path, [SGD_A]), min_pairs=1)
    current = {(f.slot, f.value): f.message_id for f in sample.constraints}
    assert current == {
        ("restaurant_name", "Rosie Mccann's"): "sgd-1_00001-02",
        ("location", "San Jose"): "sgd-1_00001-00",
        ("time", "7 pm"): "sgd-1_00001-06",
    }
    # 5 seats is annotated "5" but said "five": not a value the text can be searched for.
    assert all(f.slot != "number_of_seats" for f in sample.constraints)


def test_sgd_a_corrected_value_is_superseded_by_what_replaced_it(tmp_path):
    [sample] = sgd_samples(sgd_file(tmp_path, [SGD_A]), min_pairs=1)
    superseded = {(f.slot, f.value): (f.replaced_by, f.canonical, f.message_id) for f in sample.superseded}
    assert superseded[("restaurant_name", "Sipan")] == ("Rosie Mccann's", "Sipan Peruvian", "sgd-1_00001-00")
    # 4 seats was said as "four": the canonical change is seen, but there is no text to supersede.
    assert ("number_of_seats", "4") not in superseded


def test_sgd_a_value_put_back_later_is_current_not_superseded(tmp_path):
    # 7 pm -> 8 pm -> 7 pm: 8 pm is superseded, 7 pm is not.
    [sample] = sgd_samples(sgd_file(tmp_path, [SGD_A]), min_pairs=1)
    times = {f.value: f.replaced_by for f in sample.superseded if f.slot == "time"}
    assert times == {"8 pm": "7 pm"}
    assert {f.value for f in sample.superseded} == {"Sipan", "8 pm"}


def test_sgd_assistant_facts_are_offered_informed_counted_and_confirmed_values_said(tmp_path):
    [sample] = sgd_samples(sgd_file(tmp_path, [SGD_A]), min_pairs=1)
    told = {f.value: (f.act, f.slot, f.message_id, f.from_service) for f in sample.assistant_facts}
    # "3" (INFORM_COUNT) is one character; REQUEST and NOTIFY_SUCCESS state no value.
    assert told == {
        "Rosie Mccann's": ("CONFIRM", "restaurant_name", "sgd-1_00001-03", False),
        "7 pm": ("CONFIRM", "time", "sgd-1_00001-03", False),
        "408-555-0101": ("INFORM", "phone_number", "sgd-1_00001-05", True),
        "Sino": ("OFFER", "restaurant_name", "sgd-1_00001-07", False),
        "4.5": ("OFFER", "rating", "sgd-1_00001-07", False),
    }
    assert all(f.kind == ASSISTANT for f in sample.assistant_facts)


def test_sgd_a_count_the_assistant_states_is_an_assistant_fact(tmp_path):
    turns = SGD_A["turns"][:1] + [system("I found 12 restaurants in San Jose.", ("INFORM_COUNT", "count", "12", "12"))]
    [sample] = sgd_samples(sgd_file(tmp_path, [dict(SGD_A, turns=turns)]), min_pairs=1)
    assert [(f.act, f.value) for f in sample.assistant_facts] == [("INFORM_COUNT", "12")]


def test_sgd_service_values_are_every_result_value_with_the_tool_message_that_returned_it(tmp_path):
    [sample] = sgd_samples(sgd_file(tmp_path, [SGD_A]), min_pairs=1)
    values = {(f.slot, f.value): f.message_id for f in sample.service_values}
    assert values == {
        ("restaurant_name", "Rosie Mccann's Pub"): "sgd-1_00001-05-result0",
        ("phone_number", "408-555-0101"): "sgd-1_00001-05-result0",
        ("rating", "4.3"): "sgd-1_00001-05-result0",
        ("has_vegetarian_options", "True"): "sgd-1_00001-05-result0",
    }
    assert all(f.kind == SERVICE for f in sample.service_values)


def test_sgd_service_call_is_a_tool_call_and_result_and_the_pair_holds_only_the_answer(tmp_path):
    [sample] = sgd_samples(sgd_file(tmp_path, [SGD_A]), min_pairs=1)
    messages = {m["id"]: m for m in sample.document["messages"]}
    call, result = messages["sgd-1_00001-05-call0"], messages["sgd-1_00001-05-result0"]
    assert call["role"] == "assistant" and call["tool_calls"][0]["name"] == "Restaurants_2.ReserveRestaurant"
    assert json.loads(call["tool_calls"][0]["arguments"]) == {"location": "San Jose"}
    assert result["role"] == "tool" and result["tool_call_id"] == "sgd-1_00001-05-call0"
    assert json.loads(result["content"])[0]["phone_number"] == "408-555-0101"
    run = messages["sgd-1_00001-04"]["run_id"]
    assert call["run_id"] == result["run_id"] == messages["sgd-1_00001-05"]["run_id"] == run
    pairs = pairs_of(sample.document)
    assert [(p.user.external_id, p.assistant.external_id) for p in pairs] == [
        (f"sgd-1_00001-{u:02d}", f"sgd-1_00001-{u + 1:02d}") for u in (0, 2, 4, 6)]
    assert sample.pair_count == 4


def test_sgd_documents_are_valid_ingest_documents_with_increasing_times(tmp_path):
    from conversations.documents import validate_document

    [document] = sgd_documents(sgd_file(tmp_path, [SGD_A, dict(SGD_A, dialogue_id="1_00002")]), min_pairs=8)
    validate_document(document)
    times = [m["created_at"] for m in document["messages"]]
    assert times == sorted(times) and len(set(times)) == len(times)
    assert document["id"] == "sgd-1_00001-1_00002"


def test_sgd_user_turn_without_an_answer_is_a_cancelled_run_and_makes_no_pair(tmp_path):
    dialogue = dict(SGD_A, turns=SGD_A["turns"] + [user("One more thing: Napa.", ("location", "Napa", "Napa"))])
    [sample] = sgd_samples(sgd_file(tmp_path, [dialogue], gz=False), min_pairs=1)
    assert sample.document["runs"][-1]["status"] == "cancelled"
    assert sample.pair_count == len(pairs_of(sample.document)) == 4
    # Still what the user said last: Napa replaces San Jose.
    assert {f.value for f in sample.constraints if f.slot == "location"} == {"Napa"}


def test_sgd_corrections_are_per_dialogue(tmp_path):
    turns = [user("Find me a table in Napa.", ("location", "Napa", "Napa")),
             system("Which restaurant?", ("REQUEST", "restaurant_name", "", ""))]
    other = dict(SGD_A, dialogue_id="1_00009", turns=turns)
    [sample] = sgd_samples(sgd_file(tmp_path, [SGD_A, other]), min_pairs=5)
    assert {(f.dialogue, f.value) for f in sample.constraints if f.slot == "location"} == {
        ("1_00001", "San Jose"), ("1_00009", "Napa")}
    assert all(f.slot != "location" for f in sample.superseded)


def test_converting_the_same_files_twice_gives_the_same_samples(tmp_path):
    path = sgd_file(tmp_path, [SGD_A, dict(SGD_A, dialogue_id="1_00002")])
    assert list(sgd_samples(path, min_pairs=3)) == list(sgd_samples(path, min_pairs=3))
    cw = crosswoz_zip(tmp_path, {"1": CW_A, "2": CW_A})
    assert list(crosswoz_samples(cw, min_pairs=2)) == list(crosswoz_samples(cw, min_pairs=2))


# --- the real files ----------------------------------------------------------------


def _real(name):
    path = DATA / name
    if not path.is_file():
        pytest.skip(f"{name} not found in {DATA}")
    return path


@pytest.mark.parametrize("loader,name", [(crosswoz_samples, "crosswoz-val.json.zip"),
                                         (sgd_samples, "sgd-dev-001.json.gz")])
def test_real_samples_reach_30_pairs_and_every_fact_is_said_in_its_message(loader, name):
    samples = list(loader(_real(name), min_pairs=30, limit=4))
    assert len(samples) == 4
    for sample in samples:
        assert sample.pair_count == len(pairs_of(sample.document)) >= 30
        texts = {m["id"]: m["content"] for m in sample.document["messages"]}
        assert sample.constraints and sample.assistant_facts
        for fact in sample.constraints + sample.superseded + sample.assistant_facts:
            assert mentions(texts[fact.message_id], fact.value), fact
    assert any(s.superseded for s in samples)


def test_every_message_is_mapped_to_the_dialogue_it_comes_from(tmp_path):
    [sample] = sgd_samples(sgd_file(tmp_path, [SGD_A, dict(SGD_A, dialogue_id="1_00002")]), min_pairs=8)
    assert set(sample.message_dialogues) == {m["id"] for m in sample.document["messages"]}
    assert sample.message_dialogues["sgd-1_00001-05-result0"] == "1_00001"
    assert sample.message_dialogues["sgd-1_00002-07"] == "1_00002"
    [cw] = crosswoz_samples(crosswoz_zip(tmp_path, {"7": CW_A, "8": CW_A}), min_pairs=4)
    assert set(cw.message_dialogues) == {m["id"] for m in cw.document["messages"]}
    assert cw.message_dialogues["cw-8-03"] == "8" and cw.message_dialogues["cw-7-00"] == "7"
