"""One run per output folder (apibank.run_folder): a second run into a folder in use ends at once naming the
holder, a killed holder never blocks, and a folder of one kind of run refuses the others before any work.

The holder is another process that holds the lock as the commands do and says so on its stdout; the test
waits for that line, so no verdict depends on timing."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys

import pytest

from apibank.cli.main import main
from apibank.run_folder import LOCK_FILE, OWN_FILES, RUN_FILE, RUN_KINDS, folder_kind, hold
from support.paths import REPO

HOLD = """
import sys
from apibank.run_folder import hold
with hold(sys.argv[1], sys.argv[2], "apibank " + sys.argv[2] + " --model the-holder"):
    print("held", flush=True)
    sys.stdin.readline()
"""


class Holder:
    def __init__(self, folder, subcommand: str) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", HOLD, str(folder), subcommand], cwd=REPO,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout.readline().strip() == "held"  # blocks until the lock is held

    def release(self) -> None:
        self.process.communicate("\n", timeout=60)
        assert self.process.returncode == 0

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=60)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory, data_dir):
    pytest.importorskip("trl")
    from apibank.pipeline import load_rows
    from support.tiny import build_tiny_model

    rows = load_rows(None, data_dir, limit=1)
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model",
                            [row["instruction"] + row["input"] + row["expected_output"] for row in rows])


@pytest.fixture(scope="module")
def predictions(tmp_path_factory, data_dir):
    """A predictions file for ``apibank score`` (written by an oracle run)."""
    folder = tmp_path_factory.mktemp("oracle")
    assert main(["evaluate", "--model", "oracle", "--levels", "3", "--limit", "1", "--allow-subset",
                 "--data-dir", str(data_dir), "--output", str(folder), "--quiet", "--json"]) == 0
    return folder / "predictions.jsonl"


@pytest.fixture(scope="module")
def harness_run(tmp_path_factory, data_dir):
    """An lm-eval ``--output_path`` folder of one API-Bank sample (as ``--log_samples`` writes it), answered
    with the gold call."""
    from apibank.pipeline import load_rows

    row = next(row for row in load_rows(["level-1"], data_dir, limit=1) if row["kind"] == "api")
    folder = tmp_path_factory.mktemp("lm-eval") / "some__model"
    folder.mkdir()
    (folder / "results_2026-01-01T00-00-00.000001.json").write_text(
        json.dumps({"lm_eval_version": "0.4.13", "model_name": "some/model"}), encoding="utf-8")
    sample = {"doc_id": 0, "doc": {"id": row["id"], "reference": row["expected_output"], "level": 1, "kind": "api"},
              "resps": [[row["expected_output"]]], "arguments": {"gen_args_0": {"arg_0": "...", "arg_1": {}}}}
    (folder / "samples_apibank_level1_2026-01-01T00-00-00.000001.jsonl").write_text(json.dumps(sample) + "\n",
                                                                                   encoding="utf-8")
    return folder.parent


def _command(subcommand: str, output, data_dir, request) -> list[str]:
    """The cheapest run of ``subcommand`` into ``output``."""
    if subcommand == "import-harness":
        return ["import-harness", str(request.getfixturevalue("harness_run")), "--output", str(output),
                "--data-dir", str(data_dir), "--quiet"]
    if subcommand == "score":
        return ["score", str(request.getfixturevalue("predictions")), "--output", str(output),
                "--data-dir", str(data_dir), "--quiet", "--json"]
    if subcommand == "finetune":
        return ["finetune", "--model", str(request.getfixturevalue("tiny_model")), "--output", str(output),
                "--data-dir", str(data_dir), "--max-samples", "4", "--epochs", "1", "--batch-size", "2",
                "--gradient-accumulation", "1", "--lora-rank", "4"]
    return [subcommand, "--model", "oracle", "--levels", "3", "--limit", "1", "--data-dir", str(data_dir),
            "--output", str(output), "--quiet", "--json", *(["--allow-subset"] if subcommand == "evaluate" else [])]


def _written(folder) -> list[str]:
    return sorted(path.name for path in folder.iterdir() if path.name not in OWN_FILES)


@pytest.mark.parametrize("subcommand", sorted(RUN_KINDS))
def test_a_second_run_into_a_folder_in_use_ends_at_once_naming_the_holder(subcommand, data_dir, tmp_path, capsys,
                                                                          request):
    output = tmp_path / "out"
    argv = _command(subcommand, output, data_dir, request)
    capsys.readouterr()
    holder = Holder(output, subcommand)
    try:
        assert main(argv) == 2
        error = capsys.readouterr().err.strip()
        assert error.count("\n") == 0, error
        assert error.startswith(f"apibank {subcommand}: error: {output} is in use by another run: "
                                f"pid {holder.process.pid} on {socket.gethostname()} since ")
        assert f"(`apibank {subcommand} --model the-holder`); wait for it to end, or give another --output" in error
        assert _written(output) == []  # nothing was done
    finally:
        holder.release()
    if subcommand != "finetune":  # the holder gone, the same command runs
        assert main(argv) == 0
        record = json.loads((output / RUN_FILE).read_text())
        assert record["kind"] == RUN_KINDS[subcommand] and record["command"].startswith(f"apibank {subcommand} ")


def test_a_killed_holder_never_blocks(data_dir, tmp_path, capsys):
    output = tmp_path / "out"
    Holder(output, "agent").kill()  # SIGKILL: no chance to release anything
    assert (output / LOCK_FILE).exists()  # the file stays; the kernel's lock went with the process
    assert main(_command("agent", output, data_dir, None)) == 0
    assert "trajectories.jsonl" in _written(output)


OTHER_KINDS = [(held, subcommand) for held in sorted(set(RUN_KINDS.values())) for subcommand in sorted(RUN_KINDS)
               if RUN_KINDS[subcommand] != held]  # the same kind of run is a resume


@pytest.mark.parametrize("held, subcommand", OTHER_KINDS)
def test_a_folder_of_one_kind_of_run_refuses_the_others_before_any_work(held, subcommand, data_dir, tmp_path, capsys,
                                                                         request):
    output = tmp_path / "out"
    owner = next(name for name, kind in RUN_KINDS.items() if kind == held)
    Holder(output, owner).release()  # the folder records its kind of run
    assert folder_kind(output) == held
    argv = _command(subcommand, output, data_dir, request)
    capsys.readouterr()
    assert main(argv) == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and f"{output} holds " in error and "give another --output" in error, error
    assert _written(output) == []


@pytest.mark.parametrize("name, kind", [("predictions.jsonl", "classic"), ("details.jsonl", "classic"),
                                        ("trajectories.jsonl", "agentic"), ("finetune.json", "finetune")])
def test_a_folder_written_before_the_record_is_known_by_its_files(name, kind, tmp_path):
    (tmp_path / name).write_text("", encoding="utf-8")
    assert folder_kind(tmp_path) == kind


def test_an_agent_run_into_an_evaluate_folder_is_refused(data_dir, tmp_path, capsys):
    """The issue's case: both orders used to exit 0, leaving a folder that mixes two runs."""
    evaluated, agentic = tmp_path / "evaluated", tmp_path / "agentic"
    assert main(_command("evaluate", evaluated, data_dir, None)) == 0
    assert main(_command("agent", agentic, data_dir, None)) == 0
    capsys.readouterr()
    assert main(_command("agent", evaluated, data_dir, None)) == 2
    assert "holds a classic run (apibank evaluate, score or import-harness)" in capsys.readouterr().err
    assert main(_command("evaluate", agentic, data_dir, None)) == 2
    assert "holds an agentic run (apibank agent)" in capsys.readouterr().err
    assert not (evaluated / "trajectories.jsonl").exists() and not (agentic / "predictions.jsonl").exists()


