"""``apibank evaluate`` / ``apibank score`` end to end, offline: the gold ceilings (``--model oracle``) and
a tiny random model saved to disk, every level and prompt format, an interrupted run resumed."""

from __future__ import annotations

import json

import pytest
import yaml
from huggingface_hub import ModelCard, parse_eval_result_entries

import apibank_cli
from apibank.generate import TransformersBackend
from apibank.generate.predictions import read_predictions
from support.tiny import build_tiny_model
from apibank.pipeline import load_rows

OUTPUT_FILES = (
    "results.json",
    "predictions.jsonl",
    "details.jsonl",
    "report.md",
    "per_level_accuracy.png",
    "error_categories.png",
    "api_error_rates.png",
    "leaderboard/dataset/eval.yaml",
)
# Written for complete levels with --dataset-id (a --limit subset never goes under the official task ids).
LEADERBOARD_FILES = (
    "leaderboard/model/README.md",
    "leaderboard/model/.eval_results/api-bank.yaml",
    "leaderboard/model/.eval_results/api-bank-corrected.yaml",
)
DATASET_ID = "someone/API-Bank"


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory, data_dir):
    rows = load_rows(None, data_dir, limit=1)
    corpus = [row["instruction"] + row["input"] + row["expected_output"] for row in rows]
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", corpus)


def _check_outputs(out, leaderboard=False):
    for name in OUTPUT_FILES + (LEADERBOARD_FILES if leaderboard else ()):
        assert (out / name).is_file(), name
    results = json.loads((out / "results.json").read_text())
    if leaderboard:
        assert ModelCard.load(out / "leaderboard/model/README.md").data.eval_results
        for name in LEADERBOARD_FILES[1:]:
            assert parse_eval_result_entries(yaml.safe_load((out / name).read_text()))
    else:
        assert not (out / "leaderboard/model").exists()
    return results


def test_oracle_prints_the_gold_ceilings(data_dir, tmp_path, capsys):
    out = tmp_path / "oracle"
    assert apibank_cli.main(["evaluate", "--model", "oracle", "--data-dir", str(data_dir), "--output", str(out),
                             "--dataset-id", DATASET_ID, "--quiet"]) == 0
    printed = capsys.readouterr().out
    results = _check_outputs(out, leaderboard=True)
    assert results["counts"] == {"level-1": {"api": 399, "response": 375}, "level-2": {"api": 135, "response": 103},
                                 "level-3": {"api": 245, "response": 50}}
    assert results["model"]["id"] == "oracle" and results["format"] == "paper"
    assert results["dataset"]["upstream_revision"] == "5d5a2d40b2e6b6998a06961cc43ad0a8c069b153"
    assert "revision" not in results["dataset"]  # the Hub dataset's revision is never the upstream commit
    assert set(results["protocols"]) == {"paper", "corrected"}
    paper, corrected = results["scores"]["paper"], results["scores"]["corrected"]
    # Ceilings of the original evaluator (level 1 lies above the offline 337 because our
    # Dictionary, Translate and SearchEngine run without the network).
    assert paper["level-2"]["api"]["correct"] == 94 and paper["level-3"]["api"]["correct"] == 230
    assert paper["level-3"]["dialogues"]["correct"] == 40
    assert 337 <= paper["level-1"]["api"]["correct"] < 399
    for level in ("level-1", "level-2", "level-3"):
        assert corrected[level]["api"]["correct"] > paper[level]["api"]["correct"]
        assert paper[level]["response"]["rouge_l"] == pytest.approx(1.0, abs=1e-6)
    header = next(line for line in printed.splitlines() if line.startswith("protocol"))
    assert header.split() == ["protocol", "metric", "level-1", "level-2", "level-3"]
    assert f"({paper['level-1']['api']['correct']}/399)" in printed and "(94/135)" in printed
    assert "(230/245)" in printed and "(40/50)" in printed
    details = [json.loads(line) for line in (out / "details.jsonl").read_text().splitlines()]
    assert len(details) == 2 * (774 + 238 + 295)
    predictions = read_predictions(out / "predictions.jsonl")
    assert len(predictions) == 1307 and all(p["model"] == "oracle" for p in predictions)


