"""Generation for API-Bank: prompt formats, backends, predictions files, evaluation, report, leaderboard.

Heavy libraries (torch, transformers, vLLM, matplotlib) are imported only when a backend or a
report needs them.
"""

from .backends import (
    BACKENDS,
    Backend,
    Completion,
    DecodingSettings,
    OpenAIBackend,
    OracleBackend,
    TransformersBackend,
    VLLMBackend,
    make_backend,
)
from .conversation import FORMATS, Conversation, build_conversation
from .predictions import read_predictions
from .runner import generate_predictions
from .toolcalls import call_text

__all__ = [
    "BACKENDS",
    "FORMATS",
    "Backend",
    "Completion",
    "Conversation",
    "DecodingSettings",
    "OpenAIBackend",
    "OracleBackend",
    "TransformersBackend",
    "VLLMBackend",
    "build_conversation",
    "call_text",
    "generate_predictions",
    "make_backend",
    "read_predictions",
]
