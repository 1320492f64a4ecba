"""ASCII text counted by words or pieces from tables (``token_pieces``):
every count is tiktoken's own, whatever the text."""

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compaction import token_pieces, tokens

_DATA = Path(os.environ.get("SHARED_DATA_DIR") or Path(__file__).resolve().parents[2].parent / "shared" / "data")
# Letters of the contractions, digits, every ASCII whitespace (and \x1c-\x1f,
# which re's \s takes and cl100k's does not), marks and a control character.
_TRICKY = "aAsStTlLvVrRdDmMe09 '\t\n\r\x0b\x0c\x1c\x1f\x00!-_.,:\"{}"


def _tiktoken(text: str) -> int:
    return len(tokens._encoding().encode_ordinary(text))


def _words_path(text: str) -> bool:
    return not any(mark in text for mark in token_pieces._SPACE_AFTER_WHITESPACE)


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet=st.sampled_from(_TRICKY), max_size=40)
       | st.text(alphabet=st.sampled_from("ab1.' \n"), max_size=30)
       | st.text(alphabet=st.characters(max_codepoint=127), max_size=80))
def test_ascii_text_counts_what_tiktoken_counts_from_empty_and_filled_tables(text):
    token_pieces.clear()
    first = tokens.count_tokens(text)
    again = tokens.count_tokens(text)  # from the tables now
    assert first == again == _tiktoken(text)


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from("aZ9'.!\n\t\r"), min_size=1, max_size=8), max_size=12))
def test_a_text_of_single_spaces_between_words_is_counted_by_words(words):
    text = " ".join(words)
    if _words_path(text):
        token_pieces.clear()
        assert tokens.count_tokens(text) == _tiktoken(text)
        first, *others = text.split(" ")  # every word looked up in its table
        assert set(token_pieces._FIRST) == {first} and set(token_pieces._SPACED) == set(others)


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet=st.sampled_from("a. \t\n\r\x0b\x0c\x1c"), max_size=10))
def test_whitespace_runs_count_what_tiktoken_counts(text):
    token_pieces.clear()
    assert tokens.count_tokens(text) == _tiktoken(text)


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet=st.sampled_from(_TRICKY), max_size=40) | st.text(alphabet=st.characters(max_codepoint=127)))
def test_the_pieces_are_the_text_cut_as_tiktoken_cuts_it(text):
    pieces = token_pieces.PIECES.findall(text)
    assert "".join(pieces) == text
    assert sum(map(_tiktoken, pieces)) == _tiktoken(text)


def test_a_text_with_a_space_after_whitespace_is_cut_only_at_the_spaces_after_something_else():
    token_pieces.clear()
    for text in ("a  b", "line\n next", "tab\t x", "end \n\n  - item", "  lead", "x\n \n"):
        assert not _words_path(text)
        assert tokens.count_tokens(text) == _tiktoken(text)
    assert token_pieces._WORD_SPACE.split("end \n\n  - item  x") == ["end", "\n\n  -", "item", " x"]
    assert token_pieces._WORD_SPACE.split("a\n  b c") == ["a\n  b", "c"]
    assert token_pieces._WORD_SPACE.split("  lead on") == ["  lead", "on"]


@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet=st.sampled_from("a. \n\t"), max_size=20))
def test_the_cut_words_are_the_text(text):
    words = token_pieces._WORD_SPACE.split(text)
    assert " ".join(words) == text
    assert all(w and w[-1] not in " \t\n\r\x0b\x0c" for w in words[:-1])


def test_every_text_of_the_tau_bench_trajectories_counts_what_tiktoken_counts():
    path = _DATA / "tau-bench-gpt-4o-airline.json"
    if not path.exists():
        pytest.skip(f"shared data not found at {_DATA}")
    texts = []

    def walk(value):
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(json.loads(path.read_text()))
    token_pieces.clear()
    ascii_texts = [t for t in texts if t.isascii()]
    wrong = [t for t in ascii_texts if tokens.count_tokens(t) != _tiktoken(t)]
    assert len(ascii_texts) > 10_000 and wrong == []
    assert sum(map(_words_path, ascii_texts)) > len(ascii_texts) // 2  # both ways are exercised
    assert not all(map(_words_path, ascii_texts))


def test_the_tables_are_bounded_and_keep_no_long_word(monkeypatch):
    monkeypatch.setattr(token_pieces, "TABLE_MAX", 3)
    token_pieces.clear()
    assert tokens.count_tokens("one two three four five six") == 6
    assert 0 < token_pieces.kept() <= 6  # at most three in each table
    token_pieces.clear()
    assert tokens.count_tokens("x" * 60) == _tiktoken("x" * 60)
    assert token_pieces.kept() == 0


def test_non_ascii_text_is_counted_by_tiktoken_itself():
    token_pieces.clear()
    text = "订单 88232 was delivered ſ ok"
    assert tokens.count_tokens(text) == _tiktoken(text)
    assert token_pieces.kept() == 0