def test_kinds_api_scores_every_api_row_as_a_subset(data_dir, tmp_path, capsys):
    out = tmp_path / "api-only"
    assert apibank_cli.main(["evaluate", "--model", "oracle", "--levels", "1", "3", "--kinds", "api", "--data-dir",
                             str(data_dir), "--output", str(out), "--dataset-id", DATASET_ID, "--quiet"]) == 0
    captured = capsys.readouterr()
    assert "--kinds api scores a subset" in captured.err and "(subset: --kinds api)" in captured.out
    results = _check_outputs(out)
    assert results["counts"] == {"level-1": {"api": 399, "response": 0}, "level-3": {"api": 245, "response": 0}}
    assert results["kinds"] == ["api"] and results["subset"] is True
    paper = results["scores"]["paper"]
    assert paper["level-3"]["api"]["correct"] == 230 and paper["level-3"]["dialogues"]["correct"] == 40
    assert not any((out / name).exists() for name in LEADERBOARD_FILES)  # never under the official task ids
    assert {p["kind"] for p in read_predictions(out / "predictions.jsonl")} == {"api"}

    assert apibank_cli.main(["evaluate", "--model", "oracle", "--kinds", "api", "--data-dir", str(data_dir),
                             "--output", str(tmp_path / "pushed"), "--dataset-id", DATASET_ID,
                             "--push-to-hub", "someone/model"]) == 2
    assert "a subset (--kinds api) is never pushed to the Hub" in capsys.readouterr().err


@pytest.mark.parametrize("fmt", ["paper", "chat", "tools"])
def test_tiny_model_every_level(tiny_model, data_dir, tmp_path, capsys, fmt):
    out = tmp_path / fmt
    argv = ["evaluate", "--model", str(tiny_model), "--format", fmt, "--limit", "1", "--allow-subset",
            "--dataset-id", DATASET_ID, "--max-new-tokens", "4",
            "--batch-size", "4", "--dtype", "float32", "--device", "cpu", "--data-dir", str(data_dir),
            "--output", str(out), "--quiet"]
    assert apibank_cli.main(argv) == 0
    printed = capsys.readouterr().out
    results = _check_outputs(out)
    assert results["counts"] == {level: {"api": 1, "response": 1} for level in ("level-1", "level-2", "level-3")}
    assert results["model"]["id"] == str(tiny_model) and results["model"]["backend"] == "transformers"
    assert results["model"]["dtype"] == "float32" and results["batch_size"] == 4 and results["format"] == fmt
    assert results["decoding"]["max_new_tokens"] == 4 and results["decoding"]["do_sample"] is False
    assert results["limit"] == 1 and results["apibank_version"]
    predictions = read_predictions(out / "predictions.jsonl")
    assert len(predictions) == 6 and {p["format"] for p in predictions} == {fmt}
    assert "API call accuracy" in printed and "(subset: --limit 1)" in printed

    # `apibank score` on the same file reproduces the scores.
    rescored = tmp_path / f"{fmt}-rescored"
    assert apibank_cli.main(["score", str(out / "predictions.jsonl"), "--data-dir", str(data_dir),
                             "--output", str(rescored)]) == 0
    again = json.loads((rescored / "results.json").read_text())
    assert again["scores"] == results["scores"]


def test_interrupted_evaluate_resumes(tiny_model, data_dir, tmp_path, monkeypatch, capsys):
    out = tmp_path / "resume"
    argv = ["evaluate", "--model", str(tiny_model), "--format", "chat", "--levels", "1", "3", "--limit", "1",
            "--allow-subset",
            "--max-new-tokens", "4", "--batch-size", "2", "--dtype", "float32", "--device", "cpu",
            "--data-dir", str(data_dir), "--output", str(out), "--quiet"]
    real_generate = TransformersBackend.generate
    calls = []

    def interrupted(self, conversations, prompts, settings):
        if calls:
            raise KeyboardInterrupt
        calls.append([c.row_id for c in conversations])
        return real_generate(self, conversations, prompts, settings)

    monkeypatch.setattr(TransformersBackend, "generate", interrupted)
    assert apibank_cli.main(argv) == 130  # Ctrl-C: no traceback, a line saying how to resume
    assert "Run the same command again to resume" in capsys.readouterr().err
    assert [p["id"] for p in read_predictions(out / "predictions.jsonl")] == calls[0]
    assert not (out / "results.json").exists()

    resumed = []

    def counting(self, conversations, prompts, settings):
        resumed.extend(c.row_id for c in conversations)
        return real_generate(self, conversations, prompts, settings)

    monkeypatch.setattr(TransformersBackend, "generate", counting)
    assert apibank_cli.main(argv) == 0
    assert len(resumed) == 2 and not set(resumed) & set(calls[0])
    assert len(read_predictions(out / "predictions.jsonl")) == 4
    assert json.loads((out / "results.json").read_text())["counts"]["level-3"] == {"api": 1, "response": 1}

    assert apibank_cli.main(argv + ["--overwrite"]) == 0
    assert len(resumed) == 6  # --overwrite starts over


