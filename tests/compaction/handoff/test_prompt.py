"""The frozen handoff@1 prompt (SPEC §7, seed 001 "交接单该装什么")."""

import hashlib

import pytest

from compaction.handoff import note, prompt
from compaction.handoff.material import Material, MaterialPair


def _heading_lines(text):
    return [line for line in text.splitlines() if line.startswith("## ")]


@pytest.mark.parametrize("language", [note.ZH, note.EN])
def test_system_prompt_lists_the_languages_six_headings_in_order(language):
    system = prompt.render_system(language)
    headings = _heading_lines(system)
    assert headings == [f"## {note.HEADINGS[language][key]}" for key in note.SECTIONS]
    # The heading block the model is shown is itself a note the parser accepts.
    assert note.heading_problem("\n".join(headings)) == ""


def test_chinese_prompt_names_the_chinese_markers():
    system = prompt.render_system(note.ZH)
    for marker in ("暂缓：", "已放弃：", "原话：", "- 无", "Chinese"):
        assert marker in system
    assert "User requests" not in system


def test_english_prompt_names_the_english_markers():
    system = prompt.render_system(note.EN)
    for marker in ("On hold:", "Abandoned:", "quote:", "- none", "English"):
        assert marker in system
    assert "用户诉求" not in system


@pytest.mark.parametrize("rule", [
    # every row of seed 001's table: what each section holds and must not hold
    "one line per matter", "ids the user gave", "Never here: questions the user asked",
    "checklists or comparisons", "explicitly asked for that are not done", "process already started",
    "suggestions the user did not accept", "problems a lookup", "material the assistant asked",
    "exactly one to-do", "consent that was later withdrawn", "only held matters remain",
    "latest action taken", "drafted, not submitted", "failed, were refused", "at most three lines",
    "detours while searching", "business states a lookup", "confirmed as successful", "id the result returned",
    "answers, checklists, plans, drafted texts",
    # the rules around the table
    "Questions are not requirements", "能不能", "怎么办", "有没有", "not merged into another matter",
    "restatement for something the user explicitly asked", "stay out of the user requests",
    "delete the earlier consent from every section", "A consent given again after a hold is current",
    "Clear old statements that conflict with the latest state", "exactly in the user's words",
    "Do not grow without new matters", "<summary>…</summary>", "Organise the note by matter",
])
def test_system_prompt_carries_each_rule_of_seed_001(rule):
    assert rule in prompt.render_system(note.ZH)


def test_user_prompt_holds_the_parent_note_and_the_material():
    parent = note.render({note.REQUESTS: ["寄修左耳（原话：帮我寄修）"]}, language=note.ZH)
    rendered = prompt.render_prompt(parent_note=parent, material_text="用户: 你好\n助手: 您好", language=note.ZH)
    assert parent in rendered.user and "用户: 你好\n助手: 您好" in rendered.user
    assert '"用户:" lines are the user\'s own words' in rendered.user
    assert rendered.user.rstrip().endswith("inside <summary>…</summary>.")
    assert "Questions are not requirements" not in rendered.user and "questions are not requirements" in rendered.user
    assert rendered.prompt_version == "handoff@1"


@pytest.mark.parametrize("parent", [None, "", "   "])
def test_first_generation_says_there_is_no_parent(parent):
    rendered = prompt.render_prompt(parent_note=parent, material_text="User: hi", language=note.EN)
    assert "(none: this is the first generation)" in rendered.user
    assert '"User:" lines' in rendered.user


def test_material_with_braces_is_passed_through_untouched():
    text = 'User: {"order": "88232"} {missing}'
    assert text in prompt.render_prompt(parent_note=None, material_text=text, language=note.EN).user


def test_render_for_material_uses_the_material_renderer():
    material = Material(pairs=(MaterialPair(0, "u1", "帮我寄修", "a1", "好的"),))
    rendered = prompt.render_for_material(parent_note=None, material=material, language=note.ZH)
    assert "用户: 帮我寄修\n助手: 好的" in rendered.user


def test_an_unknown_language_is_refused():
    with pytest.raises(ValueError, match="unknown note language 'fr'"):
        prompt.render_system("fr")


def test_handoff_1_is_frozen():
    # handoff@1's text must never change once used; a changed prompt is handoff@2.
    digest = hashlib.sha256((prompt.SYSTEM_TEMPLATE + "\x00" + prompt.USER_TEMPLATE).encode()).hexdigest()
    assert prompt.PROMPT_VERSION_SPEC["name"] == "handoff@1"
    assert digest == FROZEN_DIGEST


FROZEN_DIGEST = "1707bf97a4379e6773bce787dbfe7669cf14fbf7e1469cf74bfd368940347bdc"


@pytest.mark.parametrize("language", [note.ZH, note.EN])
def test_the_example_hold_line_is_one_the_note_parser_reads_as_a_hold_with_a_quote(language):
    line = prompt.example_hold_line(language)
    assert line in prompt.render_system(language)
    body = line[2:]
    assert note.is_hold(body) and note.quotes(body) == ["<the user's words>"]
