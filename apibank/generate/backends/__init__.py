"""Generation backends behind one interface.

A backend renders a :class:`Conversation` into the exact prompt it sends (``render``) and turns a
batch of them into :class:`Completion` objects with greedy decoding (``generate``).

* :class:`TransformersBackend`: ``AutoModelForCausalLM`` + ``AutoTokenizer``, batched, left padding;
* :class:`VLLMBackend`: vLLM's offline ``LLM`` engine (optional extra, imported lazily), for
  throughput, tensor parallelism and models bigger than one GPU;
* :class:`OpenAIBackend`: any OpenAI-compatible ``/chat/completions`` endpoint (vLLM or TGI servers,
  hosted APIs), with concurrent requests and retries, standard library only;
* :class:`OracleBackend`: replays the gold answers (a self-check that needs no model).
"""

from __future__ import annotations

from typing import Any

from apibank.generate.backends.base import (
    Backend,
    Completion,
    DecodingSettings,
    OracleBackend,
)
from apibank.generate.backends.hf import TransformersBackend
from apibank.generate.backends.openai import EndpointError, OpenAIBackend
from apibank.generate.backends.vllm import VLLMBackend

BACKENDS = ("transformers", "vllm", "openai")


def make_backend(model: str, backend: str = "transformers", **options: Any) -> Backend:
    """A backend by name; ``model="oracle"`` gives the gold-replaying backend whatever ``backend`` says."""
    if model == "oracle":
        return OracleBackend()
    options = {key: value for key, value in options.items() if value is not None}
    if backend == "transformers":
        return TransformersBackend(model, **options)
    if backend == "vllm":
        return VLLMBackend(model, **options)
    if backend == "openai":
        return OpenAIBackend(model, **options)
    raise ValueError(f"unknown backend {backend!r}; expected one of {BACKENDS}")


__all__ = [
    "BACKENDS",
    "Backend",
    "Completion",
    "DecodingSettings",
    "EndpointError",
    "OpenAIBackend",
    "OracleBackend",
    "TransformersBackend",
    "VLLMBackend",
    "make_backend",
]
