"""The compiled path (``--compile``, ``compile=True``): listed in ``apibank evaluate --help``, refused in one
line before any model loads where it cannot apply (no CUDA, another backend), compile time apart in
usage. Where torch allows it, a tiny model compiled on the CPU gives the hand loop's greedy tokens."""

from __future__ import annotations

import os

import pytest

from apibank.cli.main import main
from apibank.errors import UsageError
from apibank.generate.decoders.compiled import CompiledDecoder, check_compile_device
from apibank.generate.decoders.decoding import hand_loop
from apibank.pipeline import usage_totals
from support.refusals import refuse_model_loads


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def test_compile_is_listed_in_evaluate_help(capsys):
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--compile" in help_text and "CUDA graphs" in help_text


@pytest.mark.skipif(_cuda(), reason="this machine has CUDA: --compile applies")
@pytest.mark.parametrize("extra, expected", [
    ([], "apibank evaluate: error: --compile needs a CUDA GPU (CUDA graphs); the model would run on 'cpu' and "
         "torch sees no CUDA device: run without --compile"),
    (["--device", "cuda:0"], "apibank evaluate: error: --compile needs a CUDA GPU (CUDA graphs); the model would "
                             "run on 'cuda:0' and torch sees no CUDA device: run without --compile"),
    (["--backend", "vllm"], "apibank evaluate: error: --compile applies to --backend transformers; --backend vllm "
                            "does not take it: drop --compile"),
])
def test_compile_without_cuda_is_one_line_before_loading(extra, expected, tmp_path, capsys, data_dir, monkeypatch):
    refuse_model_loads(monkeypatch, "the arguments were checked")
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    status = main(["evaluate", "--model", str(model), "--compile", *extra, "--data-dir", str(data_dir),
                   "--output", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert status == 2 and err.strip() == expected
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(_cuda(), reason="this machine has CUDA: --compile applies")
def test_backend_refuses_compile_before_loading(tmp_path):
    from apibank.generate.backends import make_backend

    with pytest.raises(UsageError, match=r"^--compile needs a CUDA GPU"):
        make_backend(str(tmp_path / "not-even-a-model"), "transformers", compile=True, device="cpu")
    with pytest.raises(UsageError, match="torch sees no CUDA device"):
        check_compile_device("cuda")


def test_compile_seconds_apart_in_usage():
    records = [{"prompt_tokens": 10, "generated_tokens": 4, "seconds": 1.0}]
    assert "compile_seconds" not in usage_totals(records)  # eager runs keep their usage as it was
    usage = usage_totals(records, compile_seconds=12.3456)
    assert usage["compile_seconds"] == 12.346 and usage["seconds"] == 1.0


@pytest.mark.skipif(not os.environ.get("APIBANK_COMPILE_TESTS"),
                    reason="torch.compile of even a 2-layer model took 278 s on the 2 shared cores this was written "
                    "on (same tokens as the hand loop); set APIBANK_COMPILE_TESTS=1 to run it")
def test_compiled_tiny_model_gives_the_hand_loop_tokens():
    import torch
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    torch.manual_seed(0)
    config = Gemma3TextConfig(vocab_size=300, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                              num_attention_heads=2, num_key_value_heads=1, head_dim=16, sliding_window=16,
                              layer_types=["sliding_attention", "full_attention"], max_position_embeddings=512)
    model = Gemma3ForCausalLM(config).eval()
    generator = torch.Generator().manual_seed(1)
    prompts = [torch.randint(3, 300, (length,), generator=generator).tolist() for length in (40, 25, 33)]
    decoder = CompiledDecoder(model, eos_ids=[], compile=True)
    assert [row.ids for row in decoder.generate(prompts, [8] * 3)] == hand_loop(model, prompts, 8, 0)
    assert decoder.compile_seconds > 0
