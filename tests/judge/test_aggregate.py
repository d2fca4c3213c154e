"""Figures recomputed from per-sample details (the scores of a subset of a run's rows) equal the metric's own."""

from __future__ import annotations

import pytest

from apibank.data.rows import iter_rows
from apibank.judge.aggregate import aggregate_details
from apibank.judge.scoring import score


@pytest.fixture(scope="module")
def scored(data_dir):
    rows = [row for level in ("level-1", "level-3") for row in iter_rows(level, data_dir)
            if row["sample_id"] < 8 and (row["level"] == 3 or row["file"] < "B")]
    # the first answer of every other dialogue wrong, so that errors, wrong and right dialogues and low ROUGE-L occur
    predictions = ["no call" if row["sample_id"] % 2 == 0 and row["api_id"] in (-1, 0) else row["expected_output"]
                   for row in rows]
    return score(predictions, [row["reference"] for row in rows], return_details=True, data_dir=data_dir)


def test_details_give_the_metrics_figures(scored):
    again = aggregate_details(scored["details"])
    assert set(again) == {"paper", "corrected"}
    for protocol, blocks in again.items():
        assert set(blocks) == {"level-1", "level-3", "overall"}
        for level, block in blocks.items():
            full = scored[protocol][level]
            for key in ("api", "response", "dialogues", "errors"):
                assert block.get(key) == full.get(key), (protocol, level, key)
    level3 = again["corrected"]["level-3"]
    assert 0 < level3["dialogues"]["correct"] < level3["dialogues"]["total"] and level3["errors"]


def test_a_subset_keeps_its_rows_only(scored):
    kept = [entry for entry in scored["details"] if entry["verdict"] is not False]  # the wrong calls left out
    subset = aggregate_details(kept)["paper"]
    assert subset["level-1"]["api"]["accuracy"] == 1.0 and subset["level-1"]["errors"] == {}
    assert subset["level-3"]["dialogues"]["accuracy"] == 1.0
    assert subset["overall"]["response"]["count"] == scored["paper"]["overall"]["response"]["count"]
    assert aggregate_details([]) == {}
