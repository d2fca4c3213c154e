"""Generate API-Bank predictions with any causal LM: a thin layer over ``apibank.generate``.

>>> from apibank_generate import generate                                   # doctest: +SKIP
>>> from apibank import iter_rows                                      # doctest: +SKIP
>>> rows = list(iter_rows("level-1"))[:8]                                   # doctest: +SKIP
>>> predictions = generate("Qwen/Qwen2.5-0.5B-Instruct", rows, fmt="tools")  # doctest: +SKIP

``fmt`` is ``paper`` (upstream instruction + input), ``chat`` (chat template, API results as tool
messages) or ``tools`` (native function calling; the model's tool call becomes
``API-Request: [Name(key='value', ...)]``). ``backend`` is ``transformers`` (default), ``vllm`` or
``openai`` (any OpenAI-compatible endpoint: pass ``base_url=``). Decoding is greedy; answers are
sized and cut as ``apibank evaluate`` sizes and cuts them.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from apibank.benchmark import MODEL_FORMAT
from apibank.generate import (
    BACKENDS,
    FORMATS,
    Backend,
    DecodingSettings,
    build_conversation,
    generate_predictions,
    make_backend,
)
from apibank.generate.runner import sized_settings


def generate(
    model: str | Backend,
    rows: Sequence[Mapping[str, Any]],
    *,
    fmt: str = MODEL_FORMAT,
    backend: str = "transformers",
    batch_size: int = 8,
    max_new_tokens: int | None = None,
    icl: bool = False,
    output_path: str | None = None,
    progress: bool = False,
    **backend_options: Any,
) -> list[str]:
    """One prediction string per row, in order (greedy; batched with left padding). Answers are sized
    and end as ``apibank evaluate`` sizes and ends them (:func:`apibank.generate.runner.sized_settings`):
    each level and kind of row gets the longest gold answer among ``rows`` plus a margin, in the model's
    tokens, at most ``max_new_tokens`` when given."""
    engine = model if isinstance(model, Backend) else make_backend(model, backend, **backend_options)
    settings = sized_settings(engine, rows, fmt, max_new_tokens=max_new_tokens)
    records = generate_predictions(
        rows, engine, fmt=fmt, settings=settings, batch_size=batch_size, output_path=output_path, icl=icl,
        progress=progress,
    )
    return [record["prediction"] for record in records]


__all__ = ["BACKENDS", "FORMATS", "DecodingSettings", "build_conversation", "generate", "make_backend"]
