"""The model layer: generation backends behind one interface.

A backend renders a :class:`Conversation` (a dataset row in a prompt format, or a free chat with
tools: :func:`~apibank.generate.conversation.chat_conversation`) into the exact prompt it sends
(``render``) and turns a batch of them into :class:`Completion` objects (``generate``; greedy unless
the :class:`DecodingSettings` give a temperature).

* :class:`TransformersBackend`: ``AutoModelForCausalLM`` + ``AutoTokenizer``, batched, left padding;
* :class:`VLLMBackend`: vLLM's offline ``LLM`` engine (optional extra, imported lazily), for
  throughput, tensor parallelism and models bigger than one GPU;
* :class:`OpenAIBackend`: any OpenAI-compatible ``/chat/completions`` endpoint (vLLM or TGI servers,
  hosted APIs), with concurrent requests, through the one HTTP client (``http.py``: retry policy);
* :class:`OracleBackend`: replays the gold answers (a self-check that needs no model).

Backends are looked up by name in :data:`~apibank.generate.backends.registry.BACKEND_REGISTRY`.
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
from apibank.generate.backends.http import EndpointError
from apibank.generate.backends.openai import OpenAIBackend
from apibank.generate.backends.registry import BACKEND_REGISTRY, UnknownName
from apibank.generate.backends.vllm import VLLMBackend

# The backends that run a model (``--backend``); the scripted ones are chosen by ``--model``.
BACKENDS = BACKEND_REGISTRY.names(scripted=False)


def make_backend(model: str, backend: str = "transformers", **options: Any) -> Backend:
    """A backend by name; a scripted backend's name as ``model`` (``"oracle"``: the gold-replaying
    backend) gives that backend whatever ``backend`` says. Options that are None are left out."""
    if model in BACKEND_REGISTRY.names(scripted=True):
        return BACKEND_REGISTRY.get(model)()
    options = {key: value for key, value in options.items() if value is not None}
    return BACKEND_REGISTRY.get(backend, scripted=False)(model, **options)


__all__ = [
    "BACKENDS",
    "BACKEND_REGISTRY",
    "Backend",
    "Completion",
    "DecodingSettings",
    "EndpointError",
    "OpenAIBackend",
    "OracleBackend",
    "TransformersBackend",
    "UnknownName",
    "VLLMBackend",
    "make_backend",
]
