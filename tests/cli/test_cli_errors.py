"""Mistakes a user makes with ``apibank evaluate``: each ends, before any model loads, in one line on
stderr saying what is wrong and what to do, exit status 2, no traceback (``--debug`` shows it)."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import pytest

from apibank.generate.backends.gguf_metadata import gguf_chat_template
from apibank.cli.main import main
from support.paths import TEMPLATES_DIR as TEMPLATES, whole_message
from support.refusals import refuse_model_loads



def _gguf(path: Path, metadata: dict[str, str]) -> Path:
    """A GGUF header with string metadata and a string-array vocabulary, no tensors."""
    def string(text: str) -> bytes:
        data = text.encode()
        return struct.pack("<Q", len(data)) + data

    items = [string("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 3) + b"".join(map(string, "abc"))]
    items += [string(key) + struct.pack("<I", 8) + string(value) for key, value in metadata.items()]
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, len(items)) + b"".join(items))
    return path


def _run(capsys, *argv: str) -> tuple[int, str]:
    status = main(["evaluate", *argv])
    err = capsys.readouterr().err
    return status, err


@pytest.fixture
def no_model_load(monkeypatch):
    """Loading a model is a test failure: every check must come first."""
    refuse_model_loads(monkeypatch, "the arguments were checked")


MISTAKES = {
    "levels": (["--model", "oracle", "--levels", "4"], r"--levels: unknown level '4'"),
    "uncached hub id": (["--model", "nobody/no-such-model-xyz"],
                        r"--model nobody/no-such-model-xyz: no such local file or folder, and not in the local "
                        r"Hugging Face cache .* offline mode"),
    "mistyped path": (["--model", "./modles/gemma"], r"--model ./modles/gemma: no such file or folder"),
    "not a model folder": (["--model", "{empty}"], r"the folder holds no model \(no config.json\)"),
    "no chat template": (["--model", "{gguf}", "--format", "chat"],
                         r"--format chat needs a chat template and .* has none; give one with --chat-template FILE"),
    "broken template file": (["--model", "{gguf}", "--format", "tools", "--chat-template", "{bad}"],
                             r"not a valid Jinja template"),
    "no endpoint": (["--model", "m", "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1"],
                    r"--base-url http://127.0.0.1:9/v1: no server answers"),
    "no base url": (["--model", "m", "--backend", "openai"], r"--backend openai needs --base-url"),
    "bad timeout": (["--model", "oracle", "--request-timeout", "0"], r"--request-timeout 0.0: give a positive"),
    "unknown tool parser": (["--model", "oracle", "--tool-parser", "hermez"],
                            r"--tool-parser hermez: no such tool parser; did you mean 'hermes'\?"),
    "zero limit": (["--model", "oracle", "--limit", "0"], r"--limit 0: must be at least 1"),
    "negative thinking budget": (["--model", "oracle", "--thinking-budget", "-1"],
                                 r"--thinking-budget -1: must be at least 0"),
    "zero threads": (["--model", "oracle", "--threads", "0"], r"--threads 0: must be at least 1"),
    "threads to a server": (["--model", "m", "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1",
                             "--threads", "2"], r"--threads applies to --backend transformers; --backend openai "
                            r"does not take it: drop --threads"),
    "output is a file": (["--model", "oracle", "--output", "{gguf}"], r"a file, not a folder"),
    "no data dir": (["--model", "oracle", "--data-dir", "{tmp}/nowhere"], r"--data-dir .*: no such folder"),
    # options that cannot apply to the run (issue 37): ignored without a word before
    "template options to the oracle": (["--model", "oracle", "--chat-template-kwargs", '{{"enable_thinking": false}}'],
                                       r"^apibank evaluate: error: --chat-template-kwargs: --model oracle is scripted "
                                       r"and runs no model, so it does not apply; drop --chat-template-kwargs$"),
    "backend flags to the oracle": (["--model", "oracle", "--backend", "transformers", "--dtype", "float32"],
                                    r"--backend, --dtype: --model oracle is scripted and runs no model, so they do "
                                    r"not apply; drop --backend and --dtype"),
    "template options to a plain-text paper prompt": (
        ["--model", "{gguf}", "--format", "paper", "--chat-template-kwargs", '{{"enable_thinking": false}}'],
        r"--chat-template-kwargs: .*m.gguf has no chat template, so --format paper sends its prompt as plain text "
        r"and no template reads them; drop --chat-template-kwargs, or give a template"),
    "template options with the template off": (
        ["--model", "{gguf}", "--format", "paper", "--chat-template", "off", "--chat-template-kwargs", '{{"a": 1}}'],
        r"--chat-template-kwargs: --chat-template off sends the paper prompt as plain text"),
    "worked example in a chat prompt": (["--model", "oracle", "--format", "chat", "--icl"],
                                        r"--icl: the worked example is part of the paper prompt, which --format chat "
                                        r"does not use; drop --icl, or use --format paper"),
    "worked example without level 3": (["--model", "oracle", "--levels", "1", "2", "--icl"],
                                       r"--icl: only level 3's instruction has a worked example, and --levels "
                                       r"level-1 level-2 has none"),
    "resume mismatch": (["--model", "oracle", "--format", "chat", "--output", "{previous}"],
                        r"holds predictions with format='paper', but this run has format='chat'; give another "
                        r"--output, or --overwrite"),
}


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_mistakes_end_in_one_line_and_status_2_before_loading(mistake, tmp_path, capsys, data_dir, no_model_load):
    argv, expected = MISTAKES[mistake]
    previous = tmp_path / "previous"
    previous.mkdir()
    (previous / "predictions.jsonl").write_text(json.dumps({"id": "x", "format": "paper", "model": "oracle"}) + "\n")
    bad = tmp_path / "bad.jinja"
    bad.write_text("{% for m in messages %}")
    values = {"tmp": str(tmp_path), "gguf": str(_gguf(tmp_path / "m.gguf", {"general.architecture": "gemma3"})),
              "bad": str(bad), "previous": str(previous), "empty": str(tmp_path / "empty")}
    (tmp_path / "empty").mkdir()
    argv = [arg.format(**values) for arg in argv]
    if "--data-dir" not in argv:
        argv += ["--data-dir", str(data_dir)]
    output = tmp_path / "out"
    if "--output" not in argv:
        argv += ["--output", str(output)]
    status, err = _run(capsys, *argv, "--quiet")
    assert status == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("apibank evaluate: error: "), err
    assert re.search(expected, whole_message(lines[0])), lines[0]
    assert "Traceback" not in err
    assert not output.exists()  # nothing created


def test_debug_shows_the_traceback(capsys, data_dir):
    from apibank.errors import UsageError

    with pytest.raises(UsageError, match="unknown level"):
        main(["--debug", "evaluate", "--model", "oracle", "--levels", "4"])
    with pytest.raises(UsageError, match="unknown level"):
        main(["evaluate", "--debug", "--model", "oracle", "--levels", "4"])


def test_ctrl_c_says_how_to_resume(monkeypatch, tmp_path, capsys, data_dir):
    def interrupted(model, *, output_dir, **kwargs):
        Path(output_dir).mkdir(parents=True, exist_ok=True)
        (Path(output_dir) / "predictions.jsonl").write_text('{"id": "a"}\n{"id": "b"}\n')
        raise KeyboardInterrupt

    monkeypatch.setattr("apibank.pipeline.classic.evaluate", interrupted)
    output = tmp_path / "out"
    status = main(["evaluate", "--model", "oracle", "--data-dir", str(data_dir), "--output", str(output)])
    err = capsys.readouterr().err
    assert status == 130
    assert "interrupted; 2 predictions are saved in" in err and "Run the same command again to resume" in err
    assert "Traceback" not in err


def test_gguf_metadata_is_read_without_loading_the_file(tmp_path):
    template = "{% for m in messages %}{{ m.content }}{% endfor %}"
    assert gguf_chat_template(_gguf(tmp_path / "a.gguf", {"tokenizer.chat_template": template})) == template
    assert gguf_chat_template(_gguf(tmp_path / "b.gguf", {"general.name": "x"})) is None
    truncated = tmp_path / "c.gguf"
    truncated.write_bytes((tmp_path / "a.gguf").read_bytes()[:40])
    from apibank.errors import UsageError

    with pytest.raises(UsageError, match="not a readable GGUF file"):
        gguf_chat_template(truncated)


ARGPARSE_MISTAKES = {
    "unknown backend": (["evaluate", "--model", "x", "--backend", "nope"],
                        r"argument --backend: invalid choice: 'nope' \(choose from .*'transformers'.*\)"),
    "unknown format": (["evaluate", "--model", "x", "--format", "nope"], r"argument --format: invalid choice: 'nope'"),
    "unknown protocol": (["score", "p.jsonl", "--protocols", "nope"], r"argument --protocols: invalid choice: 'nope'"),
    "missing model": (["evaluate"], r"the following arguments are required: --model"),
    "not a number": (["agent", "--model", "oracle", "--trials", "two"], r"argument --trials: invalid int value"),
    "no runs": (["compare"], r"the following arguments are required: RUN_DIR"),
    "unknown flag": (["ls", "--colour"], r"unrecognized arguments: --colour"),
    "unknown command": (["evalute"], r"argument COMMAND: invalid choice: 'evalute'"),
}


@pytest.mark.parametrize("mistake", sorted(ARGPARSE_MISTAKES))
def test_argument_mistakes_are_one_line_pointing_at_help(mistake, capsys):
    argv, expected = ARGPARSE_MISTAKES[mistake]
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    command = "apibank" if mistake == "unknown command" else f"apibank {argv[0]}"
    assert len(lines) == 1 and captured.out == "", captured.err
    assert lines[0].startswith(f"{command}: error: ") and lines[0].endswith(f"; see {command} --help"), lines[0]
    assert re.search(expected, whole_message(lines[0])), lines[0]
    assert "usage:" not in captured.err


def test_a_failed_download_says_how_to_work_offline(monkeypatch, tmp_path, capsys):
    from apibank.data import upstream

    monkeypatch.delenv(upstream.DATA_DIR_ENV, raising=False)
    monkeypatch.setenv(upstream.BASE_URL_ENV, "http://127.0.0.1:9")  # nothing listens: refused
    monkeypatch.setenv("APIBANK_CACHE", str(tmp_path / "empty-cache"))
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text(json.dumps({"id": "level-1/ToolSearcher-level-1-1#0", "prediction": "x"}) + "\n")
    assert main(["score", str(predictions), "--quiet"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert re.fullmatch(r"apibank score: error: could not download test-data/level-1-api\.json from 127\.0\.0\.1:9: "
                        r"Connection refused; to work offline, pass --data-dir DIR \(data_dir= in Python\): a local "
                        r"copy of the upstream api-bank folder", line), line


def test_a_predictions_line_without_prediction_says_it_is_missing(tmp_path, capsys, data_dir):
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text(json.dumps({"id": "level-1/ToolSearcher-level-1-1#0", "text": "x"}) + "\n"
                           + json.dumps({"id": "level-1/ToolSearcher-level-1-1#1", "prediction": 3}) + "\n")
    assert main(["score", str(predictions), "--data-dir", str(data_dir), "--quiet"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.endswith(":1: `prediction` of 'level-1/ToolSearcher-level-1-1#0' is missing; every line needs the "
                         "generated text as its `prediction`"), line
    predictions.write_text(predictions.read_text().splitlines()[1] + "\n")
    assert main(["score", str(predictions), "--data-dir", str(data_dir), "--quiet"]) == 2
    assert "`prediction` of 'level-1/ToolSearcher-level-1-1#1' is not a string" in capsys.readouterr().err


def test_agent_refuses_an_unknown_tool_parser_before_loading(tmp_path, capsys, data_dir, no_model_load):
    status = main(["agent", "--model", "oracle", "--tool-parser", "mistrall", "--data-dir", str(data_dir),
                   "--output", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 2 and len(err.strip().splitlines()) == 1, err
    assert "--tool-parser mistrall: no such tool parser; did you mean 'mistral'?" in err


@pytest.mark.parametrize("argv, expected", [
    (["--model", "oracle", "--chat-template-kwargs", '{"enable_thinking": false}'],
     "--chat-template-kwargs: --model oracle is scripted and runs no model, so it does not apply"),
    (["--model", "none", "--dtype", "float32"], "--dtype: --model none is scripted and runs no model"),
    (["--model", "{model}", "--tool-format", "text", "--chat-template-kwargs", '{"enable_thinking": false}'],
     "--chat-template-kwargs goes with the native tool format; --tool-format text sends a plain transcript"),
])
def test_agent_refuses_options_that_cannot_apply(argv, expected, tmp_path, capsys, data_dir, no_model_load):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    argv = [arg.replace("{model}", str(model)) for arg in argv]
    status = main(["agent", *argv, "--data-dir", str(data_dir), "--output", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 2 and len(err.strip().splitlines()) == 1 and expected in err, err
