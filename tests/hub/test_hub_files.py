"""The Hub files, checked against the Hub's documentation and with huggingface_hub's own parsers, and
the pushes (results, per-sample details, dataset) against a local stand-in of the Hub API.

Documentation the checks follow: hub-docs ``docs/hub/eval-results.md`` (eval.yaml specification,
``.eval_results/*.yaml`` fields), ``eval_results.yaml``, ``modelcard.md`` (``metrics[].args``).
"""

from __future__ import annotations

import json
from pathlib import Path

import huggingface_hub
import pytest
import yaml
from huggingface_hub import EvalResult, ModelCard, parse_eval_result_entries
from huggingface_hub.repocard_data import model_index_to_eval_results
from support.hub_standin import HubStandIn, point_huggingface_hub_at

import apibank_cli
from apibank.hub import leaderboard, tasks
from apibank.hub.details import default_details_repo, details_rows, write_details_dataset
from apibank.hub.ids import HubIdError, check_repo_id
from apibank.hub.leaderboard import eval_result_entries, variant_file, write_leaderboard_files
from apibank.hub.result_files import SubsetRun
from apibank.hub.tasks import AGENTIC_TASKS, FULL_COUNTS, TASKS, eval_yaml

DATASET = "someone/API-Bank"
UPSTREAM_COMMIT = "5d5a2d40b2e6b6998a06961cc43ad0a8c069b153"


def _cell(correct, total):
    return {"correct": correct, "total": total, "accuracy": correct / total}


def _results(fmt="paper", limit=None, icl=False):
    def level(api, response_rouge, dialogues=None, name="level-1"):
        block = {"api": _cell(api, FULL_COUNTS[name]["api"]),
                 "response": {"rouge_l": response_rouge, "count": FULL_COUNTS[name]["response"]}}
        if dialogues is not None:
            block["dialogues"] = _cell(dialogues, 50)
        return block

    paper = {"level-1": level(347, 0.5, name="level-1"), "level-2": level(94, 0.4, name="level-2"),
             "level-3": level(230, 0.3, 40, name="level-3")}
    corrected = {"level-1": level(399, 0.5, name="level-1"), "level-2": level(135, 0.4, name="level-2"),
                 "level-3": level(245, 0.3, 50, name="level-3")}
    return {
        "model": {"id": "org/model", "revision": "abc", "backend": "transformers", "dtype": "bfloat16"},
        "format": fmt, "icl": icl, "limit": limit, "date": "2026-12-02T18:00:00+00:00",
        "counts": {name: dict(cell) for name, cell in FULL_COUNTS.items()},
        "dataset": {"id": DATASET, "revision": UPSTREAM_COMMIT, "split": "test"},
        "scores": {"paper": paper, "corrected": corrected},
    }


def _documented_entry(item):
    """The required fields of an ``.eval_results`` entry (eval-results.md) and nothing undocumented."""
    assert set(item) <= {"dataset", "value", "verifyToken", "date", "source", "notes"}
    assert set(item["dataset"]) <= {"id", "task_id", "revision"}
    assert item["dataset"]["id"] and item["dataset"]["task_id"] and "value" in item
    assert isinstance(item["value"], (int, float))
    if "source" in item:
        assert item["source"]["url"] and set(item["source"]) <= {"url", "name", "user", "org"}


# ---------------------------------------------------------------------------------------- eval.yaml
def test_eval_yaml_has_the_documented_fields_only():
    spec = eval_yaml()
    assert set(spec) == {"name", "description", "tasks"}  # no evaluation_framework: see test_hub_registration
    ids = [task["id"] for task in spec["tasks"]]
    # every task a result file can name: the classic ones, then the agentic ones
    assert ids == list(TASKS) + list(AGENTIC_TASKS) and len(set(ids)) == len(ids)
    for task in spec["tasks"]:
        assert set(task) == {"id", "config", "split"}
        assert task["config"] in FULL_COUNTS and task["split"] == "test"


def test_eval_yaml_is_plain_yaml(tmp_path):
    text = tasks.write_eval_yaml(tmp_path).read_text()
    assert "&id" not in text and "*id" not in text  # no anchors/aliases for the Hub's validator
    assert yaml.safe_load(text) == eval_yaml()


