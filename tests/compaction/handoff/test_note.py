"""The hand-off note's six-section format (SPEC §7)."""

import pytest

from compaction.handoff import note
from compaction.handoff.material import Material, MaterialPair, cut_middle, render_material


def test_rendered_note_has_six_headings_in_order_and_none_lines_for_empty_sections():
    text = note.render({note.REQUESTS: ["寄修左耳"]}, language=note.ZH)
    assert [line for line in text.splitlines() if line.startswith("## ")] == [
        "## 用户诉求", "## 待办", "## 下一步", "## 当前进度", "## 走不通的路", "## 已完成"]
    parsed = note.parse(text)
    assert [line.text for line in parsed.section(note.REQUESTS)] == ["寄修左耳"]
    assert parsed.section(note.DONE) == []
    assert parsed.language == note.ZH


def test_english_note_uses_english_headings():
    text = note.render({note.DONE: ["Refund filed, id R-1"]}, language=note.EN)
    assert "## User requests" in text and "## Dead ends" in text and "- none" in text
    assert note.parse(text).section(note.DONE)[0].text == "Refund filed, id R-1"


@pytest.mark.parametrize("text, problem", [
    ("just prose", "no section headings"),
    ("## 用户诉求\n## 待办\n## 下一步\n## 当前进度\n## 走不通的路", "missing heading '已完成'"),
    ("## 待办\n## 用户诉求\n## 下一步\n## 当前进度\n## 走不通的路\n## 已完成", "out of order"),
    ("## 用户诉求\n## 待办\n## 待办\n## 下一步\n## 当前进度\n## 走不通的路\n## 已完成", "more than once"),
    ("## User requests\n## 待办\n## Next step\n## Current progress\n## Dead ends\n## Done", "unexpected heading"),
])
def test_heading_problems_are_named(text, problem):
    assert problem in note.heading_problem(text)
    with pytest.raises(note.MalformedNote):
        note.parse(text)


def test_line_numbers_are_positions_in_the_whole_note():
    text = "## 用户诉求\n- a\n\n- b\n## 待办\n- 无\n## 下一步\n- 无\n## 当前进度\n- 无\n## 走不通的路\n- 无\n## 已完成\n- c"
    parsed = note.parse(text)
    assert [(line.text, line.number) for line in parsed.lines if not note.is_none_line(line.text)] == [
        ("a", 2), ("b", 4), ("c", 14)]


def test_quotes_are_split_into_fragments_in_both_languages():
    assert note.quotes("暂缓：先别提交（原话：算了，申请还是先别提交；等我下周再说）") == [
        "算了，申请还是先别提交", "等我下周再说"]
    assert note.quotes('On hold: claim (quote: "hold the claim" ; "next week")') == ["hold the claim", "next week"]
    assert note.quotes("寄修左耳（订单 88232）") == []


def test_a_lines_own_words_leave_its_quote_out():
    assert note.without_quote("暂缓：先别提交（原话：算了，申请还是先别提交）") == "暂缓：先别提交"
    assert note.without_quote('On hold: claim (quote: "hold the claim")') == "On hold: claim"
    assert note.without_quote("寄修左耳（订单 88232）") == "寄修左耳（订单 88232）"


def test_heading_lines_are_numbered_like_note_lines():
    text = note.render({note.REQUESTS: ["a", "b"]}, language=note.ZH)
    lines = note.scan(text)[2]
    assert lines[note.REQUESTS] == 1 and lines[note.TODOS] == 4 and lines[note.DONE] == 12


def test_quote_suffix_reads_back():
    for language in (note.ZH, note.EN):
        line = "x" + note.quote_suffix(["one", "two"], language=language)
        assert note.quotes(line) == ["one", "two"]


def test_summary_tags_are_unwrapped_when_present():
    assert note.extract_summary("thinking…<summary>\n## 用户诉求\n</summary> tail") == "## 用户诉求"
    assert note.extract_summary("  plain  ") == "plain"


def test_hold_and_abandoned_markers():
    assert note.is_hold("暂缓：送修") and note.is_hold("On hold: claim")
    assert note.is_abandoned("已放弃：AirPods Max") and note.is_abandoned("abandoned: upgrade")
    assert not note.is_hold("送修暂缓")
    for text in ("ON HOLD: claim", "\u212aeep", "On hold:", "On hold", "İabandoned: x", "Abandoned:x", ""):
        assert note.is_hold(text) == text.lower().startswith("on hold:")
        assert note.is_abandoned(text) == text.lower().startswith("abandoned:")


def test_language_is_chinese_when_cjk_outweighs_a_quarter_of_latin_letters():
    assert note.detect_language(["我想寄修 AirPods Pro 左耳"]) == note.ZH
    assert note.detect_language(["Please rebook flight HAT123 for 张"]) == note.EN
    assert note.detect_language([""]) == note.EN


def test_material_is_rendered_with_role_labels_and_long_messages_cut_in_the_middle():
    material = Material(pairs=(MaterialPair(3, "u", "你好" * 5, "a", "好的"),))
    assert render_material(material, language=note.ZH) == "用户: 你好你好你好你好你好\n助手: 好的"
    assert render_material(material, language=note.EN).startswith("User: ")
    cut = cut_middle("a" * 50 + "b" * 50, max_chars=20, language=note.EN)
    assert cut.startswith("a" * 10) and cut.endswith("b" * 10) and "80 characters omitted" in cut
    assert material.message_ids == ["u", "a"] and material.from_pair == material.to_pair == 3



def test_a_quote_is_searched_for_only_in_a_line_holding_its_marker():
    """``split_quote`` searches for 原话 / quote: only in a line that holds
    原话 or a colon: what searching every line finds, whatever the line."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    def searched_everywhere(text):  # split_quote as first written
        match = note._ZH_QUOTE.search(text) or note._EN_QUOTE.search(text)
        if not match:
            return text.strip(), []
        fragments = [p.strip().strip(note._QUOTE_MARKS).strip() for p in note._QUOTE_SPLIT.split(match.group(1))]
        head = text[:match.start()].rstrip()
        return (head[:-1] if head.endswith(("（", "(")) else head).rstrip(), [f for f in fragments if f]

    @settings(max_examples=500, deadline=None)
    @given(st.lists(st.sampled_from(["原话", "quote", "QUOTE", "：", ":", "（", "）", "(", ")", "；", " ", "a", "话", "'"]),
                    max_size=10))
    def agrees(pieces):
        text = "".join(pieces)
        assert note.split_quote(text) == searched_everywhere(text)

    agrees()
