"""The projection preview groups the SPEC §6 pair account for reading."""

from compaction.desk.presenters import bar_chart, changed_fields, projection_digest, tick_label


def test_preview_counts_forms_and_groups_consecutive_reasons():
    projection = {"pairs": [
        {"index": 12, "as": "raw", "reason": "stale_source"},
        {"index": 0, "as": "summary", "reason": None},
        {"index": 10, "as": "raw", "reason": "stale_source"},
        {"index": 11, "as": "raw", "reason": "stale_source"},
        {"index": 13, "as": "omitted", "reason": "over_budget"},
        {"index": 30, "as": "raw", "reason": None},
    ]}
    digest = projection_digest(projection)
    assert [p["index"] for p in digest["pairs"]] == [0, 10, 11, 12, 13, 30]
    assert digest["counts"] == {"summary": 1, "raw": 4, "omitted": 1}
    assert digest["reasons"] == [
        {"first": 10, "last": 12, "as": "raw", "reason": "stale_source"},
        {"first": 13, "last": 13, "as": "omitted", "reason": "over_budget"},
    ]


def test_changed_fields_keeps_only_what_differs_by_field_name():
    before = {"state": "exhausted", "attempts_used": 2, "max_attempts": 2, "prompt_version": "p@3"}
    after = {"state": "pending", "attempts_used": 2, "max_attempts": 3, "prompt_version": "p@3"}
    assert changed_fields(before, after) == [
        {"field": "max_attempts", "before": "2", "after": "3"},
        {"field": "state", "before": "exhausted", "after": "pending"},
    ]


def test_changed_fields_of_a_creation_a_removal_and_odd_values():
    assert changed_fields(None, {"granted": [4, 5], "planned": []}) == [
        {"field": "granted", "before": "—", "after": "4, 5"},
        {"field": "planned", "before": "—", "after": "[]"},
    ]
    assert changed_fields({"job": 7}, None) == [{"field": "job", "before": "7", "after": "—"}]
    assert changed_fields({"a": {"x": 1}}, {"a": {"x": 1}}) == []
    assert changed_fields({"a": ""}, {"a": None, "b": {"k": "值"}}) == [
        {"field": "a", "before": '""', "after": "—"}, {"field": "b", "before": "—", "after": '{"k": "值"}'}]
    assert changed_fields("old", "new") == [{"field": "value", "before": "old", "after": "new"}]
    assert changed_fields(None, None) == []


class Gen:
    def __init__(self, number, value):
        self.number, self.value = number, value


def test_bar_chart_labels_both_axes_and_ticks_generations():
    chart = bar_chart([(n, 100 * n, "valid") for n in range(1, 41)], y_label="summary length (bytes)")
    assert chart["x_label"] == "generation" and chart["y_label"] == "summary length (bytes)"
    assert [t["label"] for t in chart["y_ticks"]] == ["0", "2000", "4000"]
    assert chart["y_ticks"][0]["y"] == chart["base"] and chart["y_ticks"][-1]["y"] == chart["top"]
    labels = [t["label"] for t in chart["x_ticks"]]
    assert labels[0] == "1" and labels[-1] == "40" and len(labels) <= 16
    # Every bar stands on the x axis and inside the plot.
    for bar in chart["bars"]:
        assert round(bar["y"] + bar["h"], 1) == chart["base"] and bar["x"] >= chart["left"]
        assert bar["x"] + bar["w"] <= chart["right"]
    assert bar_chart([], y_label="x") is None


def test_tick_labels_stay_four_characters_wide_so_they_never_reach_the_axis_label():
    assert [tick_label(v) for v in (0, 441, 9999, 10_000, 98_765, 999_999, 1_234_567, 9_990_000, 12_000_000)] == [
        "0", "441", "9999", "10k", "98k", "999k", "1.2M", "9.9M", "12M"]
