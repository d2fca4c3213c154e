"""The backend interface: decoding settings, completions, and the gold-replaying oracle backend."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Sequence

from apibank.generate.conversation import Conversation
from apibank.generate.toolcalls import ToolCall


@dataclass(frozen=True)
class DecodingSettings:
    """Greedy decoding; ``stop`` strings end an answer (the text from the first one on is dropped)."""

    max_new_tokens: int = 256
    stop: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"do_sample": False, "temperature": 0.0, "max_new_tokens": self.max_new_tokens, "stop": list(self.stop)}


@dataclass
class Completion:
    text: str  # the answer as text (special tokens removed)
    raw: str  # what the backend produced, special tokens / the served message included
    tool_calls: list[ToolCall] | None = None  # structured calls, where the backend parsed them
    extra: dict[str, Any] = field(default_factory=dict)


class Backend(ABC):
    name: str = ""

    @abstractmethod
    def render(self, conversation: Conversation) -> str:
        """The exact prompt this backend sends for ``conversation``."""

    @abstractmethod
    def generate(
        self, conversations: Sequence[Conversation], prompts: Sequence[str], settings: DecodingSettings
    ) -> list[Completion]:
        """One completion per conversation (``prompts[i]`` is ``render(conversations[i])``)."""

    def info(self) -> dict[str, Any]:
        return {"backend": self.name}

    def close(self) -> None:
        pass


# --------------------------------------------------------------------------------------- oracle
class OracleBackend(Backend):
    """Answers every row with its gold ``expected_output``: the ceiling of the judging protocols."""

    name = "oracle"

    def render(self, conversation: Conversation) -> str:
        return conversation.plain_text if conversation.plain_text is not None else json.dumps(conversation.messages)

    def generate(self, conversations, prompts, settings):
        return [Completion(text=c.gold, raw=c.gold) for c in conversations]

    def info(self) -> dict[str, Any]:
        return {"backend": self.name, "model_id": "oracle", "model_revision": None, "dtype": None}
