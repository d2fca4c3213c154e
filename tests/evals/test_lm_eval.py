"""The lm-evaluation-harness tasks (``apibank_level1..3``) and ``apibank import-harness``: lm-eval's own
evaluator runs the tasks on real rows with given generations (a stand-in model, no weights), and each
logged sample's ``paper``/``corrected`` equals ``apibank score``'s verdict on the same generation, as does
the run folder that ``import-harness`` makes of lm-eval's output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from apibank.cli.main import main
from apibank.data.rows import iter_rows
from apibank.evals import lm_eval as tasks
from apibank.evals.samples import prediction_text
from apibank.generate.stops import LINE_STOPS, PAPER_STOPS

MAX_LINE = 300


def _yaml(path: Path) -> dict:
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: f"!function {loader.construct_scalar(node)}")
    return yaml.load(path.read_text(encoding="utf-8"), Loader=Loader)


def test_the_task_folder_holds_one_yaml_per_level_and_the_group():
    configs = {path.name: _yaml(path) for path in tasks.TASK_FOLDER.glob("*.yaml")}
    names = sorted(config["task"] for config in configs.values() if "task" in config and isinstance(config["task"], str))
    assert names == sorted(tasks.TASK_NAMES)
    (group,) = [config for config in configs.values() if "group" in config]
    assert group["group"] == tasks.GROUP_NAME and group["task"] == list(tasks.TASK_NAMES)
    for name in tasks.TASK_NAMES:
        config = configs[f"{name}.yaml"]
        assert config["metadata"]["level"] == int(name[-1])
        assert {m["metric"] for m in config["metric_list"]} >= {"paper", "corrected"}
        hooks = [value for value in config.values() if isinstance(value, str) and value.startswith("!function ")]
        assert hooks and all(value.split()[1].startswith("apibank.evals.lm_eval.task.") for value in hooks)


def test_the_main_module_prints_the_include_path(capsys):
    pytest.importorskip("lm_eval", reason="the lm-eval extra is not installed")
    from apibank.evals.lm_eval.__main__ import main as print_folder

    assert print_folder() == 0
    assert capsys.readouterr().out.strip() == str(tasks.TASK_FOLDER)


def test_an_unsupported_lm_eval_is_one_line(monkeypatch, capsys):
    import importlib.metadata

    from apibank.evals.lm_eval.__main__ import main as print_folder

    monkeypatch.setattr(tasks, "require_extra", lambda *args: None)
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "0.4.2")
    assert print_folder() == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "lm-eval >=0.4.13,<0.5, found 0.4.2" in err and "apibank[lm-eval]" in err


# ------------------------------------------------------------------------ lm-eval's evaluator, no model
def _generations(rows: list[dict]) -> dict[str, str]:
    """Per row: the gold answer, the gold answer as a transcript that goes on, another row's gold
    answer, or text that is no answer."""
    out = {}
    for index, row in enumerate(rows):
        other = rows[(index + 3) % len(rows)]["expected_output"]
        out[row["id"]] = (row["expected_output"], f"{row['expected_output']}\nUser: and then?", other,
                          "I cannot help with that.")[index % 4]
    return out


def _chosen(level: int, per_kind: int, data_dir: Path) -> tuple[list[int], list[dict]]:
    rows = list(iter_rows(f"level-{level}", data_dir))
    indices = [i for kind in ("api", "response") for i in [i for i, r in enumerate(rows) if r["kind"] == kind][:per_kind]]
    return indices, [rows[i] for i in indices]


@pytest.fixture(scope="module")
def lm_eval_run(data_dir, tmp_path_factory):
    """An lm-eval ``--output_path`` folder of the three tasks written by lm-eval's evaluator and tracker,
    the generations given by a stand-in model."""
    pytest.importorskip("lm_eval", reason="the lm-eval extra is not installed")
    from lm_eval import simple_evaluate
    from lm_eval.api.model import LM
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    chosen = {level: _chosen(level, 6, data_dir) for level in (1, 2, 3)}
    by_prompt: dict[str, str] = {}
    requests_seen: list[dict] = []
    from apibank.generate.conversation import paper_text

    for _, rows in chosen.values():
        generations = _generations(rows)
        by_prompt.update({paper_text(row): generations[row["id"]] for row in rows})

    class Given(LM):
        def generate_until(self, requests, disable_tqdm=False):
            requests_seen.extend(request.args[1] for request in requests)
            return [by_prompt[request.args[0]] for request in requests]

        def loglikelihood(self, requests, disable_tqdm=False):
            raise NotImplementedError

        def loglikelihood_rolling(self, requests, disable_tqdm=False):
            raise NotImplementedError

    out = tmp_path_factory.mktemp("lm-eval")
    tracker = EvaluationTracker(output_path=str(out))
    with pytest.MonkeyPatch.context() as patch:  # the tasks read rows and databases where the package does
        patch.setenv("APIBANK_DATA_DIR", str(data_dir))
        results = simple_evaluate(
            model=Given(), tasks=list(tasks.TASK_NAMES),
            samples={f"apibank_level{level}": indices for level, (indices, _) in chosen.items()},
            task_manager=TaskManager(include_path=str(tasks.TASK_FOLDER)), log_samples=True,
            evaluation_tracker=tracker, bootstrap_iters=0,
        )
    tracker.general_config_tracker.model_name = "given"
    tracker.general_config_tracker.model_name_sanitized = "given"
    samples = results.pop("samples")
    tracker.save_results_aggregated(results=results, samples=samples)
    for name in results["configs"]:
        tracker.save_results_samples(task_name=name, samples=samples[name])
    rows = [row for _, level_rows in chosen.values() for row in level_rows]
    return out, rows, samples, requests_seen, results


def _score_details(rows, generations, data_dir, tmp_path) -> dict[tuple[str, str], dict]:
    predictions = tmp_path / "score" / "predictions.jsonl"
    predictions.parent.mkdir()
    predictions.write_text("".join(json.dumps({"id": r["id"], "prediction": prediction_text(generations[r["id"]]),
                                               "model": "given"}) + "\n" for r in rows), encoding="utf-8")
    assert main(["score", str(predictions), "--data-dir", str(data_dir), "--quiet"]) == 0
    return _details(predictions.parent)


def _details(folder: Path) -> dict[tuple[str, str], dict]:
    lines = (folder / "details.jsonl").read_text(encoding="utf-8").splitlines()
    return {(d["id"], d["protocol"]): d for d in map(json.loads, lines)}


def _value(detail: dict) -> float:
    return (1.0 if detail["verdict"] else 0.0) if detail["kind"] == "api" else float(detail["score"] or 0.0)


def test_each_logged_sample_is_judged_as_apibank_score_judges_it(lm_eval_run, data_dir, tmp_path):
    _, rows, samples, requests_seen, _ = lm_eval_run
    generations = {}
    for level in (1, 2, 3):
        generations.update(_generations([row for row in rows if row["level"] == level]))
    scored = _score_details(rows, generations, data_dir, tmp_path)
    logged = [sample for name in tasks.TASK_NAMES for sample in samples[name]]
    assert sorted(s["doc"]["id"] for s in logged) == sorted(r["id"] for r in rows)
    kinds = {(s["doc"]["level"], s["doc"]["kind"]) for s in logged}
    assert kinds == {(level, kind) for level in (1, 2, 3) for kind in ("api", "response")}
    verdicts = {True: 0, False: 0}
    for sample in logged:
        for protocol in ("paper", "corrected"):
            detail = scored[(sample["doc"]["id"], protocol)]
            assert sample[protocol] == _value(detail), (sample["doc"]["id"], protocol)
            assert sample[f"{protocol}_{'api' if detail['kind'] == 'api' else 'rouge_l'}"] == sample[protocol]
            if detail["kind"] == "api":
                verdicts[bool(detail["verdict"])] += 1
    assert verdicts[True] and verdicts[False]  # right and wrong answers both judged
    # the package's stop strings (a plain-text prompt: the answer's line) and a budget per level and kind
    assert all(request["until"] == list(LINE_STOPS) and request["do_sample"] is False for request in requests_seen)
    assert len({request["max_gen_toks"] for request in requests_seen}) > 1


def test_import_harness_makes_a_run_folder_with_apibank_scores_verdicts(lm_eval_run, data_dir, tmp_path, capsys):
    out, rows, samples, _, _ = lm_eval_run
    generations = {s["doc"]["id"]: s["resps"][0][0] for name in tasks.TASK_NAMES for s in samples[name]}
    run = tmp_path / "run"
    assert main(["import-harness", str(out), "--data-dir", str(data_dir), "--output", str(run), "--quiet"]) == 0
    assert {"predictions.jsonl", "details.jsonl", "results.json"} <= {p.name for p in run.iterdir()}
    imported = _details(run)
    scored = _score_details(rows, generations, data_dir, tmp_path)
    assert imported.keys() == scored.keys()
    for key, detail in scored.items():
        assert (imported[key]["verdict"], imported[key]["score"], imported[key]["category"]) == (
            detail["verdict"], detail["score"], detail["category"]), key
    records = [json.loads(line) for line in (run / "predictions.jsonl").read_text().splitlines()]
    assert {r["model"] for r in records} == {"given"} and all(r["engine"]["harness"].startswith("lm-eval ") for r in records)
    results = json.loads((run / "results.json").read_text())
    assert results["scores"]["corrected"]["level-3"]["api"]["total"] == 6
    # the run ranks in the leaderboard beside itself scored by apibank score
    capsys.readouterr()
    assert main(["leaderboard", str(run), str(tmp_path / "score"), "--output", str(tmp_path / "board")]) == 0
    assert (tmp_path / "board" / "leaderboard.json").is_file()


# ------------------------------------------------------------------------ bad input: one line, exit 2
def _write_run(folder: Path, task: str, version: str = "0.4.13", doc: dict | None = None) -> Path:
    model = folder / "some__model"
    model.mkdir(parents=True)
    (model / "results_2026-01-01T00-00-00.000001.json").write_text(
        json.dumps({"lm_eval_version": version, "model_name": "some/model"}), encoding="utf-8")
    sample = {"doc_id": 0, "doc": doc if doc is not None else {"question": "2+2?"}, "resps": [["4"]],
              "arguments": {"gen_args_0": {"arg_0": "2+2?", "arg_1": {"until": ["\n"]}}}}
    (model / f"samples_{task}_2026-01-01T00-00-00.000001.jsonl").write_text(json.dumps(sample) + "\n", encoding="utf-8")
    return folder


def _error(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if ": note: " not in line]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("apibank import-harness: error: ") and len(lines[0]) <= MAX_LINE, lines[0]
    return lines[0]


@pytest.mark.parametrize("make, expected", [
    (lambda p: _write_run(p, "gsm8k"), "samples of gsm8k, not API-Bank tasks"),
    (lambda p: _write_run(p, "apibank_level1", version="0.4.2"), "written by lm-eval 0.4.2"),
    (lambda p: _write_run(p, "apibank_level1"), "without an API-Bank document"),
    (lambda p: p, "no lm-eval samples_<task>_<time>.jsonl files"),
    (lambda p: p / "absent", "not a folder"),
])
def test_import_harness_refuses_what_is_no_apibank_lm_eval_run(make, expected, tmp_path, capsys):
    path = make(tmp_path / "in")
    (tmp_path / "in").mkdir(exist_ok=True)
    assert main(["import-harness", str(path), "--output", str(tmp_path / "run")]) == 2
    assert expected in _error(capsys)
    assert not (tmp_path / "run").exists()


def test_an_lm_eval_cut_is_the_package_cut_on_a_plain_text_prompt():
    """lm-eval cuts at the first stop string anywhere; the package after the answer's opening label:
    the same text unless the completion opens with a stop string (then lm-eval's answer is empty)."""
    pytest.importorskip("lm_eval", reason="the lm-eval extra is not installed")
    from lm_eval.models.utils import postprocess_generated_text
    from apibank.generate.stops import answer_text

    for completion in ("API-Request: [A(x=1)]\nUser: hi", "API-Request: [A()]->{'ok': 1}", "  AI: fine\nmore"):
        lm_eval_text = postprocess_generated_text(completion, list(LINE_STOPS), None)
        assert prediction_text(lm_eval_text) == answer_text(completion, LINE_STOPS)
    assert prediction_text(postprocess_generated_text("\nAPI-Request: [A()]", list(LINE_STOPS), None)) == ""
    assert answer_text("\nAPI-Request: [A()]", LINE_STOPS) == "API-Request: [A()]"
    assert PAPER_STOPS[0].startswith("\n")
