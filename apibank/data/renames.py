"""Parameters renamed in the tools after the dialogues were annotated, applied to recorded calls.

Each tool declares its renames (``Tool.renamed_parameters``, recorded name -> current name) and
applies them with ``Tool.current_arguments``; this module is where recorded calls meet that rule.
The judges and the agentic episodes map gold calls through here.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from apibank_tools.base import Record, Tool
from apibank_tools.registry import TOOLSETS, ToolSet


@functools.cache
def renamed_parameters() -> dict[str, dict[str, str]]:
    """Every tool's declared renames (recorded name -> current name), by tool name."""
    return {
        name: dict(tools.get(name).renamed_parameters)
        for tools in TOOLSETS.values() for name in tools.names() if tools.get(name).renamed_parameters
    }


def _renaming_tool(tool_name: str, tools: ToolSet | None) -> type[Tool] | None:
    if tools is not None:
        return tools.get(tool_name) if tool_name in tools else None
    for candidates in TOOLSETS.values():
        if tool_name in candidates and candidates.get(tool_name).renamed_parameters:
            return candidates.get(tool_name)
    return None


def renamed(tool_name: str, arguments: Any, tools: ToolSet | None = None) -> dict[str, Any]:
    """A copy of ``arguments`` with each renamed parameter under its current name, in its place.

    ``tools`` narrows the lookup to one tool set (a name the set lacks is left as it is); an old
    name stays when the new one is also given; anything but a dict gives ``{}``.
    """
    if not isinstance(arguments, dict):
        return {}
    tool = _renaming_tool(tool_name, tools)
    return tool.current_arguments(arguments) if tool is not None else dict(arguments)


def renamed_record(tool: type[Tool], record: Record) -> Record:
    """The recorded result with renamed parameters in its ``input`` (a copy when anything is renamed)."""
    if tool.renamed_parameters and isinstance(record.get("input"), dict):
        copied = copy.deepcopy(record)
        copied["input"] = tool.current_arguments(copied["input"])
        return copied
    return record
