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
        import apibank.evals.lighteval as lighteval_tasks

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
