"""The reading rules the builder and the drift checks share (SPEC §8;
compaction.handoff.reading), each with positive cases and near-misses."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compaction.handoff import reader as rd
from compaction.handoff import reading as r
from compaction.handoff import vocabulary as v

READER = rd.Reader(v.DEFAULT)


def phrase(clause, category=v.CONSTRAINT):
    return r.Phrase.of(clause, READER.find(category, clause))


def keeps(line, clause, category=v.CONSTRAINT):
    return r.keeps(r.Holding(line), phrase(clause, category))


# ---------------------------------------------------------------- normalisation and terms

def test_whitespace_normalisation_folds_runs_and_drops_spaces_beside_wide_characters():
    assert r.normalise("  算了， 申请\n还是  先别提交 ") == "算了，申请还是先别提交"
    assert r.normalise("hold  the\tclaim\n until Monday") == "hold the claim until Monday"


def test_key_terms_leave_out_filler_characters_how_words_and_stop_words():
    assert r.key_terms("我想给妈妈买个iPad") == {"妈妈", "妈买", "ipad"}  # 我想 想给 给妈 买个: fillers
    assert r.key_terms("现在可以提交了") == {"提交"}  # timing and modal words say how, not what
    assert r.key_terms("Please hold the claim until Monday") == {"claim", "monday"}
    assert r.key_terms("AirPods Pro 3") == {"airpods", "pro"}  # a single digit is no term


def _key_terms_pair_by_pair(text):
    """The key-term rule read literally: each Latin token, and each pair of
    neighbouring ideographs of a run, neither a filler, not a how-word."""
    found = {t.lower() for t in re.findall(r"[A-Za-z0-9][A-Za-z0-9\-_.]*[A-Za-z0-9]|[A-Za-z0-9]", text)}
    found = {t for t in found if len(t) >= 2 and t not in r._EN_STOP}
    for run in re.findall(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+", text):
        for a, b in zip(run, run[1:]):
            if a not in r._STOP_CHARS and b not in r._STOP_CHARS and a + b not in r._GENERIC:
                found.add(a + b)
    return found


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="的了吗我你先别不要可以申请提交算了只要银色深空灰用户原话现在ab AirPods1-.\u3400\u4dbf\u4e00\u9fff"
                        "\uf900\ufaff\u3041Kſ", max_size=40))
def test_key_terms_are_the_pairs_the_rule_names_and_nothing_else(text):
    assert r.key_terms.__wrapped__(text) == _key_terms_pair_by_pair(text)



_TERM_TEXTS = st.text(alphabet="的了吗我你先别不要可以申请提交算了只要银色深空灰用户原话现在ab AirPods1-.\n\u3400\u4dbf"
                               "\u4e00\u9fff\uf900\ufaff\u3041Kſ", max_size=40)


@settings(max_examples=500, deadline=None)
@given(_TERM_TEXTS, _TERM_TEXTS)
def test_a_long_texts_terms_asked_one_by_one_are_its_key_terms(text, other):
    """``TermsOf``: a key term of any text is in it exactly when it is one of
    ``text``'s key terms, and news against it is news against those."""
    held = r.TermsOf(text)
    assert {term for term in r.key_terms(other) if term in held} == r.key_terms(other) & r.key_terms(text)
    assert r.brings_news(other, held) == r.brings_news(other, r.key_terms(text))

def test_a_latin_word_or_number_is_worth_two_a_chinese_term_one():
    assert r.worth({"ipad", "4000", "妈妈"}) == 5
    assert r.shared(frozenset({"ipad", "妈妈"}), frozenset({"ipad", "银色"})) == 2


# ---------------------------------------------------------------- identifiers

def test_identifiers_are_order_ticket_and_booking_numbers():
    assert r.identifiers("订单88232，工单RMA-5521，预订K7QZ2M，单号 SO-20260915-3307") == (
        "88232", "RMA-5521", "K7QZ2M", "SO-20260915-3307")


@pytest.mark.parametrize("text", ["售价1899元", "2026-08-31签收", "128GB银色", "15kg以内", "编号 A12", "Pro 3"])
def test_prices_dates_capacities_and_short_codes_are_not_identifiers(text):
    assert r.identifiers(text) == ()


# ---------------------------------------------------------------- negation

@pytest.mark.parametrize("text, word", [
    ("我不同意", "同意"), ("我没同意", "同意"), ("我不再同意", "同意"), ("别同意", "同意"),
    ("I don't agree", "agree"), ("I do not really agree", "agree"), ("we no longer agree", "agree"),
    ("I won't agree", "agree"), ("I never agree", "agree"),
])
def test_a_word_right_after_a_negation_is_negated(text, word):
    assert r.negated(text, text.index(word))


