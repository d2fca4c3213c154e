"""The exported dataset repository against the tools that consume it.

* inspect-ai's own loader for Hub benchmarks (``inspect eval hf/NS/NAME``, ``task_create_from_hf``),
  downloading ``eval.yaml`` from a local stand-in of the Hub: no inspect-ai ``eval.yaml`` can run
  API-Bank (its schema, ``HFTask``, takes built-in solvers and text-matching scorers only), so the
  file declares no inspect-ai spec and no framework, and the loader refuses it before any work;
* the command that does run the benchmark, ``inspect eval apibank/api_bank`` with
  ``-T dataset=<the exported repository>``: the same samples as the local data, the same scores;
* the Hub's documented ``eval.yaml`` fields, and the model side (``.eval_results/*.yaml``) read back
  with huggingface_hub's parsers; a fine-tuned model keeps its ``base_model`` when results are pushed.
"""

from __future__ import annotations

from pathlib import Path

import huggingface_hub.constants  # noqa: F401  (point_huggingface_hub_at patches it)
import pytest
import yaml
from huggingface_hub import ModelCard, parse_eval_result_entries
from support.hub_standin import HubStandIn, point_huggingface_hub_at
from pydantic import ValidationError

import apibank_cli
from apibank.hub.dataset_repo import export_repository
from apibank.hub.tasks import EVAL_YAML_KEYS, TASK_KEYS, declared_task_ids, eval_yaml

pytest.importorskip("inspect_ai", reason="the inspect extra")
from inspect_ai._eval.task.hf import HFScorer, HFTask, task_create_from_hf  # noqa: E402

from apibank.evals.classic import level_dataset  # noqa: E402
from apibank.evals.spec import FIELD_SPEC, SCORER_NAME, SOLVER_NAME, qualified  # noqa: E402

BENCHMARK = "someone/API-Bank"
TEST_CONFIGS = ["level-1", "level-2", "level-3"]


