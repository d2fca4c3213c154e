"""The backend interface: decoding settings, completions, and the gold-replaying oracle backend."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Mapping, Sequence

from apibank.benchmark import UNSIZED_MAX_NEW_TOKENS
from apibank.generate.backends.options import Option
from apibank.generate.conversation import Conversation
from apibank.generate.stops import TURN_LABELS, answer_start, first_stop  # noqa: F401 (re-exported)
from apibank.generate.toolcalls import ToolCall


@dataclass(frozen=True)
class DecodingSettings:
    """Greedy decoding unless ``temperature`` > 0. ``stop`` strings end an answer (the text from the first
    one on is dropped); ``max_new_tokens`` caps every answer, and ``budgets`` (``(("level-1/api", 120),
    ...)``) sizes the answers of each level and sample kind below that cap. With a ``temperature``, each
    answer is sampled with its own random generator seeded by ``seed``, so that a row's answer does not
    depend on the rows batched with it. ``thinking_budget`` tokens are added to every answer's budget
    (cap included) for a model that reasons before it answers."""

    max_new_tokens: int = UNSIZED_MAX_NEW_TOKENS
    stop: tuple[str, ...] = ()
    budgets: tuple[tuple[str, int], ...] = ()
    temperature: float = 0.0
    seed: int | None = None
    thinking_budget: int = 0

    def __post_init__(self) -> None:
        if not self.temperature >= 0:  # NaN included
            raise ValueError(f"temperature must be 0 (greedy) or positive, got {self.temperature!r}")
        if self.thinking_budget < 0:
            raise ValueError(f"thinking_budget must be 0 or more, got {self.thinking_budget!r}")

    @property
    def sampling(self) -> bool:
        return self.temperature > 0

    @classmethod
    def from_dict(cls, settings: Mapping[str, Any]) -> "DecodingSettings":
        """The settings that ``as_dict`` wrote (a predictions file's ``decoding``)."""
        return cls(max_new_tokens=int(settings["max_new_tokens"]), stop=tuple(settings.get("stop") or ()),
                   budgets=tuple(sorted((settings.get("max_new_tokens_by_kind") or {}).items())),
                   temperature=float(settings.get("temperature") or 0.0), seed=settings.get("seed"),
                   thinking_budget=int(settings.get("thinking_budget") or 0))

    @staticmethod
    def budget_key(level: int | str, kind: str) -> str:
        """``level-1/api``: the key of a level's and kind's budget."""
        return f"level-{level}/{kind}" if str(level).isdigit() else f"{level}/{kind}"

    def max_tokens_for(self, level: int | str, kind: str) -> int:
        answer = min(self.max_new_tokens, dict(self.budgets).get(self.budget_key(level, kind), self.max_new_tokens))
        return answer + self.thinking_budget

    def as_dict(self) -> dict[str, Any]:
        settings = {"do_sample": self.sampling, "temperature": float(self.temperature),
                    "max_new_tokens": self.max_new_tokens, "stop": list(self.stop)}
        if self.sampling:
            settings["seed"] = self.seed
        if self.budgets:
            settings["max_new_tokens_by_kind"] = {key: min(value, self.max_new_tokens) for key, value in self.budgets}
        if self.thinking_budget:  # absent when 0: decodings recorded before it existed stay comparable
            settings["thinking_budget"] = self.thinking_budget
        return settings


@dataclass
class Completion:
    text: str  # the answer as text (special tokens removed)
    raw: str  # what the backend produced, special tokens / the served message included
    tool_calls: list[ToolCall] | None = None  # structured calls, where the backend parsed them
    extra: dict[str, Any] = field(default_factory=dict)
    prompt_tokens: int | None = None  # usage, where the backend knows it
    generated_tokens: int | None = None
    seconds: float | None = None  # this row's share of the generation time


# Told each row's completion the moment the row is done: (its position in the batch, its completion).
OnCompletion = Callable[[int, Completion], None]


def estimated_token_counts(texts: Sequence[str]) -> list[int]:
    """A generous estimate of tokens per text where no tokenizer is known: 2 characters a token."""
    return [len(text) // 2 + 1 for text in texts]


def tokenizer_token_counts(tokenizer: Any, texts: Sequence[str]) -> list[int]:
    """Tokens per text in a transformers tokenizer, without the special tokens a prompt would add."""
    return [len(ids) for ids in tokenizer(list(texts), add_special_tokens=False)["input_ids"]]


class Backend(ABC):
    """A way to generate answers. ``options`` declares the constructor's keywords (after the model): the
    command line builds its flags from them and checks their values; ``check_options`` checks what the
    values decide together, before any model loads."""

    name: str = ""
    options: ClassVar[tuple[Option, ...]] = ()

    @classmethod
    def check_options(cls, model: str, options: dict[str, Any], *, fmt: str | None = None) -> None:
        """Raise ``apibank.errors.UsageError`` (one line: what is wrong, what to do) when ``options``
        cannot work for ``model`` (prompts in format ``fmt``, when known), or
        ``apibank.errors.MissingExtra`` when the backend's extra is not installed; cheap, and
        before anything heavy loads."""

    @abstractmethod
    def render(self, conversation: Conversation) -> str:
        """The exact prompt this backend sends for ``conversation``."""

    @abstractmethod
    def generate(
        self, conversations: Sequence[Conversation], prompts: Sequence[str], settings: DecodingSettings,
        on_completion: OnCompletion | None = None,
    ) -> list[Completion]:
        """One completion per conversation (``prompts[i]`` is ``render(conversations[i])``).

        A backend that finishes rows one by one calls ``on_completion(i, completion)`` as each row is done,
        in the calling thread, so that the caller saves it at once (Ctrl-C then loses only the rows still
        in flight); the returned list holds every completion all the same. Calling it is optional: a
        backend that returns the whole batch at once need not.
        """

    def info(self) -> dict[str, Any]:
        return {"backend": self.name}

    @classmethod
    def prompt_renderer(cls, model: str, **options: Any) -> "Backend":
        """Something that renders this backend's prompts (``render``, ``template_info``) without loading a
        model where the backend can (``apibank evaluate --prompts-only``); by default the backend itself."""
        return cls(model, **options)

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Tokens per text in this backend's tokenizer; without one, a generous estimate (2 characters a token)."""
        return estimated_token_counts(texts)

    def close(self) -> None:
        pass


# --------------------------------------------------------------------------------------- oracle
class OracleBackend(Backend):
    """Answers every row with its gold ``expected_output``: the ceiling of the judging protocols."""

    name = "oracle"

    def render(self, conversation: Conversation) -> str:
        return conversation.plain_text if conversation.plain_text is not None else json.dumps(conversation.messages)

    def generate(self, conversations, prompts, settings, on_completion=None):
        return [Completion(text=c.gold, raw=c.gold, seconds=0.0) for c in conversations]  # generates nothing

    def info(self) -> dict[str, Any]:
        return {"backend": self.name, "model_id": "oracle", "model_revision": None, "dtype": None}
