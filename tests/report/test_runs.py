"""The run files compare and leaderboard read, checked against one schema (apibank.report.runs): a wrong type,
a file that is not UTF-8 or a duplicate is one line naming the file and the field, exit status 2, before any
figure is computed."""

from __future__ import annotations

import json
import shutil

import pytest

from apibank.cli.main import main
from apibank.report.runs import AGENTIC_RESULTS_SCHEMA, DETAIL_SCHEMA, RESULTS_SCHEMA, TRAJECTORY_SCHEMA, schema_problem


@pytest.fixture(scope="module")
def runs(tmp_path_factory, data_dir):
    root = tmp_path_factory.mktemp("runs")
    for kind, command in (("classic", ["evaluate", "--allow-subset"]), ("agentic", ["agent"])):
        assert main([*command, "--model", "oracle", "--levels", "3", "--limit", "4", "--data-dir", str(data_dir),
                     "--output", str(root / kind), "--quiet", "--json"]) == 0
    return root


def _edit_json(path, change):
    value = json.loads(path.read_text(encoding="utf-8"))
    change(value)
    path.write_text(json.dumps(value), encoding="utf-8")


def _edit_line(path, change, line: int = 2):
    lines = path.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[line - 1])
    change(record)
    lines[line - 1] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _set(*keys, value):
    def change(target):
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value
    return change


# (run, file, how it is damaged, what the line must say)
DAMAGE = [
    ("classic", "results.json", lambda p: _edit_json(p, _set("scores", "paper", "level-3", "api", "accuracy", value="1")),
     "results.json: `scores.paper.level-3.api.accuracy` is a string, expected a number"),
    ("classic", "results.json", lambda p: _edit_json(p, _set("model", value="oracle")),
     "results.json: `model` is a string, expected an object"),
    ("classic", "details.jsonl", lambda p: _edit_line(p, _set("score", value="0.5")),
     "details.jsonl:2: `score` is a string, expected a number"),
    ("classic", "details.jsonl", lambda p: _edit_line(p, _set("verdict", value="yes")),
     "details.jsonl:2: `verdict` is a string, expected true or false or an integer"),
    ("classic", "details.jsonl", lambda p: p.write_bytes(p.read_bytes().replace(b"level-3", b"level-\xe9", 1)),
     "details.jsonl:1: not UTF-8 text"),
    ("agentic", "results.json", lambda p: _edit_json(p, _set("trials", value="1")),
     "results.json: `trials` is a string, expected an integer"),
    ("agentic", "results.json", lambda p: _edit_json(p, _set("levels", "level-3", "ci95", "pass_k", value=[0, "1"])),
     "results.json: `levels.level-3.ci95.pass_k[1]` is a string, expected a number"),
    ("agentic", "trajectories.jsonl", lambda p: _edit_line(p, _set("trial", value="0")),
     "trajectories.jsonl:2: `trial` is a string, expected an integer"),
    ("agentic", "trajectories.jsonl", lambda p: _edit_line(p, _set("verdict", "rouge_l", value=[1])),
     "trajectories.jsonl:2: `verdict.rouge_l` is a list, expected a number"),
    ("agentic", "trajectories.jsonl", lambda p: p.write_text(p.read_text() + p.read_text().splitlines()[0] + "\n"),
     "trajectories.jsonl:5: duplicate"),
]


@pytest.mark.parametrize("command", ["compare", "leaderboard"])
@pytest.mark.parametrize("run, name, damage, said", DAMAGE, ids=[f"{d[1]}-{d[3].split(': ', 1)[1][:40]}" for d in DAMAGE])
def test_a_damaged_run_file_is_one_line_naming_file_and_field(command, run, name, damage, said, runs, tmp_path, capsys):
    damaged = tmp_path / "damaged"
    shutil.copytree(runs / run, damaged)
    damage(damaged / name)
    argv = [command, str(runs / run), str(damaged), "--output", str(tmp_path / "out")]
    capsys.readouterr()
    assert main(argv) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "Traceback" not in error, error
    assert error.startswith(f"apibank {command}: error: {damaged}/{said}"), error
    assert not (tmp_path / "out").exists()  # refused before anything was written


@pytest.mark.parametrize("kind", ["classic", "agentic"])
def test_the_runs_this_package_writes_follow_the_schema(kind, runs):
    results = json.loads((runs / kind / "results.json").read_text())
    assert schema_problem(results, RESULTS_SCHEMA) is None
    if kind == "agentic":
        assert schema_problem(results, AGENTIC_RESULTS_SCHEMA) is None
    name, schema = ("details.jsonl", DETAIL_SCHEMA) if kind == "classic" else ("trajectories.jsonl", TRAJECTORY_SCHEMA)
    records = [json.loads(line) for line in (runs / kind / name).read_text().splitlines()]
    assert records and all(schema_problem(record, schema) is None for record in records)
