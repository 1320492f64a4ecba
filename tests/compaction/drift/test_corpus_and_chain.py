"""How the drift checks search the chain (compaction.drift.corpus, chain)
and read texts by script (compaction.handoff.reading): faster ways to the
same answers, so each is checked against the plain way."""

import difflib
import re

import pytest

from compaction.drift.checkers import ChainHistory
from compaction.drift.corpus import Corpus
from compaction.handoff import reader as rd
from compaction.handoff import reading as r
from compaction.handoff import vocabulary as v

TEXTS = ["算了，申请还是先别提交", "", "预算4000以内，只要银色或者深空灰", "I only want a window seat", "先别提交，等我下周再说"]


def _closest_by_difflib(texts, words):
    best, best_size = None, max(2, len(words) // 3)
    for i, text in enumerate(texts):
        size = difflib.SequenceMatcher(None, words, text, autojunk=False).find_longest_match(
            0, len(words), 0, len(text)).size
        if size > best_size or (best is None and size == best_size):
            best, best_size = i, size
    return best


def test_holding_names_each_text_holding_the_words_once_in_order():
    corpus = Corpus(TEXTS)
    assert corpus.holding("先别提交") == [0, 4]
    assert corpus.holding("提交先别") == [] and corpus.holding("") == []
    assert "window" in corpus and "" not in corpus
    assert corpus.holding("交\x00") == []  # no hit spans two texts


@pytest.mark.parametrize("words", ["申请先别提交了吧", "只要深空灰的", "window seat please", "下周再说吧算了", "完全无关的话",
                                   "x", "先别提交"])
def test_the_closest_text_is_the_one_difflib_finds(words):
    assert Corpus(TEXTS).closest(words) == _closest_by_difflib(TEXTS, words)


def test_an_extended_corpus_is_the_corpus_of_all_its_texts():
    whole, grown = Corpus(TEXTS), Corpus(TEXTS[:2]).extended(TEXTS[2:])
    assert (grown.joined, grown.starts, grown.texts) == (whole.joined, whole.starts, whole.texts)
    assert Corpus([]).extended(["a"]).joined == "a" and Corpus(["a"]).extended([]).joined == "a"


@pytest.mark.parametrize("pattern, needs", [
    (r"\bhold (off|on)\b", (True, False)),
    (r"先别", (False, True)),
    (r"\d+\s*(元|块)", (False, True)),
    (r"[？?]\s*$", (False, False)),  # a question mark alone needs no script
    (r"\$\s?\d", (False, False)),
    (r"(a|先)", (False, False)),  # either script may match
    (r"x?先", (False, True)),
])
def test_a_pattern_is_skipped_only_on_texts_it_cannot_match(pattern, needs):
    assert rd._needs(re.compile(pattern, re.I)) == needs


def test_script_skipping_gives_the_answers_of_every_pattern():
    vocabulary = v.DEFAULT.extended({v.HOLD: {"en": [r"hang on"]}, v.QUESTION: {"zh": [r"\?$"]}})
    reader, fresh = rd.Reader(vocabulary), rd.Reader(v.DEFAULT.extended({v.HOLD: {"en": [r"hang on"]},
                                                                           v.QUESTION: {"zh": [r"\?$"]}}))
    texts = ["先别提交", "hold off please", "hang on", "好吗?", "混合 hold off", "ſtill", "$5 以内", "123",
             "先别提交了，hold off，算了不要了？", "能不能帮我把申请提交了？", "不同意办理", "我明确同意办理",
             "İ agree, ONLY ſkip", "\u212aeep it under 5 nights", "可以帮我做个清单吗", "预算只要3000以内"]
    for text in texts:
        for category, by_language in vocabulary.patterns.items():
            plain = any(p.search(text) for ps in by_language.values() for p in ps)
            assert reader.matches(category, text) == plain, (category, text)
            # the match itself, and every match, are the vocabulary's own
            found, every = vocabulary.find(category, text), vocabulary.find_all(category, text)
            assert _span(reader.find(category, text)) == _span(found), (category, text)
            assert [_span(m) for m in reader.find_all(category, text)] == [_span(m) for m in every], (category, text)
        # all categories at once, read afresh, are those it matches one by one
        assert fresh.categories(text, [*vocabulary.patterns, "no such category"]) == {
            c for c in vocabulary.patterns if reader.matches(c, text)}


@pytest.mark.parametrize("pattern, firsts", [
    (r"先别", "先"),
    (r"\bonly\b", "oO"),
    (r"skip", "sSſ"),  # re.I folds ſ into s, the Kelvin sign into k, İ and ı into i
    (r"(做|列)(一)?(个|份)", "做列"),
    (r"[？?]\s*$", "？?"),
    (r"(?<![区特])别(?![的人])", "别"),  # a look-behind matches no character
    (r"吗+$", "吗"),
    (r"\b(i )?agree", None),  # an optional first item: not certain
    (r"\d+元", None),  # \d is every Unicode digit: not listed
    (r"x?先", None),
    (r"", None),
])
def test_a_pattern_is_tried_only_on_texts_holding_a_character_it_starts_with(pattern, firsts):
    found = rd.first_chars(re.compile(pattern, re.I))
    assert found == (frozenset(firsts) if firsts is not None else None)


def test_the_case_folds_the_first_characters_allow_are_all_of_re_s():
    letter = re.compile("[a-z]", re.I)
    folded: dict[str, str] = {}
    for char in filter(letter.fullmatch, map(chr, range(0x80, 0x110000))):
        lower = next(c for c in "abcdefghijklmnopqrstuvwxyz" if re.fullmatch(c, char, re.I))
        folded[lower] = folded.get(lower, "") + char
    assert folded == r.FOLDED
    # the Latin-letter test is re.I's [a-z], written out
    assert [c for c in map(chr, range(0x110000)) if r.LATIN_LETTER.fullmatch(c)] == \
        [c for c in map(chr, range(0x110000)) if letter.fullmatch(c)]


def test_every_match_of_every_pattern_starts_with_one_of_its_first_characters():
    from conversations.demo import repair_handoff
    texts = [t for turn in repair_handoff.TURNS for t in (turn.user, turn.answer)]
    for category, by_language in v.DEFAULT.patterns.items():
        for patterns in by_language.values():
            for pattern in patterns:
                firsts = rd.first_chars(pattern)
                if firsts is None:
                    continue
                for text in texts:
                    for match in pattern.finditer(text):
                        assert match.group()[:1] in firsts, (category, pattern.pattern, text)


def _span(match):
    return (match.re.pattern, match.span()) if match is not None else None


def test_remembered_values_are_kept_per_kind_up_to_a_limit():
    reader = rd.Reader(v.DEFAULT.extended({}))
    for i in range(5):
        reader.remember(("test kind", i), i, limit=3)
    assert [reader.remembered(("test kind", i)) for i in range(5)] == [None, None, 2, 3, 4]


def test_a_run_shorter_than_a_third_of_the_words_is_not_close():
    words = "先别提交嘿嘿嘿嘿嘿嘿嘿嘿嘿嘿嘿"  # a run of 4 of 15 characters
    assert Corpus(TEXTS).closest(words) is None
    assert Corpus(TEXTS).closest(words[:12]) == 0  # 4 of 12 is a third


def test_every_part_of_an_extended_chain_index_is_the_part_built_afresh():
    from compaction.drift.chain import _PARTS, ChainIndex
    from compaction.drift.input import DriftInput

    from . import repair_chain as script

    materials = script.materials(script.built().document)
    notes_ = [script.NOTES[0]] * len(materials)
    vocabulary = v.DEFAULT.extended({})  # a reader of its own: nothing remembered from other tests
    inputs = []
    for number, material in enumerate(materials, start=1):
        d = DriftInput(note=notes_[number - 1], parent=None, material=material,
                       chain=ChainHistory.from_materials(materials[:number]), vocabulary=vocabulary)
        for name in _PARTS:
            d.chain.part(name)  # built from the previous generation's parts
        inputs.append(d)
    assert all(d.chain._base is None or d.chain._base is inputs[i - 1].chain for i, d in enumerate(inputs) if i)
    for d in inputs[1:]:
        fresh = ChainIndex(d.users, d.tools, d.chain.keys)
        for name in _PARTS:
            grown, built = d.chain.part(name), fresh.part(name)
            if isinstance(grown, Corpus):
                grown, built = (grown.joined, grown.starts), (built.joined, built.starts)
            assert grown == built, name



def test_the_closest_question_counted_in_bytes_is_the_one_counted_term_by_term():
    """``DriftInput.closest_question`` adds the terms' masks up, a byte per
    question: the question a ``Counter`` of the terms' questions names, for
    the terms of every message of the repair chain, alone, with the next
    one's and with a filler term, generation by generation."""
    from compaction.drift.input import DriftInput
    from compaction.handoff.reading import key_terms

    from . import repair_chain as script

    materials = script.materials(script.built().document)
    vocabulary = v.DEFAULT.extended({})
    asked = 0
    for number, material in enumerate(materials, start=1):
        d = DriftInput(note=script.NOTES[0], parent=None, material=material,
                       chain=ChainHistory.from_materials(materials[:number]), vocabulary=vocabulary)
        texts = [u.message.text for u in d.users]
        for first, second in zip(texts, texts[1:] + [""]):
            for terms in (key_terms(first), key_terms(first + "，" + second), key_terms(first) | {"ab"}):
                found = d.closest_question(terms)
                assert found == d._closest_counted(terms)
                asked += found is not None
    assert asked > 100

def test_a_reading_of_every_assistant_answer_grows_with_the_chain_as_read_afresh():
    """``ChainIndex.per_assistant``: the answers read on from the last
    generation's are those of every answer read now, in chain order, the
    empty ones left out; a generation that never asked reads all of them."""
    from compaction.drift.chain import ChainIndex
    from compaction.drift.input import DriftInput

    from . import repair_chain as script

    materials = script.materials(script.built().document)
    vocabulary = v.DEFAULT.extended({})
    read = lambda text: tuple(sorted({c for c in text if c in "提供照片"}))  # noqa: E731
    seen = []
    for number, material in enumerate(materials, start=1):
        d = DriftInput(note=script.NOTES[0], parent=None, material=material,
                       chain=ChainHistory.from_materials(materials[:number]), vocabulary=vocabulary)
        if number != 3:  # the third generation never asks: the fourth reads every answer
            grown = d.per_assistant("letters", read)
            fresh = ChainIndex(d.users, d.tools, d.chain.keys).per_assistant("letters", read)
            assert grown == fresh == tuple((m.id, read(m.text)) for m in d.assistants if read(m.text))
            seen.append(len(grown))
    assert seen == sorted(seen) and seen[0] < seen[-1]


def test_a_text_in_one_script_is_not_searched_with_the_others_patterns():
    alternations = {scripts: alternation.pattern for scripts, (alternation, _) in
                    rd._alternations(v.DEFAULT)[v.HOLD].items()}
    assert "先别" not in alternations[(True, False)] and "hold" in alternations[(True, False)]
    assert "hold" not in alternations[(False, True)] and "先别" in alternations[(False, True)]
    question = rd._alternations(v.DEFAULT)[v.QUESTION][(False, False)][0].pattern
    assert "?" in question and "吗" not in question  # a question mark alone needs no script


def test_an_alternation_is_searched_from_where_a_match_can_first_start():
    """The class of first characters lists every character a match of the
    category can start with, or is None when one pattern may start anywhere;
    the answers are those of the whole search (below, every pattern)."""
    alternation, scan = rd._alternations(v.DEFAULT)[v.HOLD][(False, True)]
    assert scan is not None and scan.search("等我下周再说") and not scan.search("好的")
    assert rd._scan([frozenset("ab"), None]) is None and rd._scan([]) is None
    reader = rd.Reader(v.DEFAULT)
    for text in ["好的好的，先别提交", "算了，先别提交了", "好", "能不能先别提交？", "无关的话无关的话"]:
        for category in (v.HOLD, v.QUESTION, v.CONSENT, v.ABANDON):
            assert reader.matches(category, text) == any(
                p.search(text) for ps in v.DEFAULT.patterns[category].values() for p in ps), (category, text)



def test_a_category_matches_a_text_exactly_when_one_of_its_patterns_does():
    """The reader's alternations (each led by its class of first characters,
    as a look-ahead and a scan) answer as a search of every pattern, whatever
    the text of the vocabulary's pieces."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    pieces = ["先别", "提交", "同意", "不", "了", "吗", "？", "?", "算了", "放弃", "只要", "以内", "帮我", "能不能", "hold",
              "off", "go ahead", "don't", "forget it", "K", "ſ", " ", "，", "4000", "元", "有货", "in stock"]

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.sampled_from(pieces), max_size=6))
    def agrees(parts):
        text = "".join(parts)
        reader = rd.Reader(v.DEFAULT.extended({}))  # nothing remembered
        for category, by_language in v.DEFAULT.patterns.items():
            assert reader.matches(category, text) == any(p.search(text) for ps in by_language.values() for p in ps), \
                (category, text)

    agrees()

def test_an_extended_corpus_asked_again_answers_as_a_fresh_one():
    """Answers remembered over the first texts and completed over the texts
    added since equal a search of every text (``Corpus`` module doc)."""
    import random

    rng = random.Random(14)
    alphabet = "申请先别提交算了只要银色深空灰下周再说ab "
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14))) for _ in range(60)]
    queries = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 9))) for _ in range(80)] + TEXTS
    grown = Corpus([])
    for cut in range(0, len(texts) + 1, 7):
        grown = grown.extended(texts[len(grown.texts):cut])
        fresh = Corpus(texts[:cut])
        for words in queries:
            assert (words in grown) == (words in fresh), (cut, words)
            assert grown.holding(words) == fresh.holding(words), (cut, words)
            assert grown.closest(words) == fresh.closest(words) == _closest_by_difflib(texts[:cut], words), (cut, words)


def test_an_older_corpus_keeps_its_own_answers_after_it_was_extended():
    old = Corpus(["先别提交"])
    assert "下周再说" not in old and old.closest("下周再说吧") is None
    new = old.extended(["下周再说"])
    assert "下周再说" in new and new.closest("下周再说吧") == 1 and new.holding("下周") == [1]
    assert "下周再说" not in old and old.closest("下周再说吧") is None and old.holding("下周") == []


# --- issue 14's faster ways, each checked against the plain way ----------------------------------------------


def _closest_question_plainly(d, terms):
    """The rule as first written: a score per message, then the best (points, order)."""
    score: dict[int, int] = {}
    for term in terms:
        orders = d.questions_with(term)
        if orders:
            points = 2 if term[0].isascii() else 1
            for order in orders:
                score[order] = score.get(order, 0) + points
    best = max(((points, order) for order, points in score.items() if points >= 2), default=None)
    return best[1] if best else None


def _repair_input():
    from compaction.drift.input import DriftInput

    from . import repair_chain as script

    materials = script.materials(script.built().document)
    return DriftInput(note=script.NOTES[0], parent=None, material=materials[-1],
                      chain=ChainHistory.from_materials(materials), vocabulary=v.DEFAULT)


def test_the_closest_question_is_the_one_the_plain_score_finds():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    d = _repair_input()
    known = sorted(d.chain.questions_by_term)
    assert len(known) > 20 and any(t[0].isascii() for t in known) and any(not t[0].isascii() for t in known)
    found = [d.closest_question(frozenset(u.terms)) for u in d.users if u.asks_question]
    assert any(f is not None for f in found)

    @settings(max_examples=300, deadline=None)
    @given(st.frozensets(st.sampled_from(known + ["未见过", "zzz"]), max_size=12))
    def agrees(terms):
        assert d.closest_question(terms) == _closest_question_plainly(d, terms)

    agrees()
    for u in d.users:
        assert d.closest_question(frozenset(u.terms)) == _closest_question_plainly(d, u.terms)


def test_a_tie_goes_to_the_latest_question_and_one_chinese_term_is_not_enough():
    from compaction.drift.input import DriftInput

    from .helpers import material

    mat = material(("寄修大概几天能寄回来？", "好"), ("AirPods 寄修要多久？", "好"), ("寄修大概几天能好？", "好"))
    d = DriftInput(note=_repair_input().text, parent=None, material=mat, chain=ChainHistory(), vocabulary=v.DEFAULT)
    assert d.closest_question(frozenset({"寄修", "几天"})) == 2  # orders 0 and 2 both score 2: the latest
    assert d.closest_question(frozenset({"回来"})) is None  # one Chinese term is worth 1
    assert d.closest_question(frozenset({"airpods"})) == 1  # a Latin word is worth 2
    assert d.closest_question(frozenset()) is None


def test_a_full_memo_forgets_its_oldest_eighth_and_answers_the_same():
    calls = []

    @r.memoised
    def length(text):
        calls.append(text)
        return len(text)

    texts = [f"t{i}" for i in range(r._MEMO + 1)]
    assert [length(t) for t in texts] == [len(t) for t in texts]
    assert len(calls) == len(texts)
    assert length(texts[-2]) == len(texts[-2]) and len(calls) == len(texts)  # a newer text: still remembered
    assert length(texts[0]) == len(texts[0]) and len(calls) == len(texts) + 1  # an older one: read again

    memo = {i: i for i in range(20)}
    r.forget_oldest(memo)
    assert list(memo) == list(range(2, 20))
    memo = {i: i for i in range(3)}
    r.forget_oldest(memo)  # at least one goes
    assert list(memo) == [1, 2]


def test_read_once_computes_a_property_once_per_instance():
    class Thing:
        def __init__(self):
            self.reads = 0

        @r.read_once
        def value(self):
            """What the thing says."""
            self.reads += 1
            return [self.reads]

    a, b = Thing(), Thing()
    assert a.value is a.value and a.value == [1] and a.reads == 1
    assert b.value == [1] and b.reads == 1
    assert Thing.value.__doc__ == "What the thing says." and isinstance(Thing.value, r.read_once)


def test_the_collector_is_paused_while_a_note_is_checked_and_left_as_the_caller_had_it():
    import gc

    from compaction.drift import checkers as c

    from compaction.handoff import note as notes

    from .helpers import material

    seen = []
    real = c.DriftInput

    class Watching(real):
        def __init__(self, **kwargs):
            seen.append(gc.isenabled())
            super().__init__(**kwargs)

    mat = material(("左耳没声音了", "好的"))
    note = _repair_input().text
    was = gc.isenabled()
    try:
        c.DriftInput = Watching
        gc.enable()
        c.check_note(note, parent=None, material=mat, chain=ChainHistory())
        assert seen == [False] and gc.isenabled()
        gc.disable()
        c.check_note(note, parent=None, material=mat, chain=ChainHistory())
        assert seen == [False, False] and not gc.isenabled()  # paused by the caller: still paused
        gc.enable()
        with pytest.raises(notes.MalformedNote):  # raised while paused: resumed all the same
            c.check_note("no sections at all", parent=None, material=mat, chain=ChainHistory())
        assert seen == [False, False, False] and gc.isenabled()
    finally:
        c.DriftInput = real
        if was:
            gc.enable()
        else:
            gc.disable()


def test_remembered_values_stay_within_their_limit_whatever_the_readings_forget():
    reader = rd.Reader(v.DEFAULT.extended({}))
    reader.remember(("chain index", 0), 0, limit=2)
    for i in range(r._MEMO + 1):  # a full kind of readings forgets its oldest eighth
        reader.kept("filler", f"x{i}", lambda: i)
    assert reader.kept("filler", f"x{r._MEMO}", lambda: None) == r._MEMO  # the newest stays
    assert reader.kept("filler", "x0", lambda: "again") == "again"  # the oldest was forgotten
    reader.remember(("chain index", 1), 1, limit=2)
    assert reader.remembered(("chain index", 0)) == 0  # readings forgotten, remembered values not
    for i in range(2, 6):
        reader.remember(("chain index", i), i, limit=2)
    assert [reader.remembered(("chain index", i)) for i in range(6)] == [None, None, None, None, 4, 5]


def test_readings_are_kept_per_kind_and_text():
    reader = rd.Reader(v.DEFAULT.extended({}))
    assert reader.kept("one kind", "text", lambda: 1) == 1
    assert reader.kept("another kind", "text", lambda: 2) == 2  # the same text, another reading
    assert reader.kept("one kind", "text", lambda: 3) == 1  # remembered
    long = "x" * (r._MEMO_TEXT + 1)
    assert reader.kept("one kind", long, lambda: 4) == 4 and reader.kept("one kind", long, lambda: 5) == 5


def test_a_user_messages_reading_is_taken_again_from_its_chain_only_where_the_message_is_the_same():
    from compaction.drift.input import DriftInput
    from compaction.drift.reading import ChainMessage

    from .helpers import material, zh

    vocabulary = v.DEFAULT.extended({})  # a reader of its own: nothing remembered from other tests
    note = zh(requests=["左耳无声"])
    first = material(("左耳没声音了，订单88232。", "已查到。"), ("先别提交申请。", "好的。"))
    second = material(("包装准备好了，可以提交了。", "好的。"), start=2)

    def read(chain, mat):
        return DriftInput(note=note, parent=None, material=mat, chain=chain, vocabulary=vocabulary)

    one = read(ChainHistory.from_materials([first]), first)
    two = read(ChainHistory.from_materials([first, second]), second)
    assert [u.order for u in two.users] == [0, 1, 2]
    assert all(two.users[i] is one.users[i] for i in range(2))  # the chain grew: the same readings
    # An edited message is read anew, at its place; the others are taken again.
    history = ChainHistory.from_materials([first, second])
    edited = ChainHistory((history.user_messages[0], ChainMessage("u1", 1, "现在可以提交申请了，我同意。"),
                           history.user_messages[2]), history.assistant_messages, history.tool_results)
    three = read(edited, second)
    assert three.users[0] is two.users[0] and three.users[2] is two.users[2]
    assert three.users[1] is not two.users[1]
    assert (three.users[1].message.text, three.users[1].order, three.users[1].state) == ("现在可以提交申请了，我同意。", 1,
                                                                                          "consent")
    assert two.users[1].state == "hold"


def test_the_user_asked_for_what_some_asking_clause_of_any_user_message_shares():
    """``user_asked_for`` reads only the messages sharing terms worth 2 with
    the words; the plain rule reads every asking clause of every message."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from compaction.handoff.reading import key_terms, shared

    d = _repair_input()
    asking = [key_terms(clause) for u in d.users for clause in u.asking_clauses]
    known = sorted({t for terms in asking for t in terms} | set(d.users_by_term))

    def plainly(terms):
        return any(shared(clause_terms, terms) >= 2 for clause_terms in asking)

    @settings(max_examples=300, deadline=None)
    @given(st.frozensets(st.sampled_from(known + ["未见过", "zzz"]), max_size=8))
    def agrees(terms):
        assert d.user_asked_for(terms) == plainly(terms)

    agrees()
    answers = [d.user_asked_for(frozenset(u.terms)) for u in d.users]
    assert answers == [plainly(u.terms) for u in d.users] and any(answers) and not all(answers)


def test_the_texts_holding_a_value_grow_with_the_chain_as_read_afresh():
    """``ChainIndex.holding_value``: the tool results and assistant answers
    holding a date (with its year and without), a clock time or an amount,
    read on from the last generation's answer, are those that hold it read
    from every text — full-width digits and thousands separators included."""
    from compaction.drift.chain import ChainIndex
    from compaction.drift.input import DriftInput
    from compaction.handoff import values
    from compaction.handoff.material import Material, MaterialPair
    from compaction.handoff.reading import numbers

    from . import repair_chain as script

    def value_keys(text):
        return ([("date", dated) for _, key in values.dates(text) for dated in (key[1:], key)]
                + [("time", key) for _, key in values.clock_times(text)] + [("amount", n) for n in numbers(text)])

    materials = script.materials(script.built().document)
    odd = ["８月３１日到货，共1,899元", "周五10:30前寄出，运费 12.5 元", "预计 9 月 1 日送达，约 3 个工作日"]
    materials.append(Material(pairs=tuple(MaterialPair(500 + i, f"u-odd{i}", "好的", f"a-odd{i}", text)
                                          for i, text in enumerate(odd))))
    vocabulary = v.DEFAULT.extended({})
    asked = 0
    for number, material in enumerate(materials, start=1):
        d = DriftInput(note=script.NOTES[0], parent=None, material=material,
                       chain=ChainHistory.from_materials(materials[:number]), vocabulary=vocabulary)
        texts = [r.text for r in d.tools] + [m.text for m in d.assistants]
        wanted = {key for text in texts for key in value_keys(text)} | {("date", (2025, 8, 31)), ("amount", "1899")}
        for kind, key in sorted(wanted, key=repr)[::3 if number < len(materials) else 1]:
            grown = d.chain.holding_value(kind, key)
            fresh = ChainIndex(d.users, d.tools, d.chain.keys).holding_value(kind, key)
            plain = (tuple(i for i, r in enumerate(d.tools) if (kind, key) in value_keys(r.text)),
                     tuple(i for i, m in enumerate(d.assistants) if (kind, key) in value_keys(m.text)))
            assert grown == fresh == plain, (kind, key)
            asked += bool(plain[0] or plain[1])
    assert asked > 50


# --- compaction.drift.corpus: what a search finds, and the texts it reads -------------------------------------


def test_words_at_the_very_start_of_the_first_text_are_held():
    corpus = Corpus(TEXTS)
    assert "算了" in corpus and corpus.holding("算了") == [0] and corpus.closest("算了吧") == 0


def test_a_hit_across_the_joiner_is_none_and_a_text_holding_the_joiner_itself_holds_it():
    # The joiner (NUL) between two texts is not part of either; a text may
    # hold a NUL of its own, and words with one are held there.
    across = Corpus(["ab", "cd"])
    assert "b\x00c" not in across and across.holding("b\x00c") == []
    within = Corpus(["a", "\x00\x00", "x\x00y"])
    assert within.holding("\x00\x00") == [1]  # not at the joiner before it, which starts a hit one earlier
    assert "x\x00y" in within and within.holding("x\x00y") == [2]


class _Searched(str):
    """A corpus's joined texts, noting where each search of them starts."""

    def __new__(cls, text, starts):
        out = super().__new__(cls, text)
        out.starts = starts
        return out

    def find(self, sub, start=None, *args):
        self.starts.append(start or 0)
        return str.find(self, sub, start, *args)

    def rfind(self, sub, start=None, *args):
        self.starts.append(start or 0)
        return str.rfind(self, sub, start, *args)


def test_a_corpus_asked_again_searches_only_the_texts_added_since_and_nothing_when_none_was():
    """The module doc: each answer is remembered with the number of texts it
    was found over; asked again, an extended corpus searches from the first
    text added, and a corpus asked again with no text added not at all. The
    answers are a fresh corpus's."""
    asked = ["先别提交", "再说", "银色", "下周再说吧", "申请先别提交了", "完全无关"]
    old = Corpus(["先别提交申请", "下周再说"])
    for words in asked:
        (words in old, old.holding(words), old.closest(words))
    added = ["只要银色", "申请先别提交了吧", "再说一次"]
    grown = old.extended(added)
    searched: list[int] = []
    grown.joined = _Searched(grown.joined, searched)
    fresh = Corpus(["先别提交申请", "下周再说", *added])
    for words in asked:
        assert (words in grown, grown.holding(words), grown.closest(words)) == (
            words in fresh, fresh.holding(words), fresh.closest(words)), words
    assert searched and min(searched) == grown.starts[2]  # never before the first text added
    searched.clear()
    for words in asked:  # nothing added since: every answer is remembered
        (words in grown, grown.holding(words), grown.closest(words))
    assert searched == []


def test_each_memo_of_answers_holds_at_most_remember_and_a_full_one_starts_again(monkeypatch):
    from compaction.drift import corpus as c

    monkeypatch.setattr(c, "_REMEMBER", 2)
    corpus = Corpus(TEXTS)
    for i, words in enumerate(["先别", "提交", "银色"]):
        assert (words in corpus, corpus.holding(words), corpus.closest(words + "吧")) == (
            True, [i for i, t in enumerate(TEXTS) if words in t], Corpus(TEXTS).closest(words + "吧"))
        assert max(len(corpus._held), len(corpus._holding), len(corpus._closest)) <= 2
    assert (list(corpus._held), list(corpus._holding), list(corpus._closest)) == (["银色"], ["银色"], ["银色吧"])


# --- compaction.drift.chain: what the index holds, and what it reads ------------------------------------------

_TOOL_TEXTS = ["Delivered Aug 31", "价格 3,100 元", "到 10：30 取件", "共1,899元", "８月３１日到货", "nothing here"]
_ANSWER_TEXTS = ["8月31日送达", "下午10:30", "1899元", "周一"]
_VALUES = [("date", (None, 8, 31)), ("date", (8, 31)), ("time", "10:30"), ("amount", "1899")]


def _index_of(tool_texts, answer_texts, base=None):
    from compaction.drift.chain import ChainIndex, chain_keys
    from compaction.drift.reading import ChainMessage

    from .helpers import result

    tools = [result(i, f"t{i}", "lookup", "{}", text) for i, text in enumerate(tool_texts)]
    answers = [ChainMessage(f"a{i}", i, text) for i, text in enumerate(answer_texts)]
    return ChainIndex([], tools, chain_keys([], answers, tools), base)


def test_a_value_is_read_only_in_the_texts_writing_its_digits_and_each_text_once(monkeypatch):
    """``holding_value``: a date is looked for in the texts writing its day
    (its month may be a name: "Aug 31"), a clock time in those writing its
    minutes (whatever its colon), an amount in those writing its digits once
    the thousands separators are taken out, and a text writing a digit other
    than 0-9 whatever it writes; asked again, nothing is read again, and a
    longer chain reads only the texts added since."""
    from compaction.drift import chain

    read = []
    holds = chain._holds_value

    def watched(kind, key, text):
        read.append((kind, key, text))
        return holds(kind, key, text)

    monkeypatch.setattr(chain, "_holds_value", watched)
    index = _index_of(_TOOL_TEXTS, _ANSWER_TEXTS)
    answers = {value: index.holding_value(*value) for value in _VALUES}
    assert answers == {("date", (None, 8, 31)): ((0, 4), (0,)), ("date", (8, 31)): ((0, 4), (0,)),
                       ("time", "10:30"): ((2,), (1,)), ("amount", "1899"): ((3,), (2,))}
    writes = {("date", (None, 8, 31)): "31", ("date", (8, 31)): "31", ("time", "10:30"): "30"}
    for value in _VALUES:  # "3,100" writes no 31 for a date, nor is 3,100 an amount of 1899
        digits = writes.get(value, "1899")
        wanted = [t for t in _TOOL_TEXTS + _ANSWER_TEXTS
                  if digits in (t.replace(",", "") if value[0] == "amount" else t) or "３" in t]
        assert [text for kind, key, text in read if (kind, key) == value] == wanted, value
    read.clear()
    assert {value: index.holding_value(*value) for value in _VALUES} == answers and read == []
    grown = _index_of(_TOOL_TEXTS + ["Aug 31 again"], _ANSWER_TEXTS + ["10:30 again"], base=index)
    assert grown.holding_value("date", (8, 31)) == ((0, 4, 6), (0,))
    assert grown.holding_value("time", "10:30") == ((2,), (1, 4))
    assert [text for _, _, text in read] == ["Aug 31 again", "10:30 again"]


def _inputs(*materials_, vocabulary):
    from compaction.drift.input import DriftInput

    from .helpers import zh

    return [DriftInput(note=zh(requests=["左耳无声"]), parent=None, material=m,
                       chain=ChainHistory.from_materials(list(materials_[:i + 1])), vocabulary=vocabulary)
            for i, m in enumerate(materials_)]


def test_the_index_of_a_chain_that_extends_the_last_is_built_on_it_and_the_same_chain_s_is_the_same():
    from .helpers import material

    vocabulary = v.DEFAULT.extended({})  # a reader of its own: nothing remembered from other tests
    first = material(("左耳没声音了，订单88232。", "已查到。"), ("先别提交申请。", "好的。"))
    second = material(("包装准备好了，可以提交了。", "好的，会提交。"), start=2)
    one, = _inputs(first, vocabulary=vocabulary)
    reads = []

    def read(text):
        reads.append(text)
        return (len(text),)

    assert one.chain.per_assistant("lengths", read) == (("a0", (4,)), ("a1", (3,)))
    assert one.chain.per_assistant("lengths", read) and reads == ["已查到。", "好的。"]  # built once
    assert one.chain.per_assistant("first characters", lambda text: (text[0],)) == (("a0", ("已",)), ("a1", ("好",)))
    one.chain.resumed[0] = (2, False)
    one.chain.values_held[("amount", "88232")] = (0, 2, (), ())
    again, two = _inputs(first, second, vocabulary=vocabulary)
    assert again.chain is one.chain  # the same chain: the same index
    assert two.chain._base is one.chain
    assert two.chain.per_assistant("lengths", read) == (("a0", (4,)), ("a1", (3,)), ("a2", (7,)))
    assert reads == ["已查到。", "好的。", "好的，会提交。"]  # only the answer added since
    # Its base's answers are read on, from a copy: the base's stay as they were.
    assert two.chain.resumed == one.chain.resumed and two.chain.resumed is not one.chain.resumed
    assert two.chain.values_held == one.chain.values_held and two.chain.values_held is not one.chain.values_held
    edited = material(("右耳没声音了，订单88232。", "已查到。"), ("先别提交申请。", "好的。"))
    other, = _inputs(edited, vocabulary=vocabulary)
    assert other.chain._base is None and other.chain is not one.chain  # another chain: built from every message


def test_a_chain_is_remembered_by_its_first_user_message_even_without_answers():
    from compaction.drift.chain import chain_index, chain_keys, remembered_chain
    from compaction.drift.reading import ChainMessage
    from compaction.handoff.reader import Reader

    reader = Reader(v.DEFAULT.extended({}))
    users_only = chain_index(reader, [], [], chain_keys([ChainMessage("u0", 0, "左耳没声音了")], [], []))
    empty = chain_index(reader, [], [], chain_keys([], [], []))
    assert remembered_chain(reader, "u0") is users_only and remembered_chain(reader, None) is empty


def test_an_abandonment_naming_no_matter_borrows_the_previous_message_s_matter_and_the_first_borrows_none():
    from .helpers import material

    d, = _inputs(material(("先不买新的了", "好的。"), ("AirPods Max现在多少钱？", "3999元。"), ("先不买新的了", "好的。"),
                          ("左耳没声音了，订单88232。", "已查到。")), vocabulary=v.DEFAULT.extended({}))
    assert d.users[-1].own_terms  # the latest message names a matter: the first abandonment has none before it
    (first, named, borrowed), (later, later_named, later_borrowed) = d.abandons
    assert (first.order, named, borrowed) == (0, frozenset(), frozenset())
    assert (later.order, later_named) == (2, frozenset()) and later_borrowed == d.users[1].own_terms != frozenset()
