"""API-Bank rows in the formats trainers take, from one converter for training and test rows.

* ``chat`` (the ``training-chat`` config): ``messages`` + ``tools``, the layout of TRL's
  ``SFTTrainer`` for tool calling. The messages are exactly what ``--format tools`` sends at test
  time (system text, dialogue, each earlier API request as an assistant ``tool_calls`` entry with an
  arguments object, each result as a ``tool`` message), followed by the answer: an assistant tool
  call for API samples, assistant text for response samples. ``tools`` holds the JSON schemas
  :func:`apibank.generate.conversation.tool_schema` gives at test time.
* ``prompt-completion`` (``training-prompt-completion``): ``prompt`` is byte for byte what
  ``--format paper`` sends (:func:`apibank.generate.conversation.paper_text`), ``completion`` the
  upstream expected output.

Training rows are upstream's flattened samples read back into dialogues
(:func:`apibank.train.upstream_text.parse_flattened`); test rows come as the test configs hold them.
Every sample is checked before it is kept: each call names a described tool (offered to the sample
or returned by an earlier ToolSearcher result) and only its declared parameters, and the answer's
tool call converts back to the original request text. A sample failing a check is listed with its
cause in :class:`Conversion`, never dropped silently.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping

from apibank.benchmark import SEARCHER
from apibank.data.configs import TEST_CONFIGS, TRAINING_CONFIG
from apibank.data.dialogues import Source
from apibank.data.rendering import turn_quoting
from apibank.data.rows import iter_rows
from apibank.generate.conversation import build_conversation, paper_text
from apibank.notation import render_request
from apibank.train.upstream_text import Unconvertible, declared_parameters, described_tools, parse_flattened, response_text

TRAINER_FORMATS = ("chat", "prompt-completion")
# Exported config name -> the format its rows hold.
TRAINER_CONFIGS = {"training-chat": "chat", "training-prompt-completion": "prompt-completion"}


@dataclass(frozen=True)
class Failure:
    id: str
    cause: str
    detail: str

    def as_dict(self) -> dict[str, str]:
        return {"id": self.id, "cause": self.cause, "detail": self.detail}


@dataclass
class Conversion:
    """Converted examples per format and every sample that could not be converted."""

    examples: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {fmt: [] for fmt in TRAINER_FORMATS})
    failures: list[Failure] = field(default_factory=list)
    seen: int = 0

    def by_cause(self) -> dict[str, int]:
        return dict(sorted(Counter(failure.cause for failure in self.failures).items()))

    def summary(self) -> str:
        converted = len(self.examples[TRAINER_FORMATS[0]])
        causes = ", ".join(f"{cause}: {count}" for cause, count in self.by_cause().items())
        return f"{converted} of {self.seen} samples converted" + (f"; not converted: {causes}" if causes else "")


# ---------------------------------------------------------------------------------- checks
def check_calls(row: Mapping[str, Any]) -> None:
    """Every call of ``row`` (history and answer) names a described tool and only its declared
    parameters; raises :class:`Unconvertible` otherwise."""
    declared: dict[str, dict[str, Any]] = {}
    for tool in row["tools"]:
        described = json.loads(tool["description"]) if tool["description"] else {}
        declared[tool["name"]] = declared_parameters(described) or {}
    calls = [turn for turn in row["history"] if turn["role"] == "API"]
    if row["kind"] == "api":
        calls.append(row["target"])
    for turn in calls:
        name = turn["api_name"]
        if name not in declared:
            raise Unconvertible("call to a tool neither offered nor found by a search", name)
        arguments = json.loads(turn["arguments"]) if turn["arguments"] else {}
        extra = [key for key in arguments if key not in declared[name]]
        if extra:
            raise Unconvertible("parameter the tool does not declare", f"{name}({', '.join(extra)})")
        if name == SEARCHER and turn.get("result"):
            for found in described_tools(json.loads(turn["result"])):
                declared[found["name"]] = declared_parameters(found) or {}


def _check_back(row: Mapping[str, Any], messages: list[dict[str, Any]]) -> None:
    """The converted answer reads back as the original: the tool call renders to the request text
    (with the sample's own quoting), the text to the expected response."""
    answer = messages[-1]
    if row["kind"] == "api":
        function = answer["tool_calls"][0]["function"]
        text = render_request(function["name"], function["arguments"], turn_quoting(row["target"]))
        if text != row["expected_output"]:
            raise Unconvertible("answer does not convert back", f"{text[:100]!r} != {row['expected_output'][:100]!r}")
    elif answer["content"] != response_text(row["expected_output"]):
        raise Unconvertible("answer does not convert back", answer["content"][:100])


# ---------------------------------------------------------------------------------- conversion
def answer_message(row: Mapping[str, Any]) -> dict[str, Any]:
    """The assistant turn a sample teaches: its tool call, or its response text."""
    target = row["target"]
    if row["kind"] == "api":
        call_id = f"call_{len(row['history'])}"
        arguments = json.loads(target["arguments"]) if target["arguments"] else {}
        call = {"id": call_id, "type": "function", "function": {"name": target["api_name"], "arguments": arguments}}
        return {"role": "assistant", "content": "", "tool_calls": [call]}
    return {"role": "assistant", "content": target["text"]}


def chat_example(row: Mapping[str, Any]) -> dict[str, Any]:
    conversation = build_conversation(row, "tools")
    messages = [*conversation.messages, answer_message(row)]
    return {"id": row["id"], "level": int(row["level"]), "kind": row["kind"],
            "messages": messages, "tools": conversation.tools or []}


def prompt_completion_example(row: Mapping[str, Any]) -> dict[str, Any]:
    return {"id": row["id"], "level": int(row["level"]), "kind": row["kind"],
            "prompt": paper_text(row), "completion": row["expected_output"]}


def convert_row(row: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """{format: example} for one dialogue row, after every check; raises :class:`Unconvertible`."""
    check_calls(row)
    chat = chat_example(row)
    _check_back(row, chat["messages"])
    return {"chat": chat, "prompt-completion": prompt_completion_example(row)}


def convert(rows: Iterable[Mapping[str, Any] | Failure]) -> Conversion:
    """Convert dialogue rows; a :class:`Failure` in the input (a sample that could not be read) is
    listed as it is."""
    result = Conversion()
    for row in rows:
        result.seen += 1
        if isinstance(row, Failure):
            result.failures.append(row)
            continue
        try:
            examples = convert_row(row)
        except Unconvertible as error:
            result.failures.append(Failure(row["id"], error.cause, error.detail))
            continue
        for fmt, example in examples.items():
            result.examples[fmt].append(example)
    return result


# ---------------------------------------------------------------------------------- sources
def training_dialogues(
    data_dir: str | os.PathLike[str] | None = None,
    levels: Iterable[int] | None = None,
    *,
    source: Source | None = None,
) -> Iterator[dict[str, Any] | Failure]:
    """The training samples as dialogue rows, or a :class:`Failure` for one that cannot be read.

    Every level goes through this one path: the level-3 files of a local copy, the level-1/2 files
    once downloaded (or files handed over by ``source``, as the dataset builder does)."""
    for record in iter_rows(TRAINING_CONFIG, data_dir, levels=levels, source=source):
        try:
            yield parse_flattened(record, row_id=record["id"], level=int(record["level"]), kind=record["kind"])
        except Unconvertible as error:
            yield Failure(record["id"], error.cause, error.detail)


def evaluation_dialogues(data_dir: str | os.PathLike[str] | None = None) -> Iterator[dict[str, Any]]:
    for config in TEST_CONFIGS:
        yield from iter_rows(config, data_dir)


def convert_training(
    data_dir: str | os.PathLike[str] | None = None,
    levels: Iterable[int] | None = None,
    *,
    source: Source | None = None,
) -> Conversion:
    return convert(training_dialogues(data_dir, levels, source=source))
