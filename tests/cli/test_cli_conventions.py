"""Conventions every subcommand keeps: a user's mistake is one line of at most 300 characters with exit
status 2, found before any work; one flag name per meaning; progress bars only on a terminal's stderr."""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path

import pytest

from apibank.cli.main import MAX_LINE, build_parser, main, one_line
from apibank.errors import DataFolderError, UserError

REPO = Path(__file__).resolve().parents[2]


def _error_line(capsys, command: str) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if ": note: " not in line]
    assert len(lines) == 1, err
    assert lines[0].startswith(f"apibank {command}: error: ") and len(lines[0]) <= MAX_LINE, lines[0]
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture
def read_only(tmp_path, monkeypatch):
    """A folder that cannot be written, as on a read-only file system (chmod does not bind root)."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    real_access = os.access

    def access(path, mode, *args, **kwargs):
        if mode & os.W_OK and Path(path).resolve() == folder.resolve():
            return False
        return real_access(path, mode, *args, **kwargs)

    monkeypatch.setattr(os, "access", access)
    yield folder
    folder.chmod(0o755)


@pytest.fixture
def predictions(tmp_path, data_dir) -> Path:
    from apibank.data.rows import iter_rows

    rows = [row for row in iter_rows("level-1", data_dir) if row["kind"] == "api"][:2]
    path = tmp_path / "given" / "predictions.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps({"id": r["id"], "prediction": r["expected_output"], "model": "oracle"}) + "\n"
                            for r in rows), encoding="utf-8")
    return path


def test_version(capsys):
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(["--version"])
    assert stop.value.code == 0
    assert re.fullmatch(r"apibank \S+\n", capsys.readouterr().out)


@pytest.mark.parametrize("command", ["evaluate", "score", "agent", "export-dataset", "export-metric"])
def test_a_read_only_output_is_one_line_before_any_work(command, read_only, predictions, data_dir, capsys,
                                                         monkeypatch):
    def no_work(*args, **kwargs):
        raise AssertionError("work started before the output folder was checked")

    for target in ("apibank.pipeline.classic.evaluate", "apibank.pipeline.classic.score_file",
                   "apibank.data.episodes.load_episodes", "apibank.hub.dataset_repo.export_repository",
                   "apibank.hub.metric_space.export_metric"):
        monkeypatch.setattr(target, no_work)
    output = read_only / "out"
    argv = {
        "evaluate": ["evaluate", "--model", "oracle", "--data-dir", str(data_dir)],
        "score": ["score", str(predictions), "--data-dir", str(data_dir)],
        "agent": ["agent", "--model", "oracle", "--levels", "3", "--data-dir", str(data_dir)],
        "export-dataset": ["export-dataset", "--data-dir", str(data_dir)],
        "export-metric": ["export-metric"],
    }[command]
    assert main([*argv, "--output", str(output)]) == 2
    line = _error_line(capsys, command)
    assert f"--output {output}: {read_only} is not writable; give another --output" in line
    assert not output.exists()


def test_agent_with_a_missing_data_folder_leaves_no_output_folder(tmp_path, capsys):
    output = tmp_path / "out"
    assert main(["agent", "--model", "oracle", "--data-dir", str(tmp_path / "nowhere"), "--output", str(output)]) == 2
    assert f"--data-dir {tmp_path / 'nowhere'}: no such folder" in _error_line(capsys, "agent")
    assert not output.exists()


@pytest.mark.parametrize("command", ["evaluate", "agent", "replay", "inspect-model"])
def test_a_folder_without_the_data_is_one_short_line_and_the_list_goes_to_a_file(command, tmp_path, capsys):
    empty = tmp_path / "not-api-bank"
    empty.mkdir()
    argv = {"evaluate": ["evaluate", "--model", "oracle", "--output", str(tmp_path / "out")],
            "agent": ["agent", "--model", "oracle", "--levels", "level-3", "--output", str(tmp_path / "out")],
            "replay": ["replay"],
            # inspect-model printed an inspect command with it, exit 0 (issue 37)
            "inspect-model": ["inspect-model", "--output", str(tmp_path / "out")]}[command]
    assert main([*argv, "--data-dir", str(empty)]) == 2
    line = _error_line(capsys, command)
    assert "not the API-Bank data folder" in line and "give the upstream api-bank folder" in line
    listing = Path(re.search(r"listed in (\S+)\)$", line).group(1))
    missing = [entry for entry in listing.read_text().splitlines()[1:] if entry.strip()]
    assert missing and all("(source: https://" in entry for entry in missing)
    assert f"all {len(missing)} listed" in line
    assert not (tmp_path / "out").exists()
    listing.unlink()


def test_debug_prints_the_whole_list(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DataFolderError) as raised:
        main(["--debug", "agent", "--model", "oracle", "--levels", "3", "--data-dir", str(empty)])
    assert capsys.readouterr().err.splitlines() == list(raised.value.details)


def test_a_long_message_is_cut_to_one_line_and_written_whole_to_a_file():
    line = one_line("apibank score", UserError("x" * 1000))
    assert len(line) <= MAX_LINE and "\n" not in line
    path = Path(re.search(r"the whole message: (\S+)\)$", line).group(1))
    assert path.read_text() == "x" * 1000 + "\n"
    path.unlink()
    line = one_line("apibank score", UserError("what is wrong; what to do\nfirst item\nsecond item"))
    assert line.startswith("apibank score: error: what is wrong; what to do (all 2 listed in ")
    path = Path(re.search(r"listed in (\S+)\)$", line).group(1))
    assert path.read_text() == "what is wrong; what to do\nfirst item\nsecond item\n"
    path.unlink()


def test_an_unresolvable_model_is_refused_before_any_work(tmp_path, data_dir, capsys):
    output = tmp_path / "out"
    assert main(["agent", "--model", "./no/such/model", "--levels", "3", "--data-dir", str(data_dir),
                 "--output", str(output)]) == 2
    assert "--model ./no/such/model: no such file or folder" in _error_line(capsys, "agent")
    assert not output.exists()


@pytest.mark.parametrize("argv, old, new", [
    (["export-metric", "--out", "{tmp}/m"], "--out", "--output"),
    (["agent", "--model", "oracle", "--levels", "3", "--limit", "1", "--fresh", "--output", "{tmp}/a"],
     "--fresh", "--overwrite"),
    (["agent", "--model", "oracle", "--levels", "3", "--limit", "1", "--no-progress"], "--no-progress", "--quiet"),
])
def test_old_spellings_still_work_and_say_which_name_to_use(argv, old, new, tmp_path, data_dir, capsys):
    argv = [arg.format(tmp=tmp_path) for arg in argv]
    if argv[0] == "agent":
        argv += ["--data-dir", str(data_dir)]
    assert main(argv) == 0
    assert f"apibank {argv[0]}: note: {old} is deprecated; use {new}" in capsys.readouterr().err


def test_one_flag_name_per_meaning():
    parser = build_parser()
    subcommands = parser._subparsers._group_actions[0].choices
    for name, sub in subcommands.items():
        flags = {option for action in sub._actions for option in action.option_strings
                 if action.help != "==SUPPRESS=="}
        assert not flags & {"--out", "--fresh", "--no-progress", "--push-to"}, name
    for name in ("evaluate", "score", "agent", "export-dataset", "export-metric"):
        assert "--output" in subcommands[name]._option_string_actions, name
    for name in ("evaluate", "score", "agent"):
        assert "--overwrite" in subcommands[name]._option_string_actions, name
        assert "--quiet" in subcommands[name]._option_string_actions, name


def test_levels_are_given_as_numbers_or_names_everywhere(tmp_path, data_dir, capsys):
    for levels in (["3"], ["level-3"]):
        assert main(["agent", "--model", "oracle", "--levels", *levels, "--limit", "1", "--data-dir", str(data_dir),
                     "--json"]) == 0
        assert list(json.loads(capsys.readouterr().out)) == ["level-3"]
    parser = build_parser()
    for text in ("1,3", "level-1,level-3"):
        assert parser.parse_args(["export-dataset", "--output", "x", "--training-levels", text]).training_levels == (1, 3)
    assert main(["agent", "--model", "oracle", "--levels", "4", "--data-dir", str(data_dir)]) == 2
    assert "--levels: unknown level '4'" in _error_line(capsys, "agent")


def test_score_refuses_to_replace_a_runs_results_without_overwrite(predictions, data_dir, capsys):
    folder = predictions.parent
    assert main(["score", str(predictions), "--data-dir", str(data_dir)]) == 0
    assert f"written to {folder}/" in capsys.readouterr().out
    written = {name: (folder / name).read_bytes() for name in ("results.json", "details.jsonl", "report.md")}
    assert main(["score", str(predictions), "--data-dir", str(data_dir), "--protocols", "paper"]) == 2
    line = _error_line(capsys, "score")
    assert f"{folder} already holds the results of a run" in line and "--overwrite" in line
    assert {name: (folder / name).read_bytes() for name in written} == written
    assert main(["score", str(predictions), "--data-dir", str(data_dir), "--protocols", "paper", "--overwrite"]) == 0
    assert "corrected" not in json.loads((folder / "results.json").read_text())["scores"]


def test_progress_bars_go_to_a_terminals_stderr_and_leave_json_output_alone(predictions, tmp_path, data_dir, capsys,
                                                                           monkeypatch):
    import sys

    terminal = io.StringIO()
    terminal.isatty = lambda: True
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["agent", "--model", "oracle", "--levels", "3", "--limit", "2", "--data-dir", str(data_dir),
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["level-3"]
    assert "agent level-3" in terminal.getvalue()
    assert main(["score", str(predictions), "--data-dir", str(data_dir), "--output", str(tmp_path / "s"),
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["scores"]
    assert "score" in terminal.getvalue().replace("agent level-3", "")
    assert main(["evaluate", "--model", "oracle", "--levels", "3", "--data-dir", str(data_dir), "--output",
                 str(tmp_path / "e"), "--json"]) == 0, terminal.getvalue()[-1000:]
    assert json.loads(capsys.readouterr().out)["scores"]
    assert "generate (oracle)" in terminal.getvalue() and "written to" in terminal.getvalue()
    quiet = io.StringIO()
    quiet.isatty = lambda: True
    monkeypatch.setattr(sys, "stderr", quiet)
    assert main(["agent", "--model", "oracle", "--levels", "3", "--limit", "1", "--data-dir", str(data_dir),
                 "--quiet"]) == 0
    assert "agent level-3" not in quiet.getvalue()  # no bar; the subset warning still shows


def test_no_system_exit_in_library_code():
    raising = [str(path.relative_to(REPO)) for path in (REPO / "apibank").rglob("*.py")
               if "SystemExit" in path.read_text("utf-8")]
    assert raising == []


def test_the_libraries_progress_bars_stay_out_of_a_log(tmp_path, data_dir):
    """stderr to a file, as under CI or nohup: no bar of ours, and none of transformers (loading and saving
    weights), huggingface_hub or datasets either."""
    import subprocess
    import sys

    from apibank.pipeline import load_rows
    from support.paths import REPO
    from support.tiny import build_tiny_model

    rows = load_rows(None, data_dir, limit=1)
    model = build_tiny_model(tmp_path / "model", [row["instruction"] + row["expected_output"] for row in rows])
    env = {key: value for key, value in os.environ.items() if not key.endswith("_DISABLE_PROGRESS_BARS")}
    done = subprocess.run([sys.executable, "-m", "apibank.cli.main", "evaluate", "--model", str(model), "--levels",
                           "3", "--limit", "1", "--allow-subset", "--data-dir", str(data_dir), "--max-new-tokens", "4",
                           "--output", str(tmp_path / "out"), "--json"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "it/s]" not in done.stderr and "Loading weights" not in done.stderr, done.stderr[-2000:]


def test_every_subcommand_has_its_entry_in_the_command_line_page():
    """docs/cli.md's table has one row per subcommand of ``apibank --help``, and the import-harness row names
    both harnesses it reads (it named lm-eval only)."""
    from apibank.cli.main import SUBCOMMANDS
    from support.paths import REPO

    page = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    rows = {match.group(1): match.group(0)
            for match in re.finditer(r"^\| `apibank ([a-z-]+)[^\n]*", page, re.MULTILINE)}
    assert set(rows) == set(SUBCOMMANDS), set(rows) ^ set(SUBCOMMANDS)
    assert "lm-eval" in rows["import-harness"] and "lighteval" in rows["import-harness"]
    assert "lighteval" in SUBCOMMANDS["import-harness"][1]
    assert "[--quiet]" in rows["finetune"]
