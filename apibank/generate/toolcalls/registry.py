"""Call readers by family: one table, filled once from the reader modules, chosen from the chat template's
own markers, or from the text's, or by name (``--tool-parser``).

A reader is one small module holding ``READERS``: :class:`Reader` entries whose names are vLLM's
``--tool-call-parser`` names where vLLM reads the family. Order matters where markers overlap
(GLM-4.5 and Qwen3-Coder write ``<tool_call>`` too, around their own syntax): :data:`MODULES` lists
the more specific families first, and the first reader whose markers match is the one chosen.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from apibank.generate.backends.registry import Registry, UnknownName
from apibank.generate.toolcalls.generic import ToolCall

Schemas = Mapping[str, Mapping[str, Any]]  # tool name -> its JSON-schema ``parameters``


@dataclass(frozen=True)
class Reader:
    """One family's call syntax.

    ``template_markers``: groups of strings that all appear in the family's chat template (how the family is
    recognised from a template; several groups: any one of them). ``text_markers``: patterns, any of which found in a model's output
    recognises the family without a template (empty: the family has no marker of its own and is read
    only when chosen). ``read(text, schemas)`` returns the calls in ``text`` (reasoning already removed);
    ``schemas`` (tool name -> parameters), when known, types the values of families that write values
    as bare text (XML-style parameters)."""

    name: str
    read: Callable[[str, "Schemas | None"], list[ToolCall]]
    template_markers: tuple[tuple[str, ...], ...]
    text_markers: tuple[re.Pattern[str], ...] = ()
    summary: str = ""  # the call syntax, in one line

    def recognises(self, text: str) -> bool:
        return any(marker.search(text) for marker in self.text_markers)

    def fits_template(self, template: str) -> bool:
        return any(all(marker in template for marker in group) for group in self.template_markers)


# The more specific families first (see the module docstring).
MODULES = (
    "openai", "deepseek_v3", "deepseek_v31", "kimi_k2", "gemma4", "glm45", "qwen3_coder", "mistral",
    "granite", "phi4_mini_json", "internlm", "functionary_v32", "hermes", "pythonic", "llama3_json", "xlam",
    "functions_prefix", "json_anywhere",
)


def _load() -> Registry[Reader]:
    registry: Registry[Reader] = Registry("tool parser")
    for module in MODULES:
        for reader in importlib.import_module(f"apibank.generate.toolcalls.{module}").READERS:
            registry.register(reader.name, reader)
    return registry


READERS: Registry[Reader] = _load()


def reader_names() -> tuple[str, ...]:
    return READERS.names()


def get_reader(name: str) -> Reader:
    """The reader registered as ``name``; :class:`UnknownName` (naming the closest ones) otherwise."""
    return READERS.get(name)


def reader_for_template(template: str | None) -> Reader | None:
    """The family whose markers the chat template holds (None: none does, or no template)."""
    if not isinstance(template, str) or not template:
        return None
    for name in READERS.names():
        reader = READERS.get(name)
        if reader.fits_template(template):
            return reader
    return None


def reader_for_text(text: str) -> Reader | None:
    """The family whose own markers the text holds (None: it holds none)."""
    for name in READERS.names():
        reader = READERS.get(name)
        if reader.recognises(text):
            return reader
    return None


__all__ = ["READERS", "Reader", "Schemas", "UnknownName", "get_reader", "reader_for_template", "reader_for_text",
           "reader_names"]
