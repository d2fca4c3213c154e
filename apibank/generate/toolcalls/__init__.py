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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from apibank.generate.toolcalls.engine import as_template, compiled, template_calls
from apibank.generate.toolcalls.generic import (
    ESCAPED, MAX_TEXT_CHARS, ToolCall, calls_from_message, schemas_of, whole_answer_calls,
)
from apibank.generate.toolcalls.reasoning import answer_of, split_reasoning
from apibank.generate.toolcalls.registry import (
    READERS, Reader, UnknownName, get_reader, reader_for_template, reader_for_text, reader_names,
)
from apibank.generate.toolcalls.json_anywhere import calls_in_text  # after the registry: it loads the readers


@dataclass(frozen=True)
class ParserChoice:
    """The reader a run uses and how it was chosen, in this order: a response template given
    (``--response-template FILE``: ``chosen_by`` "response_template") or a reader named (``--tool-parser``:
    "flag"); else the model's own response template (``model_template``, read with the prompt) and behind
    it the family the chat template's markers select ("template"); else each output's own markers ("text",
    ``name`` None). A response template that finds no call leaves the output to the reader behind it."""

    name: str | None
    chosen_by: str  # "response_template", "flag", "template" or "text"
    response_template: Mapping[str, Any] | None = field(default=None, compare=False)  # the user's
    template_file: str | None = None  # where the user's came from (None: given as a dict)
    model_template: Mapping[str, Any] | None = field(default=None, compare=False)  # the tokenizer's own
    model_template_refused: str | None = None  # why transformers' loader refused the tokenizer's own

    @classmethod
    def make(cls, parser: str | None, chat_template: str | None, *,
             response_template: Mapping[str, Any] | str | Path | None = None,
             model_template: Mapping[str, Any] | None = None) -> "ParserChoice":
        """ValueError for a response template that is no JSON file or that transformers refuses, and
        :class:`UnknownName` for an unknown parser."""
        named = get_reader(parser).name if parser else None
        model, refused = None, None
        if model_template:
            try:
                model = as_template(model_template, "the model's own response template")
            except ValueError as error:  # one this transformers cannot run: the markers' family reads instead
                refused = str(error)
        if response_template is not None:
            template_file = str(response_template) if isinstance(response_template, (str, Path)) else None
            return cls(named, "response_template", as_template(response_template), template_file, None)
        if named:
            return cls(named, "flag")
        reader = reader_for_template(chat_template)
        return cls(reader.name if reader else None, "template" if reader else "text", model_template=model,
                   model_template_refused=refused)

    def as_dict(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"name": self.name or "auto", "chosen_by": self.chosen_by}
        if self.response_template is not None:
            shown["response_template"] = self.template_file or "given"
        elif self.model_template is not None:
            shown["response_template"] = "the model's own"
        elif self.model_template_refused:
            shown["response_template"] = self.model_template_refused
        return shown

    def read(self, text: str, tools: Iterable[Mapping[str, Any]] | None = None, *, prompt: str = ""
             ) -> list[ToolCall]:
        """The calls in one raw output, read as :func:`read_tool_calls` would with this choice's inputs;
        ``prompt``: what the model was given, which the model's own response template reads first."""
        schemas = schemas_of(tools) or None
        if self.model_template is not None:
            calls = template_calls(text, compiled(self.model_template), schemas, strict=False, prefix=prompt)
            if calls:
                return calls
        _, rest = split_reasoning((text or "")[:MAX_TEXT_CHARS])
        if self.response_template is not None:
            calls = template_calls(rest, compiled(self.response_template), schemas, strict=False)
            if calls:
                return calls
        reader = get_reader(self.name) if self.name else None
        # Some servers and chat UIs hand back the output HTML-escaped (&quot;, &#34;): read it unescaped too.
        for candidate in (rest, html.unescape(rest)) if ESCAPED.search(rest) else (rest,):
            readers = [reader] if reader and self.chosen_by != "template" else [reader, reader_for_text(candidate)]
            for family in dict.fromkeys(family for family in readers if family is not None):
                calls = family.read(candidate, schemas)
                if calls:
                    return calls
            calls = whole_answer_calls(candidate, schemas)
            if calls:
                return calls
        return []


def read_tool_calls(text: str, *, chat_template: str | None = None, parser: str | None = None,
                    tools: Iterable[Mapping[str, Any]] | None = None,
                    response_template: Mapping[str, Any] | str | Path | None = None) -> list[ToolCall]:
    """``(name, arguments)`` of every call in one raw model output (special tokens kept), reasoning removed.

    ``tools`` (OpenAI-shaped tool schemas, as offered) type the values of families that write them as
    bare text, and name the tools a bare Python-style call may call. ``parser`` names the reader
    (:class:`UnknownName` for an unknown one); ``response_template`` (a transformers response template, or
    the path of its JSON file) is read first (ValueError for one transformers refuses)."""
    return ParserChoice.make(parser, chat_template, response_template=response_template).read(text, tools)


def read_calls(text: str, chat_template: str | None = None, *, parser: str | None = None,
               tools: Iterable[Mapping[str, Any]] | None = None,
               response_template: Mapping[str, Any] | str | Path | None = None) -> list[dict[str, Any]]:
    """The tool calls in one raw model output, as ``[{"name": str, "arguments": dict}, ...]`` (``[]``: none).

    The output is read as the model's backend gives it, special tokens kept; reasoning (``<think>``,
    GPT-OSS's analysis channel, ...) is removed first and never read as a call. The model family's call
    syntax is chosen from ``chat_template`` (the Jinja text) when given, else recognised from the text's
    own markers; ``parser`` names a reader instead (``apibank.generate.toolcalls.reader_names()``).
    ``response_template``: a transformers response template (a dict, or the path of a JSON file holding
    one or a spec file of ``apibank/generate/toolcalls/specs``), read first by transformers' engine; a
    file that is no such template raises ValueError. An answer in no recognised syntax makes no call, even
    if it holds JSON objects with a "name" key.

    >>> read_calls('<think>{"name": "x"}?</think><tool_call>{"name": "GetToday", "arguments": {}}</tool_call>')
    [{'name': 'GetToday', 'arguments': {}}]
    >>> read_calls('The answer is {"name": "Alice", "arguments": {"age": 3}}.')
    []
    >>> read_calls('<<GetToday {}>>', response_template={"version": 1, "start_anchor": "<|assistant|>", "fields": {
    ...     "tool_calls": {"open_pattern": "<<(?P<name>\\w+) ", "close": ">>", "content": "json", "repeats": True,
    ...                    "transform": {"name": "{name}", "arguments": "{content}"}}}})
    [{'name': 'GetToday', 'arguments': {}}]
    """
    return [{"name": name, "arguments": arguments}
            for name, arguments in read_tool_calls(text, chat_template=chat_template, parser=parser, tools=tools,
                                                   response_template=response_template)]


__all__ = [
    "MAX_TEXT_CHARS", "READERS", "ParserChoice", "Reader", "ToolCall", "UnknownName", "answer_of", "calls_from_message",
    "calls_in_text", "get_reader", "read_calls", "read_tool_calls", "reader_for_template", "reader_for_text",
    "reader_names", "split_reasoning", "whole_answer_calls",
]