# ---------------------------------------------------------------------------------------- variants
def test_one_file_per_protocol_the_default_without_notes(tmp_path):
    paths = write_leaderboard_files(_results(), tmp_path, dataset_id=DATASET)
    files = sorted(p.name for p in (tmp_path / "model/.eval_results").iterdir())
    assert files == ["api-bank-corrected.yaml", "api-bank.yaml"]
    task_ids = {task["id"] for task in yaml.safe_load(paths["eval_yaml"].read_text())["tasks"]}
    for protocol in ("paper", "corrected"):
        raw = yaml.safe_load(paths[f"eval_results:{protocol}"].read_text())
        for item in raw:
            _documented_entry(item)
            assert "revision" not in item["dataset"] and "source" not in item  # unknown: not written
        entries = parse_eval_result_entries(raw)
        assert [e.task_id for e in entries] == list(TASKS) and {e.task_id for e in entries} <= task_ids
        assert {e.dataset_id for e in entries} == {DATASET}
        notes = {e.notes for e in entries}
        assert notes == ({None} if protocol == "paper" else {"corrected protocol (the original evaluators' judging "
                                                             "bugs fixed); paper prompt format"})
    values = {e.task_id: e.value for e in parse_eval_result_entries(yaml.safe_load(paths["eval_results:paper"].read_text()))}
    assert values["level-1-api"] == 86.97 and values["level-3-dialogue"] == 80.0 and values["level-1-response"] == 0.5


def test_other_formats_never_overwrite_the_paper_files(tmp_path):
    write_leaderboard_files(_results(), tmp_path / "paper", dataset_id=DATASET)
    write_leaderboard_files(_results("tools"), tmp_path / "tools", dataset_id=DATASET)
    write_leaderboard_files(_results("paper", icl=True), tmp_path / "icl", dataset_id=DATASET)
    names = {run: sorted(p.name for p in (tmp_path / run / "model/.eval_results").iterdir())
             for run in ("paper", "tools", "icl")}
    assert names["tools"] == ["api-bank-corrected-tools.yaml", "api-bank-tools.yaml"]
    assert names["icl"] == ["api-bank-corrected-paper-icl.yaml", "api-bank-paper-icl.yaml"]
    assert len({name for files in names.values() for name in files}) == 6
    entries = parse_eval_result_entries(yaml.safe_load((tmp_path / "tools/model/.eval_results/api-bank-tools.yaml").read_text()))
    assert {e.notes for e in entries} == {"paper protocol; tools prompt format"}
    assert variant_file("paper", "paper") == ".eval_results/api-bank.yaml"


def test_model_index_puts_protocol_in_args_and_units_in_names(tmp_path):
    paths = write_leaderboard_files(_results("chat"), tmp_path, dataset_id=DATASET, dataset_revision="f00d")
    card = ModelCard.load(paths["model_card"])
    parsed = card.data.eval_results
    assert all(isinstance(r, EvalResult) for r in parsed) and len(parsed) == 2 * len(TASKS)
    raw = yaml.safe_load(paths["model_card"].read_text().split("---")[1])
    name, results = model_index_to_eval_results(raw["model-index"])
    assert name == "org/model" and len(results) == len(parsed)
    for result in parsed:
        assert result.metric_config is None  # config is a load_metric() configuration (modelcard.md)
        assert result.metric_args["protocol"] in ("paper", "corrected") and result.metric_args["format"] == "chat"
        assert result.dataset_type == DATASET and result.dataset_revision == "f00d" and result.dataset_split == "test"
        unit = "(%)" if result.metric_type == "accuracy" else "(0-1)"
        assert unit in result.metric_name and result.metric_args["protocol"] in result.metric_name
        if result.metric_type == "rouge":
            assert 0 <= result.metric_value <= 1
    by_name = {r.metric_name: r.metric_value for r in parsed}
    assert by_name["Level-1 API call accuracy (%), paper protocol, chat prompts"] == 86.97
    assert by_name["Level-3 dialogue accuracy (%), corrected protocol, chat prompts"] == 100.0
    assert by_name["Level-2 response ROUGE-L (0-1), paper protocol, chat prompts"] == 0.4


