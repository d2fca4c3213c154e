"""How the rows render the upstream dialogues as the benchmark's prompt text, and the tools they offer.

Requests are written as upstream writes them (``API-Request: [Name(key='value', ...)]``, values
str-rendered, never escaped); the turns and calls of a row are the typed records the features hold
(arguments and results as JSON text).
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from apibank_tools.base import CallRejected

from apibank.benchmark import SEARCHER, TOOLSETS

API_PROMPT_END = "API descriptions:\n"
LEVEL_12_TRAILER = {"api": "Generate API Request:\n", "response": "Generate AI Response:\n"}
LEVEL_3_TRAILER = {"api": "Generate API Request: \n", "response": "Generate AI Response: \n"}
# The ToolSearcher description that heads every level-3 input, in upstream's apiCode/parameters/response
# key style.
LEVEL_3_HEADER = (
    '{"apiCode": "ToolSearcher", "description": "Searches for relevant tools in library based on '
    'the keywords.", "parameters": {"keywords": {"type": "str", "description": "The keyword to '
    'search for."}}, "response": {"best_matchs": {"type": "Union[List[dict], dict]", '
    '"description": "The best match tool(s)."}}}'
)
# The same tool as a prompt description line; used while the registry lacks it.
TOOL_SEARCHER_LINE = (
    '{"name": "ToolSearcher", "description": "Searches for relevant tools in library based on the '
    'keywords.", "input_parameters": {"keywords": {"type": "str", "description": "The keyword to '
    'search for."}}, "output_parameters": {"best_matchs": {"type": "Union[List[dict], dict]", '
    '"description": "The best match tool(s)."}}}'
)


def render_parameters(arguments: Mapping[str, Any]) -> str:
    """``key='value'`` pairs in stored order; values str-rendered and never escaped (upstream)."""
    return ", ".join(f"{key}='{value}'" for key, value in arguments.items())


def render_request(api_name: str, arguments: Mapping[str, Any]) -> str:
    return f"API-Request: [{api_name}({render_parameters(arguments)})]"


def json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def turn_record(role: str, text: str = "", api_name: str = "", arguments: Any = None, result: Any = None) -> dict[str, str]:
    """One turn of a row's history or target: the recorded values as text (JSON for arguments and results)."""
    return {
        "role": role,
        "text": text,
        "api_name": api_name,
        "arguments": "" if arguments is None else json_text(arguments),
        "result": "" if result is None else json_text(result),
    }


def dialogue_turn(turn: Mapping[str, Any]) -> dict[str, str]:
    """A level-1/2 dialogue turn as a row's turn record."""
    if turn["role"] == "API":
        return turn_record("API", api_name=turn["api_name"], arguments=turn["param_dict"], result=turn["result"])
    return turn_record(turn["role"], text=turn["text"])


def call_record(api_name: str, arguments: Any, result: Any) -> dict[str, Any]:
    """A gold or earlier call as a reference holds it (structured arguments, the recorded result)."""
    return {"api_name": api_name, "arguments": arguments, "result": result}


def render_level12_history(turns: Iterable[Mapping[str, Any]]) -> str:
    lines = []
    for turn in turns:
        if turn["role"] == "API":
            lines.append(f"{render_request(turn['api_name'], turn['param_dict'])}->{turn['result']['output']}\n")
        else:
            lines.append(f"{turn['role']}: {turn['text']}\n")
    return "".join(lines)


def describe(toolset: str, name: str, fallback: str | None = None) -> str:
    """The registry's description line for ``name``, or ``fallback`` while the tool is not registered."""
    from apibank_tools.registry import toolset as get_toolset

    tools = get_toolset(toolset)
    try:
        return tools.describe(name)
    except CallRejected:
        if fallback is None:
            raise
        return fallback


def instruction_tools(instruction: str) -> list[tuple[str, str]]:
    """(name, description line) for each description line of an upstream instruction, in order."""
    start = instruction.find(API_PROMPT_END)
    if start < 0:
        return []
    listed = instruction[start + len(API_PROMPT_END):]
    return [(json.loads(line)["name"], line) for line in listed.split("\n") if line]


def offered_tools(toolset: str, names: Iterable[str], lines: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"name": name, "description": describe(toolset, name, lines.get(name))} for name in names]


def level3_offered_tools() -> list[dict[str, str]]:
    """The tools every level-3 row offers: ToolSearcher alone, in the level-1/2 wording.

    The level-3 prompts show ToolSearcher as the level-1/2 tool set describes it; the level-3 tool's
    own description differs ("keyword" for "keywords"), so the offered line comes from level 1/2.
    """
    return [{"name": SEARCHER, "description": describe(TOOLSETS["level-1"], SEARCHER, TOOL_SEARCHER_LINE)}]


def render_level3_input(requirement: str, calls: Iterable[Mapping[str, Any]], kind: str) -> str:
    lines = [LEVEL_3_HEADER + "\n", f"User: {requirement.strip()}\n"]
    for call in calls:
        lines.append(f"{render_request(call['api_name'], call['input'])}->{call['output']}\n")
    lines.append(LEVEL_3_TRAILER[kind])
    return "".join(lines)
