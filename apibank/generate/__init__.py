"""Generation for API-Bank: prompt formats, backends, tool-call parsing, predictions files.

Heavy libraries (torch, transformers, vLLM, matplotlib) are imported only when a backend or a
report needs them.
"""

from apibank.generate.backends import (
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
from apibank.generate.conversation import FORMATS, Conversation, build_conversation, chat_conversation
from apibank.generate.predictions import read_predictions
from apibank.generate.runner import generate_predictions
from apibank.notation import call_text

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
    "chat_conversation",
    "generate_predictions",
    "make_backend",
    "read_predictions",
]