def test_every_ascii_string_of_the_vocabulary_is_one_piece_of_one_token():
    # What lets a word or piece that is a string of the vocabulary count one
    # token without being cut.
    encoding = tokens._encoding()
    strings = [b.decode("ascii") for b in encoding.token_byte_values() if b.isascii()]
    assert len(strings) > 90_000
    assert [s for s in strings if token_pieces.PIECES.findall(s) != [s]] == []
    assert [s for s in strings if len(encoding.encode_ordinary(s)) != 1] == []


class _Watched:
    """tiktoken's encoding, noting the texts it is asked to encode."""

    def __init__(self, encoding):
        self.encoding = encoding
        self.encoded = []

    def token_byte_values(self):
        return self.encoding.token_byte_values()

    def encode_ordinary(self, text):
        self.encoded.append(text)
        return self.encoding.encode_ordinary(text)


def test_only_a_piece_that_is_no_string_of_the_vocabulary_is_encoded_by_tiktoken(monkeypatch):
    # The vocabulary is read on first use from the encoding given; then a
    # word or piece that is one of its strings counts one without
    # tiktoken's pass, and tiktoken encodes only the pieces that are not.
    monkeypatch.setattr(token_pieces._PIECE, "encoding", None)
    monkeypatch.setattr(token_pieces, "_ONE_TOKEN", frozenset())
    watched = _Watched(tokens._encoding())
    token_pieces.clear()
    try:
        # "hello" and " world" are strings of the vocabulary; " hello," is
        # not, but both its pieces (" hello", ",") are; " xqzvbwk" is a
        # piece that is not.
        text = "hello world hello, xqzvbwk"
        assert token_pieces.ascii_tokens(text, watched) == _tiktoken(text)
        assert token_pieces._PIECE.encoding is watched and "hello" in token_pieces._ONE_TOKEN
        assert watched.encoded == [" xqzvbwk"]
    finally:
        token_pieces.clear()
        token_pieces.load(tokens._encoding())


def test_kept_counts_the_words_and_pieces_the_tables_hold():
    token_pieces.clear()
    tokens.count_tokens("hello world")  # two words of the vocabulary: no piece looked up
    assert (set(token_pieces._FIRST), set(token_pieces._SPACED), set(token_pieces._PIECE)) == (
        {"hello"}, {"world"}, set())
    assert token_pieces.kept() == 2
    tokens.count_tokens("hello world, xqzvbwk")  # " world," and " xqzvbwk" cut into pieces
    assert set(token_pieces._PIECE) == {" world", ",", " xqzvbwk"}
    assert token_pieces.kept() == 2 + 2 + 3


def test_a_word_or_piece_of_kept_chars_is_kept_and_a_longer_one_is_not():
    at_most = "x" * token_pieces.KEPT_CHARS  # one piece, no string of the vocabulary
    token_pieces.clear()
    assert tokens.count_tokens(at_most) == _tiktoken(at_most)
    assert set(token_pieces._FIRST) == {at_most} and set(token_pieces._PIECE) == {at_most}
    token_pieces.clear()
    assert tokens.count_tokens(at_most + "x") == _tiktoken(at_most + "x")
    assert token_pieces.kept() == 0


def test_a_full_table_starts_over_and_never_holds_more_than_table_max(monkeypatch):
    monkeypatch.setattr(token_pieces, "TABLE_MAX", 3)
    token_pieces.clear()
    for text in ("a1", "b2", "c3", "d4", "e5 f6", "e5 g7 h8 i9"):  # each word two pieces, none of the vocabulary
        assert tokens.count_tokens(text) == _tiktoken(text)
        assert max(map(len, (token_pieces._FIRST, token_pieces._SPACED, token_pieces._PIECE))) <= 3
    assert set(token_pieces._FIRST) == {"d4", "e5"}  # a1, b2, c3 filled it; d4 started it over
    assert set(token_pieces._SPACED) == {"i9"}  # f6, g7, h8 filled it


def test_a_new_table_of_words_counts_each_word_with_its_prefix():
    spaced = token_pieces._Words(" ")
    assert spaced.prefix == " "
    assert spaced["world"] == _tiktoken(" world") == 1
    assert spaced["123"] == _tiktoken(" 123") == 2  # a space, then the digits: two pieces
    assert token_pieces._Words("")["123"] == _tiktoken("123") == 1


def test_a_text_with_other_whitespace_but_no_space_after_it_is_cut_at_every_space():
    # str.split's cut, told apart from the other by a leading space (which
    # follows nothing): the first word is the empty text before it.
    for text in (" lead\nline", " tab\tx y", " cr\rlf\r\nz", " vt\x0bff\x0cw"):
        assert _words_path(text)
        token_pieces.clear()
        assert tokens.count_tokens(text) == _tiktoken(text)
        first, *others = text.split(" ")
        assert set(token_pieces._FIRST) == {first} == {""} and set(token_pieces._SPACED) == set(others)
