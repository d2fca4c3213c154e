"""Generate API-Bank predictions with any causal LM: a thin layer over ``apibank.generate``.

>>> from apibank_generate import generate                                   # doctest: +SKIP
>>> from apibank import iter_rows                                      # doctest: +SKIP
>>> rows = list(iter_rows("level-1"))[:8]                                   # doctest: +SKIP
>>> predictions = generate("Qwen/Qwen2.5-0.5B-Instruct", rows, fmt="tools")  # doctest: +SKIP

``fmt`` is ``paper`` (upstream instruction + input), ``chat`` (chat template, API results as tool
messages) or ``tools`` (native function calling; the model's tool call becomes
``API-Request: [Name(key='value', ...)]``). ``backend`` is ``transformers`` (default), ``vllm`` or
``openai`` (any OpenAI-compatible endpoint: pass ``base_url=``). Decoding is greedy.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from apibank.generate import (
    BACKENDS,
    FORMATS,
    Backend,
    DecodingSettings,
    build_conversation,
    generate_predictions,
    make_backend,
)
from apibank.generate.stops import stops_for


def generate(
    model: str | Backend,
    rows: Sequence[Mapping[str, Any]],
    *,
    fmt: str = "chat",
    backend: str = "transformers",
    batch_size: int = 8,
    max_new_tokens: int = 256,
    icl: bool = False,
    output_path: str | None = None,
    progress: bool = False,
    **backend_options: Any,
) -> list[str]:
    """One prediction string per row, in order (greedy; batched with left padding). Answers end
    where ``apibank evaluate`` ends them (:func:`apibank.generate.stops.stops_for`)."""
    engine = model if isinstance(model, Backend) else make_backend(model, backend, **backend_options)
    settings = DecodingSettings(max_new_tokens=max_new_tokens, stop=stops_for(engine, rows, fmt))
    records = generate_predictions(
        rows, engine, fmt=fmt, settings=settings, batch_size=batch_size, output_path=output_path, icl=icl,
        progress=progress,
    )
    return [record["prediction"] for record in records]


__all__ = ["BACKENDS", "FORMATS", "DecodingSettings", "build_conversation", "generate", "make_backend"]