def _oracle_interrupted(monkeypatch, after: int) -> None:
    """The oracle reports its rows one by one, and Ctrl-C arrives after ``after`` rows of its first batch."""
    from apibank.generate import OracleBackend
    from apibank.generate.backends import Completion

    def generate(self, conversations, prompts, settings, on_completion=None):
        completions = [Completion(text=c.gold, raw=c.gold) for c in conversations]
        for index, completion in enumerate(completions):
            if index == after:
                raise KeyboardInterrupt
            on_completion(index, completion)
        return completions

    monkeypatch.setattr(OracleBackend, "generate", generate)


def test_ctrl_c_mid_batch_saves_the_rows_done_and_a_resume_reports_its_own_time(data_dir, tmp_path, monkeypatch,
                                                                                capsys):
    out = tmp_path / "interrupted"
    argv = ["evaluate", "--model", "oracle", "--levels", "1", "--limit", "6", "--allow-subset", "--batch-size", "8",
            "--data-dir", str(data_dir), "--quiet", "--output"]
    with monkeypatch.context() as patch:
        _oracle_interrupted(patch, after=3)
        assert apibank_cli.main(argv + [str(out)]) == 130
        err = capsys.readouterr().err
        assert f"interrupted; 3 predictions are saved in {out / 'predictions.jsonl'} (3 by this run)" in err
        assert len(read_predictions(out / "predictions.jsonl")) == 3
        _oracle_interrupted(patch, after=5)
        assert apibank_cli.main(argv + [str(out)]) == 130
        err = capsys.readouterr().err
        assert "resuming: 3 predictions" in err and "interrupted; 8 predictions are saved" in err
        assert "(5 by this run, 3 of them from earlier runs)" in err
    assert apibank_cli.main(argv + [str(out)]) == 0
    printed = capsys.readouterr().out
    assert "usage: 12 samples in" in printed and "(this run: 4 in " in printed and "; earlier runs: 8 in " in printed
    results = json.loads((out / "results.json").read_text())
    assert results["usage"]["this_run"]["samples"] == 4 and results["usage"]["earlier_runs"]["samples"] == 8

    assert apibank_cli.main(argv + [str(tmp_path / "whole")]) == 0
    assert "this run" not in capsys.readouterr().out
    whole = json.loads((tmp_path / "whole" / "results.json").read_text())
    for key in ("scores", "counts", "decoding", "levels", "model", "subset"):
        assert results[key] == whole[key], key
    assert "this_run" not in whole["usage"]


def test_a_folder_takes_more_levels(data_dir, tmp_path, capsys):
    """Level 1, then levels 1 and 2 into the same folder: level 1 is kept (its budgets are those of the first
    run, though the run's largest budget differs), level 2 is added; a real difference is refused in one line."""
    out = tmp_path / "oracle"
    argv = ["evaluate", "--model", "oracle", "--data-dir", str(data_dir), "--output", str(out), "--quiet", "--levels"]
    assert apibank_cli.main(argv + ["1"]) == 0
    first = json.loads((out / "results.json").read_text())
    capsys.readouterr()
    assert apibank_cli.main(argv + ["1", "2"]) == 0
    err = capsys.readouterr().err
    assert f"resuming: {first['usage']['samples']} predictions" in err
    both = json.loads((out / "results.json").read_text())
    assert both["levels"] == ["level-1", "level-2"] and both["scores"]["paper"]["level-1"] == first["scores"]["paper"]["level-1"]
    assert both["decoding"]["max_new_tokens"] != first["decoding"]["max_new_tokens"]
    assert both["usage"]["earlier_runs"]["samples"] == first["usage"]["samples"]
    assert len(read_predictions(out / "predictions.jsonl")) == sum(sum(c.values()) for c in both["counts"].values())

    assert apibank_cli.main(argv + ["1", "2", "3", "--max-new-tokens", "50"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "this run has max_new_tokens for level-1/response=50, the predictions in" in err and "have 611" in err
    assert "(the whole message" not in err


def test_usage_line_of_a_resume_that_had_nothing_left_to_do():
    from apibank.pipeline.results import usage_line

    line = usage_line({"samples": 12, "seconds": 135.3, "this_run": {"samples": 0, "seconds": None},
                       "earlier_runs": {"samples": 12, "seconds": 135.3}})
    assert line.startswith("usage: 12 samples in 135.3 s (this run: 0; earlier runs: 12 in 135.3 s)")
