"""Gemma 4: ``<|tool_call>call:NAME{key:<|"|>text<|"|>,n:3,flag:true,xs:[1,2]}<tool_call|>``.

The arguments are Gemma's own notation, not JSON: keys bare, strings between ``<|"|>`` marks and never
escaped, numbers, ``true``/``false``/``null``, lists and objects written the same way. Read by the
small parser below into literals, at most :data:`~apibank.generate.toolcalls.generic.MAX_DEPTH` deep.
"""

from __future__ import annotations

import json
import re
from typing import Any

from apibank.generate.toolcalls.generic import MAX_DEPTH, NAME, ToolCall, matches
from apibank.generate.toolcalls.registry import Reader, Schemas
from apibank.notation import MAX_CALL_CHARS

QUOTE = '<|"|>'
_CALL = re.compile(rf"<\|tool_call>\s*call:\s*({NAME})\s*(?=\{{)")
_BARE = re.compile(r"[^,:{}\[\]<]*")


class _Refused(ValueError):
    pass


class _Notation:
    def __init__(self, text: str) -> None:
        self.text, self.at = text, 0

    def skip(self) -> None:
        while self.at < len(self.text) and self.text[self.at].isspace():
            self.at += 1

    def expect(self, char: str) -> None:
        self.skip()
        if not self.text.startswith(char, self.at):
            raise _Refused(char)
        self.at += len(char)

    def string(self) -> str | None:
        self.skip()
        if self.text.startswith(QUOTE, self.at):
            end = self.text.find(QUOTE, self.at + len(QUOTE))
            if end < 0:
                raise _Refused("unclosed string")
            value, self.at = self.text[self.at + len(QUOTE):end], end + len(QUOTE)
            return value
        if self.text.startswith('"', self.at):  # a JSON string, as some models write it
            decoder = json.JSONDecoder()
            try:
                value, self.at = decoder.raw_decode(self.text, self.at)
            except ValueError:
                raise _Refused("bad string") from None
            return value
        return None

    def value(self, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise _Refused("too deep")
        self.skip()
        text = self.string()
        if text is not None:
            return text
        if self.text.startswith("{", self.at):
            return self.mapping(depth + 1)
        if self.text.startswith("[", self.at):
            return self.sequence(depth + 1)
        bare = _BARE.match(self.text, self.at)
        word = bare.group().strip() if bare else ""
        if not word:
            raise _Refused("no value")
        self.at = bare.end()
        try:
            return json.loads(word)  # a number, true, false, null
        except ValueError:
            return word  # a bare word: the text the model meant

    def mapping(self, depth: int) -> dict[str, Any]:
        self.expect("{")
        result: dict[str, Any] = {}
        self.skip()
        if self.text.startswith("}", self.at):
            self.at += 1
            return result
        while True:
            key = self.string()
            if key is None:
                bare = _BARE.match(self.text, self.at)
                key = bare.group().strip() if bare else ""
                self.at = bare.end() if bare else self.at
            if not key or key in result:
                raise _Refused("bad key")
            self.expect(":")
            result[key] = self.value(depth)
            self.skip()
            if self.text.startswith("}", self.at):
                self.at += 1
                return result
            self.expect(",")

    def sequence(self, depth: int) -> list[Any]:
        self.expect("[")
        result: list[Any] = []
        self.skip()
        if self.text.startswith("]", self.at):
            self.at += 1
            return result
        while True:
            result.append(self.value(depth))
            self.skip()
            if self.text.startswith("]", self.at):
                self.at += 1
                return result
            self.expect(",")


def arguments(text: str, start: int) -> dict[str, Any] | None:
    """The object in Gemma's notation opening at ``text[start]`` (None if it does not read)."""
    notation = _Notation(text[start:start + MAX_CALL_CHARS])
    try:
        return notation.mapping(1)
    except (_Refused, RecursionError):
        return None


def read(text: str, schemas: Schemas | None = None) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for match in matches(_CALL, text):
        found = arguments(text, match.end())
        if found is not None:
            calls.append((match.group(1), found))
    return calls


READERS = (Reader("gemma4", read, priority=70, template_markers=(("<|tool_call>",),), text_markers=(re.compile(r"<\|tool_call>\s*call:"),),
                  summary='<|tool_call>call:NAME{key:<|"|>v<|"|>}<tool_call|>'),)
