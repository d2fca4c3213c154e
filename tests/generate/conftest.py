"""Fixtures shared by the generation tests."""

from __future__ import annotations

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
