"""The extractive summary: whole sentences, fact-bearing first, in order,
labelled, bounded, deterministic, Chinese and English (SPEC §5)."""

from hypothesis import given, settings as hsettings, strategies as st

from compaction.extraction import sentence_score, split_sentences, summarise


def test_chinese_splits_after_full_stops_exclamations_questions_semicolons_and_line_breaks():
    assert split_sentences("我们决定周三出发。票价是350元！要改签吗？不要；好的\n谢谢") == [
        "我们决定周三出发。", "票价是350元！", "要改签吗？", "不要；", "好的", "谢谢"]


def test_english_splits_on_sentence_ends_but_not_inside_numbers():
    assert split_sentences("The fee is 3.5 EUR. We will not refund it! Why? OK") == [
        "The fee is 3.5 EUR.", "We will not refund it!", "Why?", "OK"]


def test_sentences_with_numbers_dates_decisions_and_negations_score_higher_than_pleasantries():
    assert sentence_score("The fee was 3.50 EUR as of 2026-10-01.") > sentence_score("Thanks for asking.")
    assert sentence_score("We will not refund order AB-1234.") > sentence_score("Happy to help with that.")
    assert sentence_score("截至上周的净值是1.23元，不代表当前净值。") > sentence_score("好的，明白了。")


def test_every_sentence_kept_is_verbatim_in_order_and_labelled_with_its_answer_id():
    answers = [("a-1", "Hello there. The fee was 3.50 EUR on 2026-10-01. Have a nice day."),
               ("a-2", "谢谢你的耐心。我们决定不改签，票价350元。")]
    text = summarise(answers, target_chars=1500)
    lines = text.split("\n")
    assert lines[0].startswith("[a-1] ") and lines[1].startswith("[a-2] ")
    assert "The fee was 3.50 EUR on 2026-10-01." in lines[0]
    assert "我们决定不改签，票价350元。" in lines[1]


def test_under_a_tight_target_the_fact_bearing_sentences_win():
    answers = [("a-1", "Thanks for asking. I hope that helps. The refund of 120 EUR was not approved on 2026-11-02.")]
    text = summarise(answers, target_chars=70)
    assert text == "[a-1] The refund of 120 EUR was not approved on 2026-11-02."


def test_every_answer_keeps_its_best_sentence_before_others_get_more():
    long_facts = " ".join(f"Item {i} costs {i}.00 EUR." for i in range(40))
    answers = [("a-1", long_facts), ("a-2", "Booking ref XY-77 is confirmed.")]
    text = summarise(answers, target_chars=200)
    assert "[a-2] Booking ref XY-77 is confirmed." in text


@hsettings(max_examples=60, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=300), min_size=1, max_size=10), st.integers(min_value=40, max_value=3000))
def test_output_is_deterministic_within_the_target_and_made_of_input_sentences(texts, target):
    answers = [(f"a-{i}", t) for i, t in enumerate(texts) if t.strip()]
    if not answers:
        return
    first = summarise(answers, target_chars=target)
    assert first == summarise(answers, target_chars=target)
    assert len(first) <= target + 1  # the cut-off marker of the no-sentence-fits case
