"""The publishing policy of agentic results, the same as a classic run's: a result file only with
``--dataset-id``, never for a subset, never under a placeholder id, and only under task ids the
dataset's ``eval.yaml`` declares; pushes checked before any work and run against a local Hub stand-in."""

from __future__ import annotations

import datetime as _dt

import pytest
import yaml
from huggingface_hub import EvalResultEntry, parse_eval_result_entries
from support.hub_standin import HubStandIn, point_huggingface_hub_at

import apibank_cli
from apibank.hub.agentic import agentic_subset_reason
from apibank.hub.result_files import write_result_file
from apibank.hub.tasks import declared_task_ids

DATASET = "someone/API-Bank"
PLACEHOLDER = "apibank/API-Bank"  # what agentic runs used to file their results under


def _agent(data_dir, out, *extra):
    return apibank_cli.main(["agent", "--model", "oracle", "--levels", "level-3", "--data-dir", str(data_dir),
                             "--output", str(out), "--json", *extra])


def _result_files(out):
    return sorted(p.relative_to(out).as_posix() for p in out.rglob(".eval_results/*"))


def _no_placeholder(out):
    return all(PLACEHOLDER not in p.read_text("utf-8") for p in out.rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def full_run(data_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("agentic") / "full"
    assert _agent(data_dir, out, "--dataset-id", DATASET) == 0
    return out


def test_a_subset_writes_no_result_file_and_says_so(data_dir, tmp_path, capsys):
    out = tmp_path / "subset"
    assert _agent(data_dir, out, "--limit", "3", "--dataset-id", DATASET) == 0
    err = capsys.readouterr().err
    assert "--limit 3" in err and "subset" in err
    assert _result_files(out) == [] and not (out / "leaderboard/model").exists()
    assert (out / "leaderboard/dataset/eval.yaml").is_file() and _no_placeholder(out)


def test_without_a_dataset_id_no_result_file_and_no_placeholder(data_dir, tmp_path, capsys):
    out = tmp_path / "no-id"
    assert _agent(data_dir, out) == 0
    assert "--dataset-id" in capsys.readouterr().err
    assert _result_files(out) == [] and _no_placeholder(out)


def test_a_full_run_with_a_dataset_id_names_only_declared_tasks(full_run):
    assert _result_files(full_run) == ["leaderboard/model/.eval_results/api-bank-agentic-searcher.yaml"]
    declared = {task["id"] for task in yaml.safe_load((full_run / "leaderboard/dataset/eval.yaml").read_text())["tasks"]}
    entries = parse_eval_result_entries(
        yaml.safe_load((full_run / "leaderboard/model/.eval_results/api-bank-agentic-searcher.yaml").read_text()))
    assert [(e.dataset_id, e.task_id, e.value) for e in entries] == [(DATASET, "agentic-level-3-searcher", 100.0)]
    assert {e.task_id for e in entries} <= declared and _no_placeholder(full_run)


def test_a_later_subset_run_removes_the_stale_result_file(data_dir, tmp_path):
    out = tmp_path / "reused"
    assert _agent(data_dir, out, "--dataset-id", DATASET) == 0
    assert len(_result_files(out)) == 1
    assert _agent(data_dir, out, "--fresh", "--limit", "2", "--dataset-id", DATASET) == 0
    assert _result_files(out) == []


def test_subset_reasons():
    summary = {"episodes": 50, "runs": 50, "trials": 1}
    assert agentic_subset_reason({"limit": None, "levels": {"level-3": summary}}) is None
    assert "--limit 2" in agentic_subset_reason({"limit": 2, "levels": {"level-3": summary}})
    assert "49 episodes" in agentic_subset_reason({"limit": None, "levels": {"level-3": {**summary, "episodes": 49}}})
    assert "trials" in agentic_subset_reason({"limit": None, "levels": {"level-3": {**summary, "trials": 2}}})


@pytest.mark.parametrize("dataset_id, task_id, message", [
    (DATASET, "agentic-level-3-everything", "not declared in eval.yaml"),
    ("API-Bank", "agentic-level-3-searcher", "not a Hub id"),
])
def test_the_one_writer_refuses_undeclared_tasks_and_bad_ids(tmp_path, dataset_id, task_id, message):
    entry = EvalResultEntry(dataset_id=dataset_id, task_id=task_id, value=1.0,
                            date=_dt.datetime(2026, 1, 1, tzinfo=_dt.timezone.utc).isoformat())
    with pytest.raises(ValueError, match=message):
        write_result_file(tmp_path / "r.yaml", [entry])
    assert not (tmp_path / "r.yaml").exists()
    assert "agentic-level-3-searcher" in declared_task_ids()


# ---------------------------------------------------------------------------------------- push
@pytest.fixture
def hub(monkeypatch, tmp_path):
    with HubStandIn() as standin:
        point_huggingface_hub_at(standin, monkeypatch, tmp_path / "hub-cache")
        yield standin


@pytest.mark.parametrize("extra, message", [
    (["--limit", "3", "--push-to-hub", "org/model", "--dataset-id", DATASET], "never pushed"),
    (["--push-to-hub", "org/model"], "--dataset-id"),
    (["--push-to-hub", "--dataset-id", DATASET], "repository name"),
])
def test_agent_refuses_a_push_before_any_work(data_dir, tmp_path, extra, message, capsys):
    out = tmp_path / "out"
    assert _agent(data_dir, out, *extra) == 2
    error = capsys.readouterr().err
    assert message in error and len(error.strip().splitlines()) == 1
    assert not out.exists()


def test_agent_rejects_a_dataset_id_that_is_not_a_hub_id(data_dir, tmp_path, capsys):
    with pytest.raises(SystemExit) as caught:
        _agent(data_dir, tmp_path / "out", "--dataset-id", "not a hub id")
    assert caught.value.code == 2 and "not a Hub id" in capsys.readouterr().err


def test_agent_push_opens_a_pull_request_with_the_declared_task(data_dir, tmp_path, hub, capsys):
    benchmark = hub.add_repo("dataset", DATASET, {"eval.yaml": b"name: API-Bank\n"})
    hub.add_repo("model", "org/model")
    out = tmp_path / "pushed"
    assert _agent(data_dir, out, "--dataset-id", DATASET, "--push-to-hub", "org/model") == 0
    assert f"pull request (model): {hub.endpoint}/org/model/discussions/1" in capsys.readouterr().err
    pr = hub.repos[("model", "org/model")].pull_requests[0]
    assert sorted(pr["files"]) == [".eval_results/api-bank-agentic-searcher.yaml"]
    raw = yaml.safe_load(pr["files"][".eval_results/api-bank-agentic-searcher.yaml"])
    assert [(item["dataset"]["id"], item["dataset"]["task_id"], item["dataset"]["revision"]) for item in raw] == [
        (DATASET, "agentic-level-3-searcher", benchmark.sha)]
    assert raw == yaml.safe_load((out / "leaderboard/model/.eval_results/api-bank-agentic-searcher.yaml").read_text())