@pytest.mark.parametrize("change", ["limit", "counts"])
def test_subsets_never_go_under_the_official_task_ids(tmp_path, change):
    results = _results()
    if change == "limit":
        results["limit"] = 5
    else:
        results["counts"]["level-2"]["api"] = 10
    write_leaderboard_files(_results(), tmp_path, dataset_id=DATASET)  # stale files of a full run
    paths = write_leaderboard_files(results, tmp_path, dataset_id=DATASET)
    assert set(paths) == {"eval_yaml"}
    assert not list((tmp_path / "model").rglob("*.yaml")) and not (tmp_path / "model/README.md").exists()
    with pytest.raises(SubsetRun):
        eval_result_entries(results, dataset_id=DATASET)
    assert "subset" in leaderboard.leaderboard_note(results, DATASET)


def test_a_level_scored_in_full_is_written_alone(tmp_path):
    results = _results()
    for protocol in ("paper", "corrected"):
        del results["scores"][protocol]["level-1"], results["scores"][protocol]["level-2"]
    results["counts"] = {"level-3": dict(FULL_COUNTS["level-3"])}
    paths = write_leaderboard_files(results, tmp_path, dataset_id=DATASET)
    entries = parse_eval_result_entries(yaml.safe_load(paths["eval_results:paper"].read_text()))
    assert [e.task_id for e in entries] == ["level-3-api", "level-3-dialogue", "level-3-response"]


def test_no_dataset_id_no_model_files_and_no_placeholder(tmp_path):
    paths = write_leaderboard_files(_results(), tmp_path, dataset_id=None)
    assert set(paths) == {"eval_yaml"}
    assert "--dataset-id" in leaderboard.leaderboard_note(_results(), None)
    assert not hasattr(leaderboard, "DEFAULT_DATASET_ID")
    source = "\n".join(p.read_text() for p in Path(leaderboard.__file__).parent.glob("*.py"))
    assert "apibank/API-Bank" not in source


@pytest.mark.parametrize("bad", ["", "API-Bank", "a/b/c", "ns/", "/name", "ns/na me", "ns/-name", "ns/name.git",
                                 "ns/na--me", "ns/" + "x" * 97])
def test_hub_ids_are_checked(bad):
    with pytest.raises(HubIdError):
        check_repo_id(bad, "--dataset-id")


def test_good_hub_ids_pass_and_details_repo_names_stay_valid():
    assert check_repo_id("someone/API-Bank_v1.2") == "someone/API-Bank_v1.2"
    assert default_details_repo("org/model") == "org/model-apibank-details"
    long_name = default_details_repo("org/" + "m" * 96)
    assert check_repo_id(long_name) == long_name


