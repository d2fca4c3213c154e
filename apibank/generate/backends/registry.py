"""Backends by name: one table, filled once, that ``make_backend`` and the CLI's ``--backend`` read.

Adding a backend is one module (a :class:`~apibank.generate.backends.base.Backend` subclass) and one
line in :data:`BACKEND_REGISTRY` below. An entry names its class as ``"module:Class"`` and is
imported on first use, so that listing the backends never imports torch or vLLM. A *scripted*
backend answers without a model (the gold-replaying oracle): ``--model NAME`` selects it whatever
``--backend`` says, and it takes no arguments.
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass
from typing import Callable, Generic, Iterable, TypeVar

T = TypeVar("T")


class UnknownName(ValueError):
    """A name no entry of a registry has; the message suggests the closest registered names."""


@dataclass
class Entry(Generic[T]):
    name: str
    target: "str | T"  # the object, or "package.module:Attribute" imported on first use
    scripted: bool = False

    def load(self) -> T:
        if isinstance(self.target, str):
            module, _, attribute = self.target.partition(":")
            self.target = getattr(importlib.import_module(module), attribute)
        return self.target


class Registry(Generic[T]):
    """Named entries of one kind (backends, ...): duplicates are refused, unknown names answered with
    the closest registered ones. ``register`` also works as a class decorator."""

    def __init__(self, kind: str, entries: Iterable[tuple[str, "str | T"]] = (), *,
                 scripted: Iterable[tuple[str, "str | T"]] = ()) -> None:
        self.kind = kind
        self._entries: dict[str, Entry[T]] = {}
        for name, target in entries:
            self.register(name, target)
        for name, target in scripted:
            self.register(name, target, scripted=True)

    def register(self, name: str, target: "str | T | None" = None, *, scripted: bool = False):
        """Add ``name``; without ``target``, a decorator registering the class it decorates."""
        if target is None:
            def decorate(value: T) -> T:
                self.register(name, value, scripted=scripted)
                return value

            return decorate
        if not name or not isinstance(name, str):
            raise ValueError(f"a {self.kind} name must be a non-empty string, got {name!r}")
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._entries[name] = Entry(name, target, scripted)
        return target

    def names(self, *, scripted: bool | None = None) -> tuple[str, ...]:
        """Registered names in registration order; ``scripted`` keeps only (or drops) the scripted ones."""
        return tuple(name for name, entry in self._entries.items() if scripted is None or entry.scripted == scripted)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def get(self, name: str, *, scripted: bool | None = None) -> T:
        """The object registered as ``name`` (imported now if named by its path)."""
        choices = self.names(scripted=scripted)
        if name not in choices:
            raise UnknownName(unknown_message(self.kind, name, choices))
        return self._entries[name].load()


def unknown_message(kind: str, name: object, choices: Iterable[str]) -> str:
    """``unknown backend 'vlm'; did you mean 'vllm'? (choose from: transformers, vllm, openai)``."""
    choices = list(choices)
    close = difflib.get_close_matches(str(name), choices, n=2, cutoff=0.6)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return f"unknown {kind} {name!r}{hint} (choose from: {', '.join(choices)})"


# The backends. A new backend: its module, and one line here.
BACKEND_REGISTRY: Registry[Callable[..., object]] = Registry(
    "backend",
    [
        ("transformers", "apibank.generate.backends.hf:TransformersBackend"),
        ("vllm", "apibank.generate.backends.vllm:VLLMBackend"),
        ("openai", "apibank.generate.backends.openai:OpenAIBackend"),
    ],
    scripted=[
        ("oracle", "apibank.generate.backends.base:OracleBackend"),
    ],
)
