"""Turning a dataset row into what a model sees, in one of three prompt formats.

* ``paper``: the upstream test-data texts, ``instruction`` + newline + ``input``, as the benchmark's
  released samples give them (level 3 can use the in-context-example instruction instead); a
  backend sends it as one user turn through the chat template when the tokenizer has one (an
  instruct model's native way to take a prompt), else as plain completion text;
* ``chat``: the dialogue as chat messages, API results as ``tool`` messages, the tool descriptions and
  the expected answer format in a system message;
* ``tools``: native function calling: the tools' JSON schemas go to the chat template, earlier calls
  are assistant ``tool_calls`` and their results ``tool`` messages.

Nothing here needs a tokenizer: a :class:`Conversation` is rendered to text by a backend.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from apibank.benchmark import FORMATS, level_spec
from apibank.data.rendering import result_shown, turn_arguments
from apibank.notation import REQUEST_FORMAT, display, render_request

Message = dict[str, Any]



@dataclass
class Conversation:
    row_id: str
    level: int
    kind: str  # "api" or "response"
    format: str
    messages: list[Message]
    tools: list[dict[str, Any]] | None = None
    # The completion-style text of the paper format (None for chat/tools).
    plain_text: str | None = None
    gold: str = field(default="", repr=False)


def tool_schema(name: str, description_line: str, level: int) -> dict[str, Any]:
    """The OpenAI function schema of a row's tool: the registry's, or one derived from its description.

    Every row format with native tools goes through this one function: ``--format tools`` at test
    time and the ``training-chat`` examples, so a model is tested on the schemas it was trained on."""
    from apibank_tools.registry import parameter_schema, toolset

    tools = toolset(level_spec(level).toolset)
    if name in tools:
        return tools.json_schema(name)
    # A tool outside the registry (the training set's APIs): derive the schema from the prompt
    # description, which has either the level-1/2 keys or the level-3 header keys
    # (apiCode/parameters). Training and test rows both get their schemas here.
    described = json.loads(description_line) if description_line else {}
    params = described.get("input_parameters", described.get("parameters", {})) or {}
    properties = {
        key: parameter_schema(spec.get("type"), spec.get("description", "")) if isinstance(spec, dict)
        else parameter_schema(None, "")
        for key, spec in params.items()
    }
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": described.get("description", ""),
            "parameters": {"type": "object", "properties": properties, "required": list(params)},
        },
    }


def _system_prompt(row: Mapping[str, Any], with_descriptions: bool) -> str:
    year = level_spec(row["level"]).year
    year = f"The current year is {year}.\n" if year else ""
    if row["kind"] == "api":
        task = (
            "You are an AI assistant that calls APIs to help the user.\n"
            f"{year}Generate the API request the AI should make next, based on the dialogue so far. "
        )
        task += (
            f"Reply with only the request, in the format {REQUEST_FORMAT}."
            if with_descriptions
            else "Make the call with the tools you are given."
        )
    else:
        task = (
            "You are an AI assistant that calls APIs to help the user.\n"
            f"{year}Generate the AI's next response to the user, based on the dialogue and the API results."
        )
    if not with_descriptions:
        return task
    lines = "\n".join(tool["description"] for tool in row["tools"])
    return f"{task}\n\nAPI descriptions:\n{lines}"


def _history_messages(row: Mapping[str, Any], native_tools: bool) -> list[Message]:
    messages: list[Message] = []
    for index, turn in enumerate(row["history"]):
        role = turn["role"]
        if role == "User":
            messages.append({"role": "user", "content": turn["text"]})
        elif role == "AI":
            messages.append({"role": "assistant", "content": turn["text"]})
        elif role == "API":
            arguments = turn_arguments(turn)
            shown = result_shown(turn, row["level"])
            if native_tools:
                call_id = f"call_{index}"
                messages.append(
                    {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [
                            {
                                "id": call_id,
                                "type": "function",
                                "function": {"name": turn["api_name"], "arguments": arguments},
                            }
                        ],
                    }
                )
                content = json.dumps(shown, ensure_ascii=False)
                messages.append({"role": "tool", "tool_call_id": call_id, "name": turn["api_name"], "content": content})
            else:
                messages.append({"role": "assistant", "content": render_request(turn["api_name"], arguments)})
                # The id answers no structured call here, but servers validating the OpenAI schema
                # (llama-cpp-python) require every tool message to carry one.
                messages.append(
                    {"role": "tool", "tool_call_id": f"call_{index}", "name": turn["api_name"], "content": display(shown)}
                )
        else:
            raise ValueError(f"row {row['id']}: unknown history role {role!r}")
    return messages


def paper_text(row: Mapping[str, Any], icl: bool = False) -> str:
    """The upstream prompt: instruction, newline, input (the input ends with the ``Generate ...`` trailer)."""
    instruction = row["instruction"]
    if icl and row.get("instruction_icl"):
        instruction = row["instruction_icl"]
    return f"{instruction}\n{row['input']}"


def gold_text(row: Mapping[str, Any]) -> str:
    return row["expected_output"]


def build_conversation(row: Mapping[str, Any], fmt: str, *, icl: bool = False) -> Conversation:
    if fmt not in FORMATS:
        raise ValueError(f"unknown prompt format {fmt!r}; expected one of {FORMATS}")
    common = dict(row_id=row["id"], level=int(row["level"]), kind=row["kind"], format=fmt, gold=gold_text(row))
    if fmt == "paper":
        text = paper_text(row, icl)
        return Conversation(messages=[{"role": "user", "content": text}], plain_text=text, **common)
    native = fmt == "tools"
    messages = [{"role": "system", "content": _system_prompt(row, with_descriptions=not native)}]
    messages += _history_messages(row, native_tools=native)
    tools = [tool_schema(t["name"], t["description"], int(row["level"])) for t in row["tools"]] if native else None
    return Conversation(messages=messages, tools=tools, **common)


def chat_conversation(
    messages: list[Message],
    tools: list[dict[str, Any]] | None = None,
    *,
    conversation_id: str = "chat",
    level: int = 0,
    kind: str = "api",
) -> Conversation:
    """A free chat for any backend (an agent's step): native function calling (the ``tools`` format)
    when ``tools`` are given. Tool-call arguments sent as JSON text (the OpenAI wire form) become
    objects, as chat templates expect them."""
    normalised = []
    for message in messages:
        if message.get("tool_calls"):
            message = {**message, "tool_calls": [call_with_object_arguments(call) for call in message["tool_calls"]]}
        normalised.append(message)
    return Conversation(row_id=conversation_id, level=level, kind=kind, format="tools" if tools else "chat",
                        messages=normalised, tools=list(tools) if tools else None)


def call_with_object_arguments(call: Mapping[str, Any]) -> dict[str, Any]:
    """An OpenAI-style tool call whose arguments, when sent as JSON text of an object, are that object."""
    function = dict(call.get("function") or {})
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            function["arguments"] = parsed
    return {**call, "function": function}