# ---------------------------------------------------------------------------------------- CLI and push
@pytest.fixture
def hub(monkeypatch, tmp_path):
    with HubStandIn() as standin:
        point_huggingface_hub_at(standin, monkeypatch, tmp_path / "hub-cache")
        yield standin


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--push-to-hub", "org/model"], "--dataset-id"),
        (["--limit", "2", "--allow-subset", "--push-to-hub", "org/model", "--dataset-id", DATASET], "never pushed"),
        (["--push-to-hub", "--dataset-id", DATASET], "repository name"),
        (["--push-eval-yaml", DATASET], "--push-to-hub"),
    ],
)
def test_evaluate_refuses_before_any_work(data_dir, tmp_path, extra, message, capsys):
    status = apibank_cli.main(["evaluate", "--model", "oracle", "--data-dir", str(data_dir), "--output",
                               str(tmp_path / "out"), "--quiet", *extra])
    error = capsys.readouterr().err
    assert status == 2 and message in error and len(error.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("flag", ["--dataset-id", "--details-repo", "--push-eval-yaml"])
def test_evaluate_rejects_ids_that_are_not_hub_ids(data_dir, tmp_path, flag, capsys):
    with pytest.raises(SystemExit) as caught:
        apibank_cli.main(["evaluate", "--model", "oracle", "--data-dir", str(data_dir), "--output",
                          str(tmp_path / "out"), flag, "not a hub id"])
    assert caught.value.code == 2 and "not a Hub id" in capsys.readouterr().err


def test_subset_run_without_allow_subset_runs_warns_and_writes_no_model_files(data_dir, tmp_path, capsys):
    out = tmp_path / "subset"
    assert apibank_cli.main(["evaluate", "--model", "oracle", "--data-dir", str(data_dir), "--output", str(out),
                             "--levels", "1", "--limit", "3", "--dataset-id", DATASET, "--quiet"]) == 0
    captured = capsys.readouterr()
    assert "never written or pushed under the official task ids" in captured.err
    assert json.loads((out / "results.json").read_text())["subset"] is True
    assert not (out / "leaderboard/model").exists()


def test_subset_run_with_allow_subset_writes_no_model_files(data_dir, tmp_path, capsys):
    out = tmp_path / "subset"
    assert apibank_cli.main(["evaluate", "--model", "oracle", "--data-dir", str(data_dir), "--output", str(out),
                             "--levels", "1", "--limit", "3", "--allow-subset", "--dataset-id", DATASET,
                             "--quiet"]) == 0
    assert "never written under the official task ids" in capsys.readouterr().out
    assert (out / "leaderboard/dataset/eval.yaml").is_file() and not (out / "leaderboard/model").exists()


def test_push_uploads_details_and_links_them(data_dir, tmp_path, hub, capsys):
    benchmark = hub.add_repo("dataset", DATASET, {"eval.yaml": b"name: API-Bank\n"})
    card = ("---\nlicense: mit\nmodel-index:\n- name: org/model\n  results:\n  - task:\n      type: text-generation\n"
            "    dataset:\n      name: Other\n      type: other/bench\n    metrics:\n    - type: accuracy\n"
            "      value: 12.5\n---\n\n# Model\n")
    hub.add_repo("model", "org/model", {"README.md": card.encode()})
    out = tmp_path / "pushed"
    assert apibank_cli.main(["evaluate", "--model", "oracle", "--levels", "3", "--data-dir", str(data_dir),
                             "--output", str(out), "--dataset-id", DATASET, "--push-to-hub", "org/model",
                             "--push-eval-yaml", DATASET, "--quiet"]) == 0
    printed = capsys.readouterr().out
    details_url = f"{hub.endpoint}/datasets/org/model-apibank-details"
    assert f"per-sample details: {details_url}" in printed
    assert f"pull request (model): {hub.endpoint}/org/model/discussions/1" in printed

    # The details dataset: one Parquet config per protocol, a card with configs, results.json.
    details = hub.repos[("dataset", "org/model-apibank-details")].files
    assert {"README.md", "results.json", "paper/test-00000-of-00001.parquet",
            "corrected/test-00000-of-00001.parquet"} <= set(details)
    details_card = huggingface_hub.DatasetCard(details["README.md"].decode())
    assert {c["config_name"] for c in details_card.data.configs} == {"paper", "corrected"}
    import datasets

    local = tmp_path / "downloaded"
    for name, data in details.items():
        (local / name).parent.mkdir(parents=True, exist_ok=True)
        (local / name).write_bytes(data)
    rows = datasets.load_dataset(str(local), "paper", split="test")
    assert rows.num_rows == 295 and isinstance(rows.features["arguments"], datasets.Json)
    first = rows[0]
    assert first["verdict"] is True and isinstance(first["arguments"], dict) and first["prompt"]
    assert sum(1 for v in rows["verdict"] if v) == 230  # the paper protocol's level-3 ceiling

    # The pull request: merged card, one result file per protocol, source and Hub revision.
    pr = hub.repos[("model", "org/model")].pull_requests[0]
    assert sorted(pr["files"]) == [".eval_results/api-bank-corrected.yaml", ".eval_results/api-bank.yaml", "README.md"]
    for name in (".eval_results/api-bank.yaml", ".eval_results/api-bank-corrected.yaml"):
        raw = yaml.safe_load(pr["files"][name])
        for item in raw:
            _documented_entry(item)
            assert item["source"] == {"url": details_url, "name": "API-Bank per-sample details", "user": "org"}
            assert item["dataset"]["revision"] == benchmark.sha != UPSTREAM_COMMIT
        assert [e.task_id for e in parse_eval_result_entries(raw)] == ["level-3-api", "level-3-dialogue",
                                                                       "level-3-response"]
    merged = ModelCard(pr["files"]["README.md"].decode())
    assert merged.data.license == "mit" and "# Model" in merged.text
    ours = [r for r in merged.data.eval_results if r.dataset_type == DATASET]
    assert len(ours) == 6 and {r.source_url for r in ours} == {details_url}
    assert {r.dataset_revision for r in ours} == {benchmark.sha}
    assert {r.dataset_type for r in merged.data.eval_results} == {"other/bench", DATASET}
    eval_pr = hub.repos[("dataset", DATASET)].pull_requests[0]
    assert yaml.safe_load(eval_pr["files"]["eval.yaml"]) == eval_yaml()
    # The local files now say the same as what was pushed.
    local_entries = yaml.safe_load((out / "leaderboard/model/.eval_results/api-bank.yaml").read_text())
    assert local_entries == yaml.safe_load(pr["files"][".eval_results/api-bank.yaml"])


def test_push_to_a_model_without_card_and_unknown_benchmark_revision(data_dir, tmp_path, hub, capsys):
    hub.add_repo("model", "org/new")  # a model repository without a card
    out = tmp_path / "new"
    assert apibank_cli.main(["evaluate", "--model", "oracle", "--levels", "3", "--data-dir", str(data_dir),
                             "--output", str(out), "--dataset-id", DATASET, "--push-to-hub", "org/new",
                             "--details-repo", "org/new-traces", "--quiet"]) == 0
    assert "benchmark dataset revision: unknown" in capsys.readouterr().out
    pr_files = hub.repos[("model", "org/new")].pull_requests[0]["files"]
    card = ModelCard(pr_files["README.md"].decode())
    assert len(card.data.eval_results) == 6
    raw = yaml.safe_load(pr_files[".eval_results/api-bank.yaml"])
    assert all("revision" not in item["dataset"] for item in raw)
    assert {item["source"]["url"] for item in raw} == {f"{hub.endpoint}/datasets/org/new-traces"}


def test_details_rows_join_predictions_and_verdicts(data_dir, tmp_path):
    out = tmp_path / "run"
    assert apibank_cli.main(["evaluate", "--model", "oracle", "--levels", "2", "--data-dir", str(data_dir),
                             "--output", str(out), "--quiet"]) == 0
    rows = details_rows(out)
    assert set(rows) == {"paper", "corrected"} and len(rows["paper"]) == 238
    assert sum(bool(r["verdict"]) for r in rows["paper"] if r["kind"] == "api") == 94
    assert sum(bool(r["verdict"]) for r in rows["corrected"] if r["kind"] == "api") == 135
    folder = write_details_dataset(out, DATASET)
    assert json.loads((folder / "results.json").read_text())["counts"]["level-2"] == FULL_COUNTS["level-2"]


def test_a_second_format_replaces_only_its_own_model_index_entries(tmp_path, hub):
    from huggingface_hub import HfApi

    from apibank.hub.push import push_to_hub

    repo = hub.add_repo("model", "org/model", {"README.md": b"---\nlicense: mit\n---\n\n# Model\n"})
    api = HfApi(endpoint=hub.endpoint, token="hf_standin_token")
    for run, fmt in (("paper", "paper"), ("tools", "tools"), ("tools-again", "tools")):
        write_leaderboard_files(_results(fmt), tmp_path / run, dataset_id=DATASET)
        push_to_hub(tmp_path / run, "org/model", dataset_id=DATASET, api=api)
        hub.add_repo("model", "org/model", repo.pull_requests[-1]["files"])  # the pull request is merged
    card = ModelCard(repo.files["README.md"].decode())
    formats = [r.metric_args["format"] for r in card.data.eval_results]
    assert formats.count("paper") == formats.count("tools") == 2 * len(TASKS)
    assert card.data.license == "mit"
    assert sorted(name for name in repo.files if name.startswith(".eval_results/")) == [
        ".eval_results/api-bank-corrected-tools.yaml", ".eval_results/api-bank-corrected.yaml",
        ".eval_results/api-bank-tools.yaml", ".eval_results/api-bank.yaml"]