@pytest.fixture(scope="module")
def exported(data_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("registration") / "API-Bank"
    export_repository(out, data_dir=data_dir, cache_dir=tmp_path_factory.mktemp("cache"), configs=TEST_CONFIGS)
    return out


@pytest.fixture
def hub_with_benchmark(exported, monkeypatch, tmp_path):
    files = {str(path.relative_to(exported)): path.read_bytes() for path in exported.rglob("*") if path.is_file()}
    with HubStandIn() as hub:
        hub.add_repo("dataset", BENCHMARK, files)
        point_huggingface_hub_at(hub, monkeypatch, tmp_path / "hub-cache")
        yield hub


def test_eval_yaml_has_only_the_fields_the_hub_documents(exported):
    spec = yaml.safe_load((exported / "eval.yaml").read_text("utf-8"))
    assert spec == eval_yaml() and tuple(spec) == EVAL_YAML_KEYS
    assert "evaluation_framework" not in spec  # it would name a framework that cannot run these tasks
    assert [task["id"] for task in spec["tasks"]] == declared_task_ids()
    configs = {entry["config_name"] for entry in huggingface_hub.DatasetCard.load(exported / "README.md").data.configs}
    for task in spec["tasks"]:
        assert tuple(task) == TASK_KEYS and task["split"] == "test" and task["config"] in configs
    # The description tells a reader of the Hub page what does run the benchmark, and what does not.
    description = spec["description"]
    assert "inspect eval apibank/api_bank" in description and "pip install 'apibank[inspect]'" in description
    assert "`hf/` loader cannot run this benchmark" in description


def test_inspect_hf_loader_refuses_the_file_before_any_work(hub_with_benchmark):
    with pytest.raises(ValidationError) as refused:
        task_create_from_hf(f"hf/{BENCHMARK}")
    # the file came from the stand-in, through huggingface_hub's hf_hub_download
    assert ("GET", f"/datasets/{BENCHMARK}/resolve/main/eval.yaml") in hub_with_benchmark.requests
    message = str(refused.value)
    assert "3 validation errors for HFTask" in message
    for field in ("field_spec", "solvers", "scorers"):
        assert f"{field}\n  Field required [type=missing" in message
    # no Parquet file was read: the loader stopped at the first task
    assert not any(path.endswith(".parquet") for _, path in hub_with_benchmark.requests)


def test_no_inspect_ai_eval_yaml_can_name_the_executing_scorer():
    """What the file would need to declare to run API-Bank through ``hf/``, and HFTask's answer."""
    candidate = {"id": "level-1-api", "config": "level-1", "split": "test", "field_spec": dict(FIELD_SPEC),
                 "solvers": [{"name": qualified(SOLVER_NAME)}, {"name": "generate"}],
                 "scorers": [{"name": qualified(SCORER_NAME)}]}
    with pytest.raises(ValidationError) as refused:
        HFTask.model_validate(candidate)
    message = str(refused.value)
    assert "scorers.0.name\n  Input should be 'includes', 'match', 'pattern'" in message
    assert "solvers.0.name\n  Input should be 'prompt_template'" in message
    # Every scorer the loader accepts compares text (or asks a model); none runs the predicted call.
    accepted = set(HFScorer.model_fields["name"].annotation.__args__)
    assert accepted == {"includes", "match", "pattern", "answer", "exact", "f1", "model_graded_qa",
                        "model_graded_fact", "choice", "math"}


def test_the_inspect_task_reads_the_exported_repository_like_the_local_data(exported, data_dir):
    for level in (1, 2, 3):
        from_repository = list(level_dataset(level, dataset=str(exported)))
        local = list(level_dataset(level, data_dir=str(data_dir)))
        assert [(s.id, s.input, s.target, s.metadata) for s in from_repository] == \
            [(s.id, s.input, s.target, s.metadata) for s in local]


def test_inspect_eval_on_the_exported_repository_scores_like_apibank_evaluate(exported, data_dir, tmp_path):
    """``inspect eval apibank/api_bank -T level=3 -T dataset=<repo>`` with the gold answers gives the oracle's
    figures of ``apibank evaluate`` on the same rows."""
    import json

    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ModelOutput, get_model

    from apibank.data.rows import iter_rows
    from apibank.evals.classic import api_bank
    from apibank.generate.conversation import paper_text

    gold = {paper_text(row): row["expected_output"] for row in iter_rows("level-3", data_dir)}

    def answer(messages, tools, tool_choice, config):
        return ModelOutput.from_content(model="mockllm", content=gold[messages[-1].text])

    (log,) = inspect_eval(api_bank(level=3, dataset=str(exported), data_dir=str(data_dir)),
                          model=get_model("mockllm/model", custom_outputs=answer), log_dir=str(tmp_path / "logs"),
                          display="none")
    assert log.status == "success", log.error
    metrics = {name: m.value for score in log.results.scores for name, m in score.metrics.items()}
    out = tmp_path / "oracle"
    assert apibank_cli.main(["evaluate", "--model", "oracle", "--levels", "3", "--data-dir", str(data_dir),
                             "--output", str(out), "--quiet"]) == 0
    scores = json.loads((out / "results.json").read_text())["scores"]
    for protocol in ("paper", "corrected"):
        level = scores[protocol]["level-3"]
        assert metrics[f"{protocol}_api_correct"] == level["api"]["correct"]
        assert metrics[f"{protocol}_api_total"] == level["api"]["total"] == 245
        assert metrics[f"{protocol}_dialogue_accuracy_pct"] == round(100 * level["dialogues"]["accuracy"], 2)


def test_model_side_files_parse_and_name_declared_tasks(exported, data_dir, tmp_path):
    out = tmp_path / "run"
    assert apibank_cli.main(["evaluate", "--model", "oracle", "--levels", "3", "--data-dir", str(data_dir),
                             "--output", str(out), "--dataset-id", BENCHMARK, "--quiet"]) == 0
    declared = {task["id"] for task in yaml.safe_load((exported / "eval.yaml").read_text("utf-8"))["tasks"]}
    files = sorted((out / "leaderboard/model/.eval_results").glob("*.yaml"))
    assert [f.name for f in files] == ["api-bank-corrected.yaml", "api-bank.yaml"]
    for path in files:
        entries = parse_eval_result_entries(yaml.safe_load(path.read_text("utf-8")))
        assert [e.task_id for e in entries] == ["level-3-api", "level-3-dialogue", "level-3-response"]
        assert all(e.dataset_id == BENCHMARK and e.task_id in declared for e in entries)
        assert all(isinstance(e.value, (int, float)) for e in entries)


def test_a_fine_tuned_model_keeps_its_base_model_when_results_are_pushed(data_dir, tmp_path, monkeypatch):
    """The Hub's default leaderboard view lists models without a ``base_model``; a fine-tune keeps it
    (the push merges into its card), so it shows with ``base_model_only=False`` / the view's toggle."""
    card = "---\nbase_model: google/gemma-3-270m\nlicense: apache-2.0\n---\n\n# A fine-tune\n"
    with HubStandIn() as hub:
        point_huggingface_hub_at(hub, monkeypatch, tmp_path / "hub-cache")
        hub.add_repo("model", "org/fine-tune", {"README.md": card.encode()})
        assert apibank_cli.main(["evaluate", "--model", "oracle", "--levels", "3", "--data-dir", str(data_dir),
                                 "--output", str(tmp_path / "run"), "--dataset-id", BENCHMARK,
                                 "--push-to-hub", "org/fine-tune", "--quiet"]) == 0
        pushed = hub.repos[("model", "org/fine-tune")].pull_requests[0]["files"]
    merged = ModelCard(pushed["README.md"].decode())
    assert merged.data.base_model == "google/gemma-3-270m"
    assert parse_eval_result_entries(yaml.safe_load(pushed[".eval_results/api-bank.yaml"]))[0].task_id == "level-3-api"
