"""SPEC §5: the source digest reproduces the test vector.

The vector lives in ``tests/vectors/`` (a copy of ``../shared/vectors/``), so
the test never skips; where ``../shared`` is present, the copy is also
checked to be the shared one."""

import hashlib
import json
from pathlib import Path

import pytest

from compaction.digest import digest_input, range_digest, source_digest

VECTOR = Path(__file__).resolve().parents[1] / "vectors" / "source-digest.json"
SHARED_VECTOR = Path(__file__).resolve().parents[3] / "shared" / "vectors" / "source-digest.json"


def _vector():
    return json.loads(VECTOR.read_text(encoding="utf-8"))


def test_digest_reproduces_the_vector():
    vector = _vector()
    pairs = [
        digest_input(p["index"], p["user"]["id"], p["user"]["text"], p["assistant"]["id"], p["assistant"]["text"])
        for p in vector["pairs"]
    ]
    assert source_digest(pairs) == vector["sha256"]


def test_digest_changes_when_any_text_or_id_changes():
    base = [digest_input(i, f"u{i}", f"q{i}", f"a{i}", f"ans{i}") for i in range(10)]
    reference = source_digest(base)
    changed_text = [dict(p) for p in base]
    changed_text[3] = digest_input(3, "u3", "q3 (edited)", "a3", "ans3")
    changed_id = [dict(p) for p in base]
    changed_id[7] = digest_input(7, "u7", "q7", "a7-bis", "ans7")
    assert source_digest(changed_text) != reference
    assert source_digest(changed_id) != reference


def test_digest_does_not_normalise_text():
    a = source_digest([digest_input(0, "u", "café", "a", "x")])
    b = source_digest([digest_input(0, "u", "cafe\u0301", "a", "x")])
    assert a != b


def test_digest_is_lowercase_hex_sha256():
    d = source_digest([digest_input(0, "u", "q", "a", "x")])
    assert len(d) == 64 and d == d.lower() and int(d, 16) >= 0


def test_digest_is_the_spec_formula_over_the_pairs_in_order():
    # SPEC §5 spells the digest out so anyone can recompute it: this is that
    # recomputation, on text where each serialisation choice shows.
    pairs = [digest_input(1, "u-1", "引号 \"q\" é\t", "a-1", "🙂 answer"), digest_input(0, "u-0", "x", "a-0", "y")]
    payload = json.dumps(pairs, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    assert source_digest(pairs) == hashlib.sha256(payload.encode("utf-8")).hexdigest()
    assert source_digest(iter(pairs)) == source_digest(pairs)
    assert source_digest(list(reversed(pairs))) != source_digest(pairs)


def test_digest_input_is_the_spec_shape():
    assert digest_input(3, "u", "q", "a", "x") == {"index": 3, "user": {"id": "u", "text": "q"},
                                                   "assistant": {"id": "a", "text": "x"}}


@pytest.mark.skipif(not SHARED_VECTOR.exists(), reason="../shared/vectors is not present (the copy above is tested)")
def test_the_vector_in_tests_is_the_shared_one():
    assert _vector() == json.loads(SHARED_VECTOR.read_text(encoding="utf-8"))


def test_a_range_digest_is_the_digest_of_its_pairs_with_their_ids_and_empty_when_one_is_missing():
    stored = {i: (f"u-{i}", f"question {i}", f"a-{i}", f"answer {i}") for i in range(5)}
    digest, ids = range_digest(stored, 1, 3)
    assert digest == source_digest(digest_input(i, *stored[i]) for i in range(1, 4))
    assert ids == ["u-1", "a-1", "u-2", "a-2", "u-3", "a-3"]
    assert range_digest(stored, 3, 5) == ("", [])  # pair 5 was never paired
    del stored[2]
    assert range_digest(stored, 1, 3) == ("", [])


def test_a_range_digest_needs_only_its_own_pairs_not_their_neighbours():
    """Pairs 1-3 are stored, 0 and 4 are not (a range at the start of a
    gap, or the last stored pairs): the range still has its digest."""
    stored = {i: (f"u-{i}", f"question {i}", f"a-{i}", f"answer {i}") for i in range(1, 4)}
    digest, ids = range_digest(stored, 1, 3)
    assert digest == source_digest(digest_input(i, *stored[i]) for i in range(1, 4))
    assert ids == ["u-1", "a-1", "u-2", "a-2", "u-3", "a-3"]
