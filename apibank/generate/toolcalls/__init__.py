"""Reading the calls a model wrote: one reader per model family, chosen from the chat template or the text.

:func:`read_tool_calls` (``apibank.read_calls`` for users) takes one raw model output, removes its
reasoning (:mod:`~apibank.generate.toolcalls.reasoning`) and reads it with the family's reader:

1. the one named (``--tool-parser NAME``), else
2. the one whose markers the chat template holds, and, where it finds nothing (a fine-tune writing
   another family's syntax), the one whose own markers the text holds (``<tool_call>``,
   ``[TOOL_CALLS]``, ``to=functions.``, ...);
3. when no reader finds a call, an answer that is *nothing but* a call (a JSON call object or list,
   or Python-style calls of offered tools) is read as one.

An answer in no recognised format makes no call: prose holding a JSON object with a "name" key is an
answer. The families are in :mod:`~apibank.generate.toolcalls.registry` (names as vLLM's
``--tool-call-parser`` where vLLM reads the family); the generic reader of every syntax anywhere in
the text, :func:`calls_in_text` (registered as ``json``), is used only where the prompt asks for JSON
calls or it is named.

Every reader bounds its work on untrusted text (:mod:`~apibank.generate.toolcalls.generic`): the first
``MAX_TEXT_CHARS`` characters, calls up to the judge's length bound, JSON at most ``MAX_DEPTH`` deep.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from apibank.generate.toolcalls.generic import ESCAPED, MAX_TEXT_CHARS, ToolCall, calls_from_message, whole_answer_calls
from apibank.generate.toolcalls.reasoning import answer_of, split_reasoning
from apibank.generate.toolcalls.registry import (
    READERS,
    Reader,
    UnknownName,
    get_reader,
    reader_for_template,
    reader_for_text,
    reader_names,
)
from apibank.generate.toolcalls.json_anywhere import calls_in_text  # after the registry: it loads the readers


@dataclass(frozen=True)
class ParserChoice:
    """The reader a run uses (``name``; None: recognised per output from its text) and how it was chosen."""

    name: str | None
    chosen_by: str  # "flag", "template" or "text"

    @classmethod
    def make(cls, parser: str | None, chat_template: str | None) -> "ParserChoice":
        if parser:
            return cls(get_reader(parser).name, "flag")
        reader = reader_for_template(chat_template)
        return cls(reader.name, "template") if reader else cls(None, "text")

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name or "auto", "chosen_by": self.chosen_by}

    def read(self, text: str, tools: Iterable[Mapping[str, Any]] | None = None) -> list[ToolCall]:
        """The calls in one raw output, read as :func:`read_tool_calls` would with this choice's inputs."""
        reader = get_reader(self.name) if self.name else None
        return _read(text, reader if self.chosen_by == "flag" else None,
                     reader if self.chosen_by == "template" else None, tools)


def _schemas(tools: Iterable[Mapping[str, Any]] | None) -> dict[str, Mapping[str, Any]]:
    schemas: dict[str, Mapping[str, Any]] = {}
    for tool in tools or ():
        function = tool.get("function", tool) if isinstance(tool, Mapping) else None
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            parameters = function.get("parameters")
            schemas[function["name"]] = parameters if isinstance(parameters, Mapping) else {}
    return schemas


def _read(text: str, named: Reader | None, from_template: Reader | None,
          tools: Iterable[Mapping[str, Any]] | None) -> list[ToolCall]:
    schemas = _schemas(tools) or None
    _, rest = split_reasoning((text or "")[:MAX_TEXT_CHARS])
    # Some servers and chat UIs hand back the output HTML-escaped (&quot;, &#34;): read it unescaped too.
    for candidate in (rest, html.unescape(rest)) if ESCAPED.search(rest) else (rest,):
        readers = [named] if named else [from_template, reader_for_text(candidate)]
        for reader in dict.fromkeys(reader for reader in readers if reader is not None):
            calls = reader.read(candidate, schemas)
            if calls:
                return calls
        calls = whole_answer_calls(candidate, schemas)
        if calls:
            return calls
    return []


def read_tool_calls(text: str, *, chat_template: str | None = None, parser: str | None = None,
                    tools: Iterable[Mapping[str, Any]] | None = None) -> list[ToolCall]:
    """``(name, arguments)`` of every call in one raw model output (special tokens kept), reasoning removed.

    ``tools`` (OpenAI-shaped tool schemas, as offered) type the values of families that write them as
    bare text, and name the tools a bare Python-style call may call. ``parser`` names the reader
    (:class:`UnknownName` for an unknown one)."""
    named = get_reader(parser) if parser else None
    return _read(text, named, None if named else reader_for_template(chat_template), tools)


def read_calls(text: str, chat_template: str | None = None, *, parser: str | None = None,
               tools: Iterable[Mapping[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The tool calls in one raw model output, as ``[{"name": str, "arguments": dict}, ...]`` (``[]``: none).

    The output is read as the model's backend gives it, special tokens kept; reasoning (``<think>``,
    GPT-OSS's analysis channel, ...) is removed first and never read as a call. The model family's call
    syntax is chosen from ``chat_template`` (the Jinja text) when given, else recognised from the text's
    own markers; ``parser`` names a reader instead (``apibank.generate.toolcalls.reader_names()``).
    An answer in no recognised syntax makes no call, even if it holds JSON objects with a "name" key.

    >>> read_calls('<think>{"name": "x"}?</think><tool_call>{"name": "GetToday", "arguments": {}}</tool_call>')
    [{'name': 'GetToday', 'arguments': {}}]
    >>> read_calls('The answer is {"name": "Alice", "arguments": {"age": 3}}.')
    []
    """
    return [{"name": name, "arguments": arguments}
            for name, arguments in read_tool_calls(text, chat_template=chat_template, parser=parser, tools=tools)]


__all__ = [
    "MAX_TEXT_CHARS", "READERS", "ParserChoice", "Reader", "ToolCall", "UnknownName", "answer_of", "calls_from_message",
    "calls_in_text", "get_reader", "read_calls", "read_tool_calls", "reader_for_template", "reader_for_text",
    "reader_names", "split_reasoning", "whole_answer_calls",
]