@pytest.mark.parametrize("text, word", [("我同意", "同意"), ("不过我同意", "同意"), ("I agree", "agree"),
                                        ("not now, but I agree", "agree")])
def test_a_negation_further_away_does_not_negate(text, word):
    assert not r.negated(text, text.rindex(word))


def test_unnegated_skips_a_negated_match():
    assert READER.unnegated(v.CONSENT, "我不同意") is None
    assert READER.unnegated(v.CONSENT, "我不同意，后来又同意办理").group() == "同意办理"


def test_without_blanks_every_match_once_even_when_matches_overlap():
    assert READER.without("先不买新的了，还是先修这副吧", (v.ABANDON,)).startswith(" ")
    assert "不买" not in READER.without("先不买新的了", (v.ABANDON, v.HOLD))
    assert READER.matter_terms("算了，先别提交送修申请？") == {"提交", "交送", "送修", "修申", "申请"}
    assert READER.matter_terms("AirPods Max现在多少钱？") == {"airpods", "max"}


# ---------------------------------------------------------------- keeping

def test_a_verbatim_clause_is_kept_whatever_the_whitespace():
    assert keeps("为妈妈买iPad（原话：预算4000以内， 只要银色或者 深空灰）", "只要银色或者深空灰")


def test_a_clause_without_its_operator_word_is_not_kept():
    assert not keeps("为妈妈买iPad：银色或深空灰优先", "只要银色或者深空灰")


def test_a_clause_without_one_of_its_numbers_is_not_kept():
    assert keeps("为妈妈买iPad，预算4000以内", "预算4000以内")
    assert not keeps("为妈妈买iPad，预算以内", "预算4000以内")
    assert not keeps("为妈妈买iPad，预算5000以内", "预算4000以内")


def test_sixty_percent_of_the_value_terms_keep_a_clause_and_fewer_do_not():
    clause = "only red blue green white black"  # five value words, worth 10
    assert keeps("only red blue green", clause)  # 6 of 10
    assert not keeps("only red blue", clause)  # 4 of 10
    assert not keeps("only red blue", "only red blue green white")  # 4 of 8: half is not enough


def test_what_a_condition_is_about_must_be_kept_as_well_as_its_value():
    line = "给我妈买个iPad（原话：预算4000以内；只要银色或者深空灰）"
    assert not keeps(line, "对了，iPad的保护壳也只要银色或者深空灰的")  # the case is new
    assert keeps(line + "；保护壳", "对了，iPad的保护壳也只要银色或者深空灰的")


def test_a_hold_is_kept_by_its_hold_word_and_terms():
    assert keeps("暂缓：送修申请先别提交", "算了，申请还是先别提交", v.HOLD)
    assert not keeps("送修申请：用户要求暂缓", "算了，申请还是先别提交", v.HOLD)


def test_keeps_text_without_an_operator_is_verbatim_only():
    assert r.keeps_text(READER, "寄修左耳（原话：帮我寄修左耳）", "帮我寄修左耳")
    assert not r.keeps_text(READER, "寄修左耳", "帮我寄修左耳")


# ---------------------------------------------------------------- superseding and news

def test_a_restated_bound_with_another_number_supersedes_the_old_one():
    assert r.supersedes(phrase("预算改成5000以内吧"), phrase("预算4000以内"))


@pytest.mark.parametrize("new, old", [
    ("预算4000以内吧", "预算4000以内"),  # the same number: a restatement, not a change
    ("预算5000以下", "预算4000以内"),  # another operator
    ("人数5人以内", "预算4000以内"),  # about something else
    ("预算以内", "预算4000以内"),  # no number to replace the old one with
])
def test_near_misses_of_superseding(new, old):
    assert not r.supersedes(phrase(new), phrase(old))


def test_a_new_identifier_alone_is_news():
    known = r.key_terms("已办结：取消订单66001（原话：帮我取消订单66001）")
    assert r.brings_news("再帮我取消订单66002", known)
    assert not r.brings_news("再帮我取消订单66001", known)


def test_new_terms_worth_three_are_news_and_worth_two_are_not():
    known = r.key_terms("寄修左耳")
    assert r.brings_news("右耳杂音也很大", known)  # 右耳 耳杂 杂音: 3
    assert not r.brings_news("右耳杂", known)  # 右耳 耳杂: 2
    assert not r.brings_news("好的，谢谢", known)
    assert r.NEW_MATTER_WORTH == 3


def test_reading_is_remembered_but_long_texts_are_read_each_time():
    long = "订单88232 " * 1000
    assert r.identifiers(long) == ("88232",) and re.search("88232", long)


