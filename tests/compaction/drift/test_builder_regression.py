"""The offline builder over the seed 001 regression conversation (issue 14
§5, second half): the nine generations of ``repair_chain.RANGES``, each
written by ``handoff-extractive-v1`` from its parent's note and its own
material only, checked with everything the chain settled so far — no
findings on any generation, and no growth without new matters."""

import pytest

from compaction.drift import checkers as c
from compaction.handoff import note as notes
from compaction.handoff.builder import build_note
from conversations.demo import repair_handoff

from . import repair_chain as script


@pytest.fixture(scope="module")
def generations():
    materials = script.materials(script.built().document)
    parent, out = None, []
    for number, material in enumerate(materials, start=1):
        text = build_note(parent, material, language=notes.ZH)
        findings = c.check_note(text, parent=parent, material=material,
                                chain=c.ChainHistory.from_materials(materials[:number]))
        out.append((number, parent, text, material, findings))
        parent = text
    return out


def _lengths(generations):
    return "note length per generation: " + ", ".join(f"{n}: {len(text)}" for n, _, text, _, _ in generations)


def test_the_builder_writes_nine_generations_over_the_same_ranges_as_the_scripted_model(generations):
    assert [(m.from_pair, m.to_pair) for _, _, _, m, _ in generations] == script.RANGES
    for _, _, text, _, _ in generations:
        assert notes.heading_problem(text) == ""


def test_no_generation_of_the_builder_has_a_drift_finding(generations):
    found = {n: [(f.code, f.section, f.line, f.subject) for f in findings] for n, _, _, _, findings in generations}
    assert all(not f for f in found.values()), f"{found}; {_lengths(generations)}"


def test_the_builder_never_grows_without_new_matters(generations):
    grew = [(n, len(parent), len(text)) for n, parent, text, _, findings in generations
            if any(f.code == c.GROWTH_WITHOUT_NEW_MATTERS for f in findings)]
    assert grew == [], _lengths(generations)
    # generations 8 and 9 bring only questions and a restated hold: the parent, unchanged
    assert generations[7][2] == generations[6][2] and generations[8][2] == generations[7][2], _lengths(generations)


def test_the_builders_last_note_holds_the_seeds_story(generations):
    last = notes.parse(generations[-1][2])
    requests = [line.text for line in last.section(notes.REQUESTS)]
    repair = next(line for line in requests if repair_handoff.ORDER in line)
    # the repair: on hold with the user's words, its order named in turn 1, no withdrawn go-ahead
    assert notes.is_hold(repair) and "算了，申请还是先别提交" in notes.quotes(repair), repair
    assert "我明确同意办理" not in generations[-1][2]
    assert "已放弃：AirPods Max（原话：先不买新的了）" in requests
    ipad = next(line for line in requests if "iPad" in line)
    for condition in ("预算4000以内", "只要银色或者深空灰", "对了，iPad的保护壳也只要银色或者深空灰的"):
        assert condition in notes.quotes(ipad), condition
    assert [line.text for line in last.section(notes.DONE)] == [f"create_order 成功，单号 {repair_handoff.IPAD_ORDER}"]
    requests_text = "\n".join(requests)
    for detail in (repair_handoff.DELIVERED, repair_handoff.WARRANTY_UNTIL, "签收", "保修至", "有货"):
        assert detail not in requests_text
    assert "序列号" not in generations[-1][2]  # the assistant's ask is no to-do
