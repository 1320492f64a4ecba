"""SPEC §5: the source digest reproduces the shared test vector."""

import json
from pathlib import Path

import pytest

from compaction.digest import digest_input, source_digest

VECTOR = Path(__file__).resolve().parents[3] / "shared" / "vectors" / "source-digest.json"


@pytest.mark.skipif(not VECTOR.exists(), reason="../shared/vectors is not present")
def test_digest_reproduces_the_shared_vector():
    vector = json.loads(VECTOR.read_text(encoding="utf-8"))
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