def test_a_date_is_read_in_any_decimal_digits_and_never_without_one():
    from compaction.handoff import values

    assert values.dates("８月３１日签收") == (("８月３１日", (None, 8, 31)),)  # full-width digits are digits
    assert values.dates("Aug 31 and 2026-08-31") == (("2026-08-31", (2026, 8, 31)), ("Aug 31", (None, 8, 31)))
    assert values.dates("八月三十一日签收") == () and values.dates("August the last") == ()


@pytest.mark.parametrize("text", ["算了，申请还是先别提交", "", "a\u3000b", "\u00a0先别", "x\u2028y", "hold  on ", "１２:３０"])
def test_normalisation_of_a_text_with_or_without_whitespace_is_the_rule(text):
    assert r.normalise.__wrapped__(text) == re.sub(r" (?=[^\x00-\x7f])|(?<=[^\x00-\x7f]) ", "",
                                                   re.sub(r"\s+", " ", text).strip())


def test_a_clock_time_needs_its_colon():
    from compaction.handoff import values

    assert values.clock_times("下午3:30或者15：45") == [("3:30", "3:30"), ("15:45", "15:45")]
    assert values.clock_times("下午3点30分") == []


def _matches_as(pattern, plain, alphabet, max_size):
    """``pattern`` finds what ``plain`` (the pattern it was first written as)
    finds — the same matches at the same places — in any text of
    ``alphabet`` (hypothesis)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=500, deadline=None)
    @given(st.text(alphabet=alphabet, max_size=max_size))
    def agrees(text):
        assert [m.span() for m in pattern.finditer(text)] == [m.span() for m in plain.finditer(text)]

    agrees()


def test_numbers_are_the_digits_not_after_a_digit_or_a_dot_with_what_follows():
    """``_NUMBER`` looks behind after its first digit (so re scans for a
    digit): the numbers of the look-behind-first pattern, whatever the text."""
    import re

    from compaction.handoff import reading

    _matches_as(reading._NUMBER, re.compile(r"(?<![\d.])\d[\d,]*(?:\.\d+)?(?![\d])"), "0123456789.,a 元-", 14)
    assert reading.numbers("预算4,000以内，v1.5 和 .5") == frozenset({"4000", "1.5"})


def test_dates_are_found_as_the_look_behind_first_forms_find_them():
    """The date forms look behind after their first digit (so re scans for a
    digit), and the English forms run only on a text with a Latin letter:
    the dates of the plain forms, whatever the text."""
    import re

    from compaction.handoff import values

    plain = (re.compile(r"(?<!\d)(\d{4})\s*[-/.年]\s*(\d{1,2})\s*[-/.月]\s*(\d{1,2})\s*[日号]?(?!\d)"),
             re.compile(r"(?<![\d年\-/.])()(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]"))
    for new, old in zip(values._DATE_FORMS, plain):
        _matches_as(new, old, "0123456789-/.年月日号 a", 16)
    assert values.dates.__wrapped__("2026-08-31签收，8月31日，Aug 31, ſep 3") == (
        ("2026-08-31", (2026, 8, 31)), ("8月31日", (None, 8, 31)), ("Aug 31", (None, 8, 31)), ("ſep 3", (None, 9, 3)))
    assert values.dates("due aprıl 2") == (("aprıl 2", (None, 4, 2)),)  # re.I folds ı into i: no KeyError



def test_english_dates_are_searched_for_only_in_texts_holding_what_they_need():
    """``values._EN_DATE_NEEDS``: each English form is tried only on a text
    holding what its matches need — the same matches as trying it on every
    text, whatever the text (the long s, the dotless i and the Kelvin sign
    among the letters)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from compaction.handoff import values

    @settings(max_examples=1000, deadline=None)
    @given(st.lists(st.sampled_from(["Aug", "ſep", "aprıl", "DEC", "K", "st", "TH", ".", " ", "\n", "3", "12", "a",
                                     "月"]), max_size=8))
    def agrees(pieces):
        text = "".join(pieces)
        for form, needs in zip(values._EN_DATE_FORMS, values._EN_DATE_NEEDS):
            if not needs.search(text):
                assert not form.search(text)

    agrees()

def test_latin_tokens_are_those_of_the_alternation_they_were_first_written_as():
    import re

    from compaction.handoff import reading

    _matches_as(reading._LATIN_TOKEN, re.compile(r"[A-Za-z0-9][A-Za-z0-9\-_.]*[A-Za-z0-9]|[A-Za-z0-9]"),
                "aZ09-_. 文", 14)
