"""Leaderboard files, validated with huggingface_hub's own parsers; the pull-request path with a fake Hub
client; the report and the score table."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import yaml
from huggingface_hub import EvalResult, ModelCard, parse_eval_result_entries

from apibank.hub import leaderboard
from apibank.hub.leaderboard import (
    EVAL_RESULTS_FILE,
    TASKS,
    eval_yaml,
    push_to_hub,
    write_leaderboard_files,
)
from apibank.report.markdown import PLOTS, api_error_rates, write_report
from apibank.report.table import format_table

DATASET = "someone/API-Bank"


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


def test_files_parse_with_huggingface_hub(results, tmp_path):
    paths = write_leaderboard_files(results, tmp_path, dataset_id=DATASET, dataset_revision="f00d")
    card = ModelCard.load(paths["model_card"])
    assert card.data.model_name == "org/model"
    parsed = card.data.eval_results
    assert all(isinstance(r, EvalResult) for r in parsed)
    assert len(parsed) == 2 * len(TASKS)  # every task, both protocols
    by_name = {r.metric_name: r for r in parsed}
    accuracy = by_name["Level-1 API call accuracy (%), paper protocol"]
    assert (accuracy.metric_value, accuracy.dataset_type, accuracy.dataset_config, accuracy.dataset_split) == (
        54.64, DATASET, "level-1", "test")
    assert accuracy.dataset_revision == "f00d"
    assert by_name["Level-2 response ROUGE-L, paper protocol"].metric_value == 0.3445
    assert by_name["Level-3 dialogue accuracy (%), corrected protocol"].metric_value == 14.0

    entries = parse_eval_result_entries(yaml.safe_load(paths["eval_results"].read_text()))
    assert [e.task_id for e in entries] == list(TASKS)
    assert {e.dataset_id for e in entries} == {DATASET}
    values = {e.task_id: e.value for e in entries}
    assert values["level-1-api"] == 54.64 and values["level-2-api"] == 40.74
    assert values["level-1-response"] == 0.4622
    assert all(e.date == results["date"] and "protocol=paper" in e.notes for e in entries)

    benchmark = yaml.safe_load(paths["eval_yaml"].read_text())
    assert benchmark == eval_yaml()
    assert set(benchmark) == {"name", "description", "evaluation_framework", "tasks"}
    task_ids = [task["id"] for task in benchmark["tasks"]]
    assert len(set(task_ids)) == len(task_ids)
    assert {e.task_id for e in entries} <= set(task_ids)
    assert all(task["split"] == "test" and task["config"] in ("level-1", "level-2", "level-3")
               for task in benchmark["tasks"])


def test_subset_runs_say_so_and_missing_levels_are_left_out(results, tmp_path):
    results["limit"] = 5
    del results["scores"]["paper"]["level-3"]
    paths = write_leaderboard_files(results, tmp_path, dataset_id=DATASET, protocol="paper")
    entries = parse_eval_result_entries(yaml.safe_load(paths["eval_results"].read_text()))
    assert not any(e.task_id.startswith("level-3") for e in entries)
    assert all("subset" in e.notes for e in entries)


class FakeHub:
    def __init__(self):
        self.commits = []

    def create_commit(self, **kwargs):
        self.commits.append(kwargs)
        number = len(self.commits)
        return SimpleNamespace(pr_url=f"https://huggingface.co/{kwargs['repo_id']}/discussions/{number}")


def test_push_opens_pull_requests_and_merges_the_card(results, tmp_path, monkeypatch):
    write_leaderboard_files(results, tmp_path, dataset_id=DATASET)
    existing = ModelCard(
        "---\nlicense: mit\nmodel-index:\n- name: org/model\n  results:\n  - task:\n      type: text-generation\n"
        "    dataset:\n      name: Other\n      type: other/bench\n    metrics:\n    - type: accuracy\n"
        "      value: 12.5\n---\n\n# Model\n"
    )
    real_load = ModelCard.load

    def load(repo_id_or_path, *args, **kwargs):
        if str(repo_id_or_path) == "org/model":
            return existing
        return real_load(repo_id_or_path, *args, **kwargs)

    monkeypatch.setattr(ModelCard, "load", staticmethod(load))
    hub = FakeHub()
    urls = push_to_hub(tmp_path, "org/model", dataset_repo=DATASET, dataset_id=DATASET, api=hub)
    assert urls == {"model": "https://huggingface.co/org/model/discussions/1",
                    "dataset": f"https://huggingface.co/{DATASET}/discussions/2"}
    model_commit, dataset_commit = hub.commits
    assert model_commit["create_pr"] is True and model_commit["repo_type"] == "model"
    assert dataset_commit["create_pr"] is True and dataset_commit["repo_type"] == "dataset"
    assert [op.path_in_repo for op in model_commit["operations"]] == ["README.md", EVAL_RESULTS_FILE]
    assert [op.path_in_repo for op in dataset_commit["operations"]] == ["eval.yaml"]
    card_text = model_commit["operations"][0].path_or_fileobj.decode()
    merged = ModelCard(card_text)
    assert merged.data.license == "mit" and "# Model" in merged.text
    assert {r.dataset_type for r in merged.data.eval_results} == {"other/bench", DATASET}
    assert len(merged.data.eval_results) == 1 + 2 * len(TASKS)


def test_push_to_a_repository_without_card(results, tmp_path, monkeypatch):
    from huggingface_hub.errors import EntryNotFoundError

    write_leaderboard_files(results, tmp_path, dataset_id=DATASET)
    real_load = ModelCard.load

    def load(repo_id_or_path, *args, **kwargs):
        if str(repo_id_or_path) == "org/new":
            raise EntryNotFoundError("no README.md")
        return real_load(repo_id_or_path, *args, **kwargs)

    monkeypatch.setattr(ModelCard, "load", staticmethod(load))
    hub = FakeHub()
    assert push_to_hub(tmp_path, "org/new", api=hub) == {"model": "https://huggingface.co/org/new/discussions/1"}
    card = ModelCard(hub.commits[0]["operations"][0].path_or_fileobj.decode())
    assert len(card.data.eval_results) == 2 * len(TASKS)


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


def test_default_dataset_id_is_one_place():
    assert leaderboard.DEFAULT_DATASET_ID.count("/") == 1
