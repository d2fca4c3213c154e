"""The lighteval custom tasks (``--custom-tasks apibank.evals.lighteval``): lighteval reads the rows offline,
the metric's per-sample ``paper``/``corrected`` equal ``apibank score``'s verdicts on the same generations,
and ``apibank import-harness`` reads lighteval's details as saved by lighteval's own tracker."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

pytest.importorskip("lighteval", reason="the lighteval extra is not installed")

from apibank.cli.main import main  # noqa: E402
from apibank.data.rows import iter_rows  # noqa: E402
from apibank.evals.spec import DOC_FIELDS, LEVEL_TASK_NAMES  # noqa: E402
from apibank.generate.conversation import paper_text  # noqa: E402


@pytest.fixture(scope="module")
def module(data_dir, tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:  # the tasks read rows where the package does, cache in tmp
        patch.setenv("APIBANK_DATA_DIR", str(data_dir))
        patch.setenv("APIBANK_CACHE", str(tmp_path_factory.mktemp("cache")))
        import apibank.evals.lighteval.tasks as lighteval_tasks

        yield importlib.reload(lighteval_tasks)


def test_the_tasks_read_every_row_offline_through_lighteval(module, data_dir):
    from lighteval.tasks.lighteval_task import LightevalTask

    assert [config.name for config in module.TASKS_TABLE] == list(LEVEL_TASK_NAMES)
    task = LightevalTask(module.TASKS_TABLE[0])
    docs = task.eval_docs()
    rows = list(iter_rows("level-1", data_dir))
    assert len(docs) == len(rows)
    by_id = {row["id"]: row for row in rows}
    for doc in docs[:20]:
        row = by_id[doc.specific["id"]]
        assert doc.query == paper_text(row) and doc.choices == [row["expected_output"]]
        assert doc.specific["reference"] == row["reference"]


def _chosen(data_dir: Path) -> list[dict]:
    chosen = []
    for level in (1, 2, 3):
        rows = list(iter_rows(f"level-{level}", data_dir))
        for kind in ("api", "response"):
            chosen += [{key: row[key] for key in DOC_FIELDS} for row in rows if row["kind"] == kind][:4]
    return chosen


def _generation(rows: list[dict], index: int) -> str:
    row = rows[index]
    return (row["expected_output"], f"{row['expected_output']}\nUser: and then?", rows[(index + 3) % len(rows)]
            ["expected_output"], "I cannot help with that.")[index % 4]


def _details(folder: Path) -> dict[tuple[str, str], dict]:
    lines = (folder / "details.jsonl").read_text(encoding="utf-8").splitlines()
    return {(d["id"], d["protocol"]): d for d in map(json.loads, lines)}


def test_lighteval_samples_are_judged_as_apibank_score_and_import(module, data_dir, tmp_path):
    from dataclasses import asdict

    from datasets import Dataset
    from lighteval.logging.evaluation_tracker import EvaluationTracker
    from lighteval.models.model_output import ModelResponse

    from apibank.evals.samples import prediction_text

    rows = _chosen(data_dir)
    tracker = EvaluationTracker(output_dir=str(tmp_path / "lighteval"), save_details=True)
    tracker.general_config_logger.model_name = "given"
    logged = {}
    for index, row in enumerate(rows):
        doc = module.prompt(row, f"{LEVEL_TASK_NAMES[row['level'] - 1]}|0")
        response = ModelResponse(input=doc.query, text=[_generation(rows, index)])
        metrics = module.JUDGED.compute_sample(doc=doc, model_response=response)
        logged[row["id"]] = metrics
        # what DetailsLogger.log stores (log itself also hashes the query with xxhash, which xxhash 4 refuses for
        # a str: lighteval 0.13 cannot log details beside xxhash 4, see docs/lighteval.md)
        tracker.details_logger.details[doc.task_name].append(tracker.details_logger.Detail(doc, response, metrics))
    # the details datasets as EvaluationTracker.save builds them (save itself needs a model config), written by
    # lighteval's own writer
    details = {}
    for task_name, task_details in tracker.details_logger.details.items():
        dataset = Dataset.from_list([asdict(detail) for detail in task_details])
        details[task_name] = dataset.select_columns(sorted(c for c in dataset.column_names if c != "id"))
    tracker.save_details("2026-01-01T00-00-00.000001", details)

    predictions = tmp_path / "score" / "predictions.jsonl"
    predictions.parent.mkdir()
    predictions.write_text("".join(
        json.dumps({"id": row["id"], "prediction": prediction_text(_generation(rows, i), plain_text=True),
                    "model": "given"}) + "\n" for i, row in enumerate(rows)), encoding="utf-8")
    assert main(["score", str(predictions), "--data-dir", str(data_dir), "--quiet"]) == 0
    scored = _details(predictions.parent)
    right = 0
    for row in rows:
        for protocol in ("paper", "corrected"):
            detail = scored[(row["id"], protocol)]
            value = (1.0 if detail["verdict"] else 0.0) if detail["kind"] == "api" else float(detail["score"] or 0.0)
            assert logged[row["id"]][protocol] == value, (row["id"], protocol)
            right += bool(detail["verdict"])
    assert 0 < right < 2 * sum(row["kind"] == "api" for row in rows)

    run = tmp_path / "run"
    assert main(["import-harness", str(tmp_path / "lighteval"), "--data-dir", str(data_dir), "--output", str(run),
                 "--quiet"]) == 0
    imported = _details(run)
    assert imported.keys() == scored.keys()
    for key, detail in scored.items():
        assert (imported[key]["verdict"], imported[key]["score"]) == (detail["verdict"], detail["score"]), key


@pytest.mark.parametrize("recorded", ["none", "query", "system prompt and query", "chat template", "messages"])
def test_the_metric_cuts_as_the_prompt_reached_the_model(module, data_dir, recorded):
    """lighteval's transformers backend records no prompt (plain text unless a chat template); vLLM and the
    endpoints record the prompt they sent: plain text ends with the query, a chat template does not."""
    from lighteval.models.model_output import ModelResponse

    from apibank.evals.samples import judge_sample, prediction_text, sample_value

    row = next(row for row in iter_rows("level-1", data_dir) if row["kind"] == "api")
    doc = module.prompt({key: row[key] for key in DOC_FIELDS}, "apibank_level1|0")
    prompt = {"none": None, "query": doc.query, "system prompt and query": f"Be brief.\n\n{doc.query}",
              "chat template": f"<start_of_turn>user\n{doc.query}<end_of_turn>\n<start_of_turn>model\n",
              "messages": [{"role": "user", "content": doc.query}]}[recorded]
    generation = f"{row['expected_output']}\n\nAPI descriptions: {{}}"  # a base model writing on past its line
    plain = recorded in ("none", "query", "system prompt and query")
    assert prediction_text(generation, plain_text=True) != prediction_text(generation, plain_text=False)
    metrics = module.JUDGED.compute_sample(doc=doc, model_response=ModelResponse(input=prompt, text=[generation]))
    expected = judge_sample(prediction_text(generation, plain_text=plain), row["reference"])
    assert metrics == {protocol: sample_value(detail) for protocol, detail in expected.items()}


def test_the_entry_point_reads_only_the_custom_tasks():
    from apibank.evals.lighteval.__main__ import custom_task_configs

    assert list(custom_task_configs()) == list(LEVEL_TASK_NAMES)
    assert list(custom_task_configs("apibank.evals.lighteval")) == list(LEVEL_TASK_NAMES)


@pytest.mark.parametrize(("package", "found", "named"), [
    ("lighteval", "0.12.1", "need lighteval >=0.13,<0.14, found 0.12.1"),
    ("xxhash", "4.1.0", "xxhash 4.1.0 refuses"),
])
def test_the_entry_point_refuses_a_lighteval_it_cannot_run_in_one_line(package, found, named, monkeypatch, capsys):
    import importlib.metadata

    from apibank.evals.lighteval.__main__ import main as lighteval_main

    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda name: found if name == package else real(name))
    assert lighteval_main(["accelerate", "--help"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and named in error and "pip install 'apibank[lighteval]'" in error


def test_the_command_line_runs_offline_and_its_verdicts_are_apibank_scores(data_dir, tmp_path):
    """lighteval's own command line (``python -m apibank.evals.lighteval accelerate``), its network cut, with a
    tiny random model: the details it saves carry the metric's ``paper``/``corrected`` per sample, and
    ``apibank import-harness`` (``apibank score`` on the same generations) gives the same values."""
    import os
    import subprocess
    import sys

    import pyarrow.parquet as pq
    from support.paths import REPO
    from support.tiny import build_tiny_model

    from apibank.evals.samples import prediction_text

    rows = list(iter_rows("level-1", data_dir))[:40]
    model = build_tiny_model(tmp_path / "model", [row["instruction"] + row["input"] + row["expected_output"]
                                                  for row in rows])
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "APIBANK_DATA_DIR": str(data_dir),
           "APIBANK_CACHE": str(tmp_path / "cache"), "LOOKUP_LOG": str(tmp_path / "lookups.log"),
           "PYTHONPATH": os.pathsep.join([str(REPO / "tests" / "support" / "no_network"), str(REPO),
                                          os.environ.get("PYTHONPATH", "")])}
    out = tmp_path / "lighteval"
    model_files = sorted(path.relative_to(model) for path in model.rglob("*"))
    done = subprocess.run(
        [sys.executable, "-m", "apibank.evals.lighteval", "accelerate",
         (f"model_name={model},dtype=float32,batch_size=1,override_chat_template=False,"
          f"cache_dir={tmp_path / 'samples-cache'}"),
         "apibank_level1|0", "--custom-tasks", "apibank.evals.lighteval", "--max-samples", "3", "--save-details",
         "--output-dir", str(out)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    # lighteval's sample cache goes under cache_dir, never into the model folder it names by its path
    assert sorted(path.relative_to(model) for path in model.rglob("*")) == model_files
    assert list((tmp_path / "samples-cache").rglob("*.parquet"))

    (details,) = out.rglob("details_apibank_level1|0_*.parquet")
    logged = {row["doc"]["specific"]["id"]: row for row in pq.read_table(details).to_pylist()}
    assert len(logged) == 3
    assert all(row["model_response"]["input"] is None for row in logged.values())  # the backend records no prompt

    run = tmp_path / "run"
    assert main(["import-harness", str(out), "--data-dir", str(data_dir), "--output", str(run), "--quiet"]) == 0
    lines = (run / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    for record in map(json.loads, lines):  # the plain-text prompt's answer: its line, as `apibank evaluate` cuts it
        assert record["prediction"] == prediction_text(record["raw_output"], plain_text=True)
    imported = _details(run)
    assert {row_id for row_id, _ in imported} == set(logged)
    for (row_id, protocol), detail in imported.items():
        value = (1.0 if detail["verdict"] else 0.0) if detail["kind"] == "api" else float(detail["score"] or 0.0)
        assert logged[row_id]["metric"][protocol] == value, (row_id, protocol)
