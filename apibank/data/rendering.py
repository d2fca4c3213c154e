"""How the rows render the upstream dialogues as the benchmark's prompt text, and the tools they offer.

Requests are written in the call notation (:mod:`apibank.notation`); the turns and calls of a row are
the typed records the features hold (arguments and results as JSON text), and one renderer writes
their dialogue as a prompt's text, for the test rows and for the training files read back alike.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from apibank_tools.base import CallRejected

from apibank.benchmark import SEARCHER, TOOLSETS, level_spec
from apibank.notation import render_result_line

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
# The extra key of an API turn read from a training file recording how each value was quoted (JSON
# text), so that the request is written back as it was; test rows write every value single-quoted.
QUOTING = "quoting"


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


def turn_quoting(turn: Mapping[str, Any]) -> dict[str, str] | None:
    """How a training file's request quoted its values (None for test rows: every value single-quoted)."""
    return json.loads(turn[QUOTING]) if turn.get(QUOTING) else None


def turn_arguments(turn: Mapping[str, Any]) -> dict[str, Any]:
    """An API turn's recorded arguments (a turn record holds them as JSON text)."""
    return json.loads(turn["arguments"]) if turn.get("arguments") else {}


def result_shown(turn: Mapping[str, Any], level: int | str) -> Any:
    """What a prompt shows of an API turn's recorded result: its ``output``, or the whole record where
    the level shows full results (as the original prompts do). A turn record holds no text for a
    result of None (``turn_record``): it is shown as None."""
    record = json.loads(turn["result"]) if turn.get("result") else None
    if level_spec(level).full_results or not isinstance(record, dict):
        return record
    return record.get("output")


def render_dialogue(history: Iterable[Mapping[str, Any]], level: int | str) -> str:
    """The dialogue lines of a row's ``history`` as the upstream inputs write them: ``Role: text`` per
    turn, an executed call as its request and ``->`` its result."""
    lines = []
    for turn in history:
        if turn["role"] == "API":
            lines.append(render_result_line(turn["api_name"], turn_arguments(turn), result_shown(turn, level),
                                            turn_quoting(turn)))
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


def instruction_lines(instruction: str) -> list[str] | None:
    """The description lines of an upstream instruction, in order (None without ``API descriptions:``)."""
    start = instruction.find(API_PROMPT_END)
    if start < 0:
        return None
    return [line for line in instruction[start + len(API_PROMPT_END):].split("\n") if line]


def instruction_tools(instruction: str) -> list[tuple[str, str]]:
    """(name, description line) for each description line of an upstream instruction, in order."""
    return [(json.loads(line)["name"], line) for line in instruction_lines(instruction) or []]


def offered_tools(toolset: str, names: Iterable[str], lines: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"name": name, "description": describe(toolset, name, lines.get(name))} for name in names]


def level3_offered_tools() -> list[dict[str, str]]:
    """The tools every level-3 row offers: ToolSearcher alone, in the level-1/2 wording.

    The level-3 prompts show ToolSearcher as the level-1/2 tool set describes it; the level-3 tool's
    own description differs ("keyword" for "keywords"), so the offered line comes from level 1/2.
    """
    return [{"name": SEARCHER, "description": describe(TOOLSETS["level-1"], SEARCHER, TOOL_SEARCHER_LINE)}]


def render_requirement_input(level: int | str, history: Iterable[Mapping[str, Any]], kind: str) -> str:
    """The input of a row built from a requirements file (level 3): the ToolSearcher description line,
    the requirement and the earlier calls, the trailer."""
    return f"{LEVEL_3_HEADER}\n{render_dialogue(history, level)}{LEVEL_3_TRAILER[kind]}"
