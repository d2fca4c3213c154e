"""The paper's error analysis: every verdict category has a type; counts on real runs; --errors and the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apibank.cli.main import main
from apibank.judge.categories import CATEGORY_DESCRIPTIONS
from apibank.report.error_types import MAPPING, TYPES, paper_type


@pytest.fixture(scope="module")
def oracle_run(tmp_path_factory, data_dir) -> tuple[Path, str]:
    output = tmp_path_factory.mktemp("runs") / "oracle"
    import contextlib
    import io

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["evaluate", "--model", "oracle", "--data-dir", str(data_dir), "--output", str(output),
                     "--errors", "--no-progress"]) == 0
    return output, printed.getvalue()


def test_every_verdict_category_of_the_judge_has_an_error_type():
    assert set(MAPPING) == set(CATEGORY_DESCRIPTIONS)
    assert all(kind in TYPES for kind, _ in MAPPING.values())
    assert paper_type("OUTPUT_MISMATCH", "ToolSearcher") == "Failed API Retrieval"
    assert paper_type("OUTPUT_MISMATCH", "QueryMeeting") == "Wrong Values"
    assert paper_type(None, "AddAlarm") == "Wrong Values"
    with pytest.raises(ValueError, match="no error type"):
        paper_type("SOMETHING_NEW", None)


def test_error_types_account_for_every_wrong_call_of_a_real_run(oracle_run):
    output, _ = oracle_run
    scores = json.loads((output / "results.json").read_text())["scores"]
    for protocol in ("paper", "corrected"):
        for level in ("level-1", "level-2", "level-3", "overall"):
            block = scores[protocol][level]
            assert sum(block["error_types"].values()) == block["api"]["total"] - block["api"]["correct"]
    paper = scores["paper"]
    # the oracle's paper-protocol errors are the original judge's: ToolSearcher outputs that changed since annotation
    assert paper["level-2"]["error_types"]["Failed API Retrieval"] == paper["level-2"]["errors_by_api"]["ToolSearcher"]
    assert paper["level-1"]["error_types"]["Has Exception"] == paper["level-1"]["errors"]["HAS_EXCEPTION"]
    assert paper["level-1"]["error_types"]["Judging Bug"] == paper["level-1"]["errors"]["KEY_ERROR"]
    assert scores["corrected"]["level-1"]["error_types"] == {}


def test_errors_flag_prints_the_analysis_and_the_report_has_it(oracle_run):
    output, printed = oracle_run
    assert "error analysis (the paper's error types" in printed
    assert "paper     level-2  Failed API Retrieval      31      75.6%" in printed
    report = (output / "report.md").read_text()
    assert "## Error analysis (the paper's error types)" in report
    assert "| KEY_ERROR | Judging Bug | no |" in report


def test_a_run_without_calls_is_no_api_call(oracle_run, tmp_path, data_dir, capsys):
    output, _ = oracle_run
    predictions = tmp_path / "answers-only.jsonl"
    lines = [json.loads(line) for line in (output / "predictions.jsonl").read_text().splitlines()]
    lines = [{**record, "prediction": "Sure."} for record in lines if record["id"].startswith("level-1/")]
    predictions.write_text("".join(json.dumps(record) + "\n" for record in lines))
    capsys.readouterr()
    assert main(["score", str(predictions), "--data-dir", str(data_dir), "--output", str(tmp_path / "run"),
                 "--errors"]) == 0
    assert "corrected  level-1  No API Call  399     100.0%" in capsys.readouterr().out
    scores = json.loads((tmp_path / "run" / "results.json").read_text())["scores"]
    assert scores["paper"]["level-1"]["error_types"] == {"No API Call": 399}
