"""The inspect-ai task ``inspect eval apibank/api_bank``: registered through the package's entry point, run
offline with inspect-ai's mockllm (from the `inspect eval` command line and in-process), scored by our metric under
both protocols; the gold answers through inspect reproduce the pipeline's figures."""

from __future__ import annotations

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import FieldSpec
from inspect_ai.model import ModelOutput, get_model

from apibank.data.rows import iter_rows
from apibank.evals.classic import api_bank, headline_metrics, prediction_text, sample_from_row
from apibank.evals.spec import (
    AGENTIC_SCORER_NAME, AGENTIC_SOLVER_NAME, FIELD_SPEC, SCORER_NAME, SOLVER_NAME, qualified,
)
from apibank.generate.conversation import paper_text


def _metrics(log):
    return {name: metric.value for score in log.results.scores for name, metric in score.metrics.items()}


def test_the_entry_point_registers_the_tasks_solvers_and_scorers():
    from importlib.metadata import entry_points

    from inspect_ai._util.registry import registry_lookup

    import apibank.evals._registry  # noqa: F401  (what the entry point loads)

    (entry,) = [ep for ep in entry_points(group="inspect_ai") if ep.name == "apibank"]
    assert entry.value == "apibank.evals._registry"
    FieldSpec(**FIELD_SPEC)  # a valid inspect-ai field spec
    for name in (SOLVER_NAME, AGENTIC_SOLVER_NAME):
        assert registry_lookup("solver", qualified(name)) is not None, name
    for name in (SCORER_NAME, AGENTIC_SCORER_NAME):
        assert registry_lookup("scorer", qualified(name)) is not None, name
    for name in ("api_bank", "apibank_agentic"):
        assert registry_lookup("task", qualified(name)) is not None, name


def test_samples_follow_the_field_spec(data_dir):
    row = next(iter_rows("level-1", data_dir))
    sample = sample_from_row(row)
    assert (sample.id, sample.input, sample.target) == (row["id"], row["input"], row["expected_output"])
    assert sample.metadata["reference"] == row["reference"] and sample.metadata["instruction"] == row["instruction"]


def test_completion_is_cut_where_the_next_turn_begins():
    assert prediction_text("API-Request: [ToolSearcher(keywords='x')]\nUser: more") == \
        "API-Request: [ToolSearcher(keywords='x')]"
    assert prediction_text(None) == ""


def test_inspect_eval_command_with_mockllm_prints_both_protocols(data_dir, tmp_path, capsys, fresh_inspect_display):
    from inspect_ai._cli.main import inspect

    with pytest.raises(SystemExit) as done:
        inspect.main(["eval", "apibank/api_bank", "--model", "mockllm/model", "-T", "level=3",
                      "-T", f"data_dir={data_dir}", "--limit", "6", "--log-dir", str(tmp_path),
                      "--display", "plain"], prog_name="inspect")
    assert done.value.code in (0, None)
    printed = capsys.readouterr().out
    for name in ("paper_api_accuracy_pct", "paper_api_total", "paper_dialogue_accuracy_pct",
                 "corrected_api_accuracy_pct", "corrected_dialogue_accuracy_pct"):
        assert name in printed, name
    assert list(tmp_path.glob("*.eval"))


def test_gold_answers_through_inspect_reproduce_the_pipeline(data_dir, tmp_path):
    rows = list(iter_rows("level-2", data_dir))
    gold = {paper_text(row): row["expected_output"] for row in rows}

    def answer(messages, tools, tool_choice, config):
        return ModelOutput.from_content(model="mockllm", content=gold[messages[-1].text])

    (log,) = inspect_eval(api_bank(level=2, data_dir=str(data_dir)), model=get_model("mockllm/model", custom_outputs=answer),
                          log_dir=str(tmp_path), display="none")
    assert log.status == "success" and len(log.samples) == 238
    metrics = _metrics(log)
    # The gold ceilings of `apibank evaluate --model oracle` (README): paper 94/135, corrected 135/135.
    assert (metrics["paper_api_correct"], metrics["paper_api_total"]) == (94, 135)
    assert (metrics["corrected_api_correct"], metrics["corrected_api_total"]) == (135, 135)
    assert metrics["paper_api_accuracy_pct"] == 69.63 and metrics["corrected_api_accuracy_pct"] == 100.0
    # One response prompt occurs twice with different gold texts; this mock answers both alike.
    assert metrics["paper_response_count"] == 103 and metrics["paper_response_rouge_l"] > 0.99
    # Each sample's own value (judged alone) agrees with the run's metric for the gold answers.
    api_values = [s.scores["api_bank_scorer"].value for s in log.samples if s.metadata["kind"] == "api"]
    assert sum(v["paper"] for v in api_values) == 94 and sum(v["corrected"] for v in api_values) == 135


def test_headline_metrics_name_the_level_when_several():
    cell = {"correct": 1, "total": 2, "accuracy": 0.5}
    scores = {"paper": {"level-1": {"api": cell}, "level-3": {"api": cell, "dialogues": cell}}}
    assert headline_metrics(scores, ["paper"]) == {
        "paper_level1_api_accuracy_pct": 50.0, "paper_level1_api_correct": 1.0, "paper_level1_api_total": 2.0,
        "paper_level3_api_accuracy_pct": 50.0, "paper_level3_api_correct": 1.0, "paper_level3_api_total": 2.0,
        "paper_level3_dialogue_accuracy_pct": 50.0, "paper_level3_dialogue_correct": 1.0,
        "paper_level3_dialogue_total": 2.0,
    }


def test_bad_arguments_are_named():
    from apibank.evals.classic import api_bank_scorer, level_dataset

    with pytest.raises(ValueError, match="level must be one of"):
        level_dataset(4)
    with pytest.raises(ValueError, match="protocols must be among"):
        api_bank_scorer(protocols=["strict"])
