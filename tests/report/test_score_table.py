"""The report and the score table (the Hub files and pushes: tests/test_hub_files.py)."""

from __future__ import annotations

import pytest

from apibank.report.markdown import PLOTS, api_error_rates, write_report
from apibank.report.table import format_table


def _level(correct, total, rouge, count, errors, by_api, dialogues=None):
    block = {
        "api": {"correct": correct, "total": total, "accuracy": correct / total},
        "response": {"rouge_l": rouge, "count": count, "rouge_l_rougescore": rouge},
        "errors": errors,
        "errors_by_api": by_api,
    }
    if dialogues:
        block["dialogues"] = {"correct": dialogues[0], "total": dialogues[1], "accuracy": dialogues[0] / dialogues[1]}
    return block


@pytest.fixture
def results():
    paper = {
        "level-1": _level(218, 399, 0.46223, 375, {"NO_API_CALL": 127, "API_NAME_MISMATCH": 54}, {"GetUserToken": 33}),
        "level-2": _level(55, 135, 0.3445, 103, {"NO_API_CALL": 80}, {"ToolSearcher": 34, "GetUserToken": 12}),
        "level-3": _level(100, 245, 0.2, 50, {"NO_API_CALL": 145}, {"ToolSearcher": 100}, dialogues=(5, 50)),
    }
    corrected = {
        level: _level(block["api"]["correct"] + 10, block["api"]["total"], block["response"]["rouge_l"],
                      block["response"]["count"], {}, {}, dialogues=(7, 50) if level == "level-3" else None)
        for level, block in paper.items()
    }
    return {
        "model": {"id": "org/model", "revision": "abc", "backend": "transformers", "dtype": "bfloat16"},
        "format": "tools",
        "decoding": {"do_sample": False},
        "batch_size": 8,
        "limit": None,
        "date": "2026-12-02T18:00:00+00:00",
        "levels": ["level-1", "level-2", "level-3"],
        "counts": {},
        "dataset": {"revision": "5d5a2d4"},
        "protocols": {"paper": "original", "corrected": "fixed"},
        "scores": {"paper": paper, "corrected": corrected},
    }


@pytest.fixture
def rows():
    def row(level, api):
        return {"level": level, "kind": "api", "target": {"api_name": api}}

    return [row(1, "GetUserToken")] * 100 + [row(2, "ToolSearcher")] * 45 + [row(2, "GetUserToken")] * 20 + [
        row(3, "ToolSearcher")
    ] * 114 + [{"level": 1, "kind": "response", "target": {"api_name": ""}}]


def test_table_has_levels_as_columns_and_both_protocols(results):
    table = format_table(results["scores"])
    lines = table.splitlines()
    assert lines[0].split() == ["protocol", "metric", "level-1", "level-2", "level-3"]
    assert "54.64% (218/399)" in table and "40.74% (55/135)" in table and "10.00% (5/50)" in table
    assert "0.4622 (n=375)" in table
    assert sum(line.startswith("paper") for line in lines) == 1
    assert sum(line.startswith("corrected") for line in lines) == 1
    assert table.count("Response ROUGE-L") == 2 and table.count("Dialogue accuracy") == 2


def test_report_and_plots(results, rows, tmp_path):
    path = write_report(results, rows, tmp_path)
    text = path.read_text()
    assert "| paper | API call accuracy | 54.64% (218/399)" in text
    for name in PLOTS.values():
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"]({name})" in text
    rates = {entry["api"]: entry for entry in api_error_rates(results["scores"], rows, "paper")}
    assert rates["ToolSearcher"]["calls"] == 159 and rates["ToolSearcher"]["errors"] == 134
    assert rates["GetUserToken"]["rate"] == pytest.approx(45 / 120)
    assert "| ToolSearcher | 134 | 159 |" in text