@pytest.mark.parametrize("subcommand", sorted(RUN_KINDS))
@pytest.mark.parametrize("existed", [False, True])
def test_a_run_that_fails_before_writing_leaves_the_folder_as_it_found_it(subcommand, existed, tmp_path):
    output = tmp_path / "new" / "out"
    if existed:
        output.mkdir(parents=True)
    with pytest.raises(RuntimeError), hold(output, subcommand):
        raise RuntimeError("failed before any work")
    assert output.is_dir() if existed else not (tmp_path / "new").exists()
    assert existed is False or list(output.iterdir()) == []  # no lock, no record of a kind
    with pytest.raises(RuntimeError), hold(output, subcommand):  # one that wrote keeps its record and its lock
        (output / "partial.txt").write_text("", encoding="utf-8")
        raise RuntimeError("failed after writing")
    assert folder_kind(output) == RUN_KINDS[subcommand] and (output / LOCK_FILE).exists()


def test_a_failed_score_leaves_no_trace_and_an_agent_run_may_use_the_folder(data_dir, tmp_path, capsys):
    """The issue's case: a failed score left the lock and a classic record, and the agent run was refused."""
    output = tmp_path / "out"
    output.mkdir()
    bad = tmp_path / "predictions.jsonl"
    bad.write_text(json.dumps({"id": "nope", "prediction": "x"}) + "\n", encoding="utf-8")
    assert main(["score", str(bad), "--output", str(output), "--data-dir", str(data_dir), "--quiet"]) == 2
    assert "not an API-Bank row id" in capsys.readouterr().err
    assert list(output.iterdir()) == []
    assert main(_command("agent", output, data_dir, None)) == 0
    assert "trajectories.jsonl" in _written(output) and folder_kind(output) == "agentic"


def test_a_resume_refused_keeps_the_folder_as_it_was(data_dir, tmp_path, capsys, predictions):
    output = tmp_path / "out"
    output.mkdir()
    records = [json.loads(line) for line in predictions.read_text(encoding="utf-8").splitlines()]
    (output / "predictions.jsonl").write_text("".join(json.dumps({**record, "model": "another-model"}) + "\n"
                                                      for record in records), encoding="utf-8")
    assert main(_command("evaluate", output, data_dir, None)) == 2  # checked while the folder is held
    assert "holds predictions with model='another-model'" in capsys.readouterr().err
    assert sorted(path.name for path in output.iterdir()) == ["predictions.jsonl"]
