"""The generic reader: every syntax of :func:`~apibank.generate.toolcalls.generic.calls_in_text` anywhere in
the text, JSON call objects inside prose included. Never chosen from a template or a text's markers
(prose holding a JSON object with a "name" key would become a call); chosen by name, where the
prompt itself asks for JSON calls (the agent's ``text`` tool format) or with ``--tool-parser json``."""

from __future__ import annotations

from apibank.generate.toolcalls.generic import ToolCall, calls_in_text
from apibank.generate.toolcalls.registry import Reader, Schemas


def read(text: str, schemas: Schemas | None = None) -> list[ToolCall]:
    return calls_in_text(text, list(schemas) if schemas else None)


READERS = (Reader("json", read, template_markers=(), summary="any of the syntaxes above, JSON calls in prose included"),)
