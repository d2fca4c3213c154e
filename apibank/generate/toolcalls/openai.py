"""GPT-OSS (OpenAI harmony): a call is a ``commentary`` message addressed ``to=functions.NAME``, e.g.
``<|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{...}<|call|>``
(the recipient may also stand before ``<|channel|>``). Analysis-channel messages are reasoning, removed
before reading (:mod:`~apibank.generate.toolcalls.reasoning`).

The ``openai-harmony`` package parses token ids, not text, and loads its vocabulary from the network on
first use, so raw text is read here."""

from __future__ import annotations

import re

from apibank.generate.toolcalls.generic import NAME, ToolCall, prefixed_calls
from apibank.generate.toolcalls.registry import Reader, Schemas

# the header between the recipient and the message: channel, content type, never another message
_CALL = re.compile(rf"to=functions\.({NAME})(?:(?!<\|message\|>|<\|end\|>|<\|call\|>).){{0,200}}<\|message\|>\s*",
                   re.DOTALL)


def read(text: str, schemas: Schemas | None = None) -> list[ToolCall]:
    return prefixed_calls(text, _CALL)


READERS = (Reader("openai", read, priority=90, template_markers=(("<|channel|>", "<|call|>"),),
                  text_markers=(re.compile(r"to=functions\.[A-Za-z_]"),),
                  summary="<|channel|>commentary to=functions.NAME <|message|>{JSON}<|call|>"),)
