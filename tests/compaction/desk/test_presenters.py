"""The projection preview groups the SPEC §6 pair account for reading."""

from compaction.desk.presenters import projection_digest


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
