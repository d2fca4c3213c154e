"""Faults a run meets, end to end through the console script: a kill in the middle of writing a line, SIGTERM,
a full disk, a damaged log. Each run must lose nothing but the work in flight, say so in one line, and resume.

The faults are placed, not timed: a run in a child process is killed, or waits for a signal, at a chosen write
of its log (the child tells the test when it waits); the full disk is a real tmpfs of 64 KiB, which only root
can mount (the test is skipped, with the reason, elsewhere)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from apibank.cli.main import main
from apibank.files import read_trajectories
from apibank.generate.predictions import read_predictions
from support.paths import REPO, whole_message

# Runs ``apibank ARGS`` with the LOG file's N-th write changed: "kill" writes half of its first line and
# SIGKILLs the process; "wait" prints "waiting" and waits on stdin (for a signal) before writing.
DRIVER = """
import os, signal, sys
from apibank import files

log, nth, action, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
real = files.JsonLinesAppender.write
writes = []

def write(self, records, *, sync=True):
    records = list(records)
    if self.path.name == log:
        writes.append(len(records))
        if len(writes) == nth and action == "kill":
            line = files.json_line(records[0]).encode()
            with open(self.path, "ab") as handle:
                handle.write(line[: len(line) // 2])
            os.kill(os.getpid(), signal.SIGKILL)
        if len(writes) == nth and action == "wait":
            print("waiting", flush=True)
            sys.stdin.readline()
    return real(self, records, sync=sync)

files.JsonLinesAppender.write = write
from apibank.cli.main import main
sys.exit(main(argv))
"""

RUNS = {
    "evaluate": ("predictions.jsonl", ["evaluate", "--model", "oracle", "--levels", "3", "--limit", "6",
                                       "--allow-subset", "--batch-size", "4"]),
    "agent": ("trajectories.jsonl", ["agent", "--model", "oracle", "--levels", "3", "--limit", "6",
                                     "--batch-size", "2"]),
}


def _argv(kind: str, output, data_dir) -> list[str]:
    return [*RUNS[kind][1], "--data-dir", str(data_dir), "--output", str(output), "--quiet", "--json"]


def _child(kind: str, output, data_dir, nth: int, action: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", DRIVER, RUNS[kind][0], str(nth), action,
                             *_argv(kind, output, data_dir)], cwd=REPO, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _content(kind: str, output) -> list[dict]:
    """The log's records without their timings, in a stable order."""
    if kind == "evaluate":
        records = read_predictions(output / RUNS[kind][0])
        return sorted(({"id": r["id"], "prediction": r["prediction"], "prompt": r["prompt"]} for r in records),
                      key=lambda r: r["id"])
    records = read_trajectories(output / RUNS[kind][0])
    return [{k: v for k, v in r.items() if k not in ("seconds", "model_seconds")} for r in records]


@pytest.fixture(scope="module")
def whole(tmp_path_factory, data_dir):
    """Each kind of run, uninterrupted: what every interrupted and resumed run must end with."""
    runs = {}
    for kind in RUNS:
        output = tmp_path_factory.mktemp(kind)
        assert main(_argv(kind, output, data_dir)) == 0
        runs[kind] = _content(kind, output)
    return runs


@pytest.mark.parametrize("kind", sorted(RUNS))
def test_a_run_killed_in_the_middle_of_a_line_resumes_and_ends_as_a_whole_run(kind, whole, data_dir, tmp_path,
                                                                              capsys):
    output = tmp_path / "run"
    child = _child(kind, output, data_dir, nth=3, action="kill")
    child.communicate(timeout=600)
    assert child.returncode == -signal.SIGKILL
    log = output / RUNS[kind][0]
    assert not log.read_bytes().endswith(b"\n")  # a torn last line, as a kill leaves it
    whole_lines = log.read_bytes().count(b"\n")
    capsys.readouterr()
    assert main(_argv(kind, output, data_dir)) == 0
    assert f"resuming: {whole_lines} " in capsys.readouterr().err
    assert _content(kind, output) == whole[kind]


def test_sigterm_is_ctrl_c_the_work_done_is_saved_and_the_status_is_143(whole, data_dir, tmp_path, capsys):
    output = tmp_path / "run"
    child = _child("agent", output, data_dir, nth=3, action="wait")
    assert child.stdout.readline().strip() == "waiting"  # two episodes written, the third about to be
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=600)
    assert child.returncode == 143
    log = output / "trajectories.jsonl"
    assert (f"apibank agent: terminated (SIGTERM); 2 episodes are saved in {log} (2 by this run); only the episodes "
            "running are lost. Run the same command again to resume where it stopped.") in err
    assert "Traceback" not in err
    assert len(read_trajectories(log)) == 2
    capsys.readouterr()
    assert main(_argv("agent", output, data_dir)) == 0
    assert "resuming: 2 episodes" in capsys.readouterr().err
    assert _content("agent", output) == whole["agent"]


def test_sigterm_in_process_gives_evaluate_the_same_message_and_143(data_dir, tmp_path, capsys, monkeypatch):
    from apibank.generate.backends.base import Completion, OracleBackend

    def generate(self, conversations, prompts, settings, on_completion=None):
        completions = [Completion(text=c.gold, raw=c.gold) for c in conversations]
        for index, completion in enumerate(completions):
            if index == 3:
                signal.raise_signal(signal.SIGTERM)  # handled before raise_signal returns
            on_completion(index, completion)
        return completions

    output = tmp_path / "run"
    monkeypatch.setattr(OracleBackend, "generate", generate)
    assert main(_argv("evaluate", output, data_dir)) == 143
    err = capsys.readouterr().err
    assert f"terminated (SIGTERM); 3 predictions are saved in {output / 'predictions.jsonl'} (3 by this run)" in err
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the console script gives the handler back


@pytest.fixture
def small_disk(tmp_path):
    """A 64 KiB tmpfs: a real full disk (ENOSPC) for the run's log."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("a full disk is a small tmpfs, which only root can mount; these tests do not run as root")
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True,
                              text=True)
    except FileNotFoundError:
        pytest.skip("a full disk is a small tmpfs, mounted with mount(8), which is not installed here")
    if done.returncode:
        pytest.skip(f"a full disk is a small tmpfs, which cannot be mounted here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)


@pytest.mark.parametrize("kind", sorted(RUNS))
def test_a_full_disk_ends_in_one_line_naming_the_file_and_a_resume_finishes(kind, whole, small_disk, data_dir,
                                                                            capsys):
    argv = [*_argv(kind, small_disk, data_dir)]
    argv[argv.index("6")] = "20"  # more than 64 KiB of log
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if ": error: " in line]
    log = small_disk / RUNS[kind][0]
    assert errors == [f"apibank {kind}: error: {log}: cannot write (No space left on device); every whole line "
                      "written before is kept; free some space, then run the same command again to resume"], err
    assert "Traceback" not in err
    assert log.read_bytes().endswith(b"\n")  # whole lines only: the refused one was cut back
    kept = log.read_bytes().count(b"\n")
    assert kept > 0
    subprocess.run(["mount", "-o", "remount,size=16m", str(small_disk)], check=True)  # space freed
    assert main(argv) == 0
    assert f"resuming: {kept} " in capsys.readouterr().err
    if kind == "agent":
        assert [r["episode"] for r in read_trajectories(log)][:6] == [r["episode"] for r in whole[kind]]
    assert len(log.read_bytes().splitlines()) > kept


def test_agent_resumes_after_a_torn_line_and_refuses_duplicates_with_the_way_out(whole, data_dir, tmp_path, capsys):
    """The issue's finding: agent could not resume after a torn line, and its advice (--overwrite) discarded
    every finished episode."""
    output = tmp_path / "run"
    assert main(_argv("agent", output, data_dir)) == 0
    log = output / "trajectories.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    log.write_text("".join(lines[:4]) + lines[4][:50], encoding="utf-8")
    capsys.readouterr()
    assert main(_argv("agent", output, data_dir)) == 0
    assert "resuming: 4 episodes" in capsys.readouterr().err
    assert _content("agent", output) == whole["agent"]
    log.write_text("".join(lines[:4]) + lines[1], encoding="utf-8")
    assert main(_argv("agent", output, data_dir)) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    episode = json.loads(lines[1])["episode"]
    assert error == (f"apibank agent: error: {log}:5: duplicate ('{episode}', 'searcher', 0) (first at line 2); "
                     "mend or delete that line to resume with the others, or give --overwrite to discard every "
                     "episode")


@pytest.mark.parametrize("second", sorted(RUNS))
def test_two_runs_at_once_into_one_folder_the_second_ends_at_once(second, data_dir, tmp_path, capsys):
    """The issue's case: both runs generated everything, wrote every id twice and ended with no results."""
    output = tmp_path / "run"
    first = _child("agent", output, data_dir, nth=2, action="wait")
    try:
        assert first.stdout.readline().strip() == "waiting"  # one episode written, mid-run
        capsys.readouterr()
        assert main(_argv(second, output, data_dir)) == 2
        error = capsys.readouterr().err.strip()
        assert error.count("\n") == 0, error
        error = whole_message(error)
        assert f"{output} is in use by another run: pid {first.pid} on " in error
        assert f"(`apibank {' '.join(_argv('agent', output, data_dir))}`)"[:60] in error
        assert not (output / "predictions.jsonl").exists()
    finally:
        first.communicate("\n", timeout=600)  # the first run goes on and ends as usual
    assert first.returncode == 0
    assert len(read_trajectories(output / "trajectories.jsonl")) == 6
