"""Keep inspect-ai's token *estimates* from needing the network.

inspect-ai estimates token counts with tiktoken's ``o200k_base`` vocabulary (e.g. the usage that
``mockllm`` reports), which tiktoken downloads on first use. Without the network and without a cached
copy that estimate raises, and a run with ``mockllm`` -- or any provider that reports no usage --
fails before scoring. This falls back, only in that case, to an estimate from the text's length
(4 bytes a token, plus inspect's own 10% margin); with the vocabulary available nothing changes.
"""

from __future__ import annotations

import functools
from typing import Callable

BYTES_PER_TOKEN = 4


def length_estimate(text: str) -> int:
    return max(1, int(len(text.encode("utf-8")) / BYTES_PER_TOKEN * 1.1))


def _with_fallback(count: Callable[[str], int]) -> Callable[[str], int]:
    state = {"vocabulary": True}

    @functools.wraps(count)
    def estimate(text: str) -> int:
        if state["vocabulary"]:
            try:
                return count(text)
            except Exception:  # no network, no cached vocabulary, no tiktoken: estimate from the length
                state["vocabulary"] = False
        return length_estimate(text)

    estimate.__apibank_fallback__ = True  # type: ignore[attr-defined]
    return estimate


def install() -> None:
    """Wrap inspect-ai's text token estimate once per process (idempotent)."""
    from inspect_ai.model import _model

    current = getattr(_model, "count_text_tokens", None)
    if current is None or getattr(current, "__apibank_fallback__", False):
        return
    _model.count_text_tokens = _with_fallback(current)
