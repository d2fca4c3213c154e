"""The GPU check's CPU-checkable parts: the ToolSearcher model's float16 transport round trip (same
retrieval choices), the 4B shape's layer pattern, the offline run script and the report's tables. The
``prepare`` step itself needs the package registry, and ``run.sh`` a prepared folder: both were run by
hand (see benchmarks/README.md)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _module(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


gpu_check = _module("gpu_check")
onnx_half = _module("onnx_half")


def test_4b_shape_has_one_full_attention_layer_in_six():
    types = gpu_check._layer_types(34)
    assert len(types) == 34 and types.count("full_attention") == 5
    assert [i for i, kind in enumerate(types) if kind == "full_attention"] == [5, 11, 17, 23, 29]
    assert gpu_check.SHAPE_4B["hidden_size"] == 2560 and gpu_check.SHAPE_4B["sliding_window"] == 1024
    assert (gpu_check.SHAPE_4B["num_attention_heads"], gpu_check.SHAPE_4B["num_key_value_heads"],
            gpu_check.SHAPE_4B["head_dim"]) == (8, 4, 256)


def test_run_script_installs_offline_and_hands_over():
    script = gpu_check.RUN_SH
    assert "--no-index" in script and "--no-deps" in script and "HF_HUB_OFFLINE=1" in script
    assert 'gpu_check.py" run "$DIR" "$OUT"' in script


def test_halved_embedding_model_chooses_the_same_tools(tmp_path):
    from apibank_tools.retrieval import OnnxMiniLMBackend, _installed_file, strict_best

    original = _installed_file(*gpu_check.ONNX_DIST[:1], gpu_check.ONNX_NAME)
    names = onnx_half.halve(original, tmp_path / "half.onnx")
    assert len(names) > 20 and (tmp_path / "half.onnx").stat().st_size < original.stat().st_size * 0.55
    onnx_half.restore(tmp_path / "half.onnx", tmp_path / "back.onnx", names)
    with pytest.raises(ValueError, match="halved weights are missing"):
        onnx_half.restore(tmp_path / "half.onnx", tmp_path / "bad.onnx", names + ["no-such-weight"])
    texts = ["add an alarm clock", "query the stock price", "book a meeting room", "check the weather",
             "GetUserToken get the user token", "delete an agenda item"]
    full, half = OnnxMiniLMBackend(original), OnnxMiniLMBackend(tmp_path / "back.onnx")
    a, b = full.embed(texts), half.embed(texts)
    assert np.allclose(a, b, atol=2e-2)
    for query in ("set an alarm for 7", "what is the price of a share", "get my token"):
        qa, qb = full.embed([query])[0], half.embed([query])[0]
        score = lambda q, m: (m @ q / np.linalg.norm(m, axis=1) / np.linalg.norm(q)).tolist()  # noqa: E731
        assert strict_best(score(qa, a)) == strict_best(score(qb, b))


def test_report_tables():
    bench = {"shape": "4b", "rows": 128, "exit": 0, "results": [
        {"batch": 32, "package_tokens_per_second": 700.0, "package_over_hand": 1.05, "hand_tokens_per_second": 666.0,
         "generate_tokens_per_second": 369.0, "generate_over_hand": 0.55, "compiled_tokens_per_second": 4500.0,
         "compiled_over_hand": 6.76, "compile_seconds": 41.0, "package_bandwidth_fraction": 0.04,
         "compiled_bandwidth_fraction": 0.254}]}
    report = {"device": "cuda", "tiny": False, "gpu": "NVIDIA H200", "torch": "2.11", "cuda": "13.0",
              "transformers": "5.17", "python": "3.12.3", "dtype": "bfloat16",
              "models": {"4b": {"parameters": 3.88e9, "build_seconds": 4.0}}, "benchmarks": [bench],
              "evaluate": {"command": "evaluate ...", "seconds": 130.0, "exit": 0,
                           "usage": {"wall_seconds": 110.0, "compile_seconds": 30.0, "samples": 2000,
                                     "generated_tokens": 400000}}}
    text = gpu_check.markdown(report)
    assert "| 4b | 128 | 32 | 700.0 | 1.05x | 666.0 | 369.0 | 0.55x | 4500.0 | 6.76x | 41.0 | 4.0% | 25.4% |" in text
    assert "generation 110.0 s wall (compile 30.0 s)" in text and "NVIDIA H200" in text
