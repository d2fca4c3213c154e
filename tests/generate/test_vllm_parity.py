"""vLLM's own parsers as the oracle: every tool-call family that both the package and vLLM read, read both ways
on the same texts, with the same calls found, or each disagreement recorded with why vLLM's reading is wrong.

For each family (a vLLM ``--tool-call-parser`` name the package reads too), the texts are: the gold call of all
779 API rows written in the family's documented format (``support.native_calls``) and through every shipped
real template of the family that renders assistant calls (``support.template_calls``); two parallel calls; a
call after a reasoning block that holds a draft call (the family's own reasoning markers); prose holding JSON
objects with a ``"name"`` key. The package reads each with ``apibank.read_calls(text, parser=NAME,
tools=...)``; vLLM with its own classes, offline, as its server reads a finished output: the tool parser
composed with the family's reasoning parser (``ParserManager``), over a small local tokenizer holding the
family's special tokens (no Hub download), given a ``ChatCompletionRequest`` that offers the rows' tools.
(name, arguments) lists are compared.

The disagreements are data, ``benchmarks/vllm-parity.json``: this module asserts they stay exactly that list,
each with a reason; ``docs/templates.md`` shows them (``benchmarks/template_conformance.py`` writes the table
and the matrix's parity column from the file). After a reader changes, rewrite the file in vLLM's
environment (recorded reasons are kept; a new disagreement gets none, and the test fails until one is
written)::

    PYTHONPATH=$PWD $VENV/bin/python tests/generate/test_vllm_parity.py --data-dir ../shared/apibank-upstream

Skipped where vLLM is not installed; ``.ci/vllm-cpu`` runs it in vLLM's CPU environment.
"""

from __future__ import annotations

import copy
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

if __name__ == "__main__":  # run as a script (rewriting the record): the tests' support folder
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from support.native_calls import WRITERS, Call
from support.paths import REPO
from support.template_calls import RENDERING, TemplateWriter, template_text
from support.tiny import train_tokenizer

import apibank
from apibank.benchmark import LEVELS
from apibank.generate.conversation import build_conversation
from apibank.generate.toolcalls import reader_for_template
from apibank.notation import parse_request

RECORD = REPO / "benchmarks" / "vllm-parity.json"

# The reasoning parser a vLLM server of each family's thinking models runs beside its tool parser: the one of
# the same name where vLLM has it, else the one its models use (below), else vLLM's plain ``<think>`` parser
# (``deepseek_r1``); the reasoning case writes that parser's block (its markers as the package's
# ``reasoning_markers.json`` records them for that parser).
REASONING_PARSER = {"hermes": "qwen3", "qwen3_coder": "qwen3", "qwen3_xml": "qwen3", "qwen3_json": "qwen3",
                    "deepseek_v31": "deepseek_v3", "deepseek_v32": "deepseek_v3", "openai": "openai_gptoss"}


def reasoning_of(family: str) -> tuple[str, str, str]:
    """(vLLM reasoning parser, opener, closer) of a family's thinking models."""
    from vllm.reasoning import ReasoningParserManager

    from apibank.generate.toolcalls.reasoning import BLOCKS

    registered = ReasoningParserManager.list_registered()
    parser = REASONING_PARSER.get(family) or (family if family in registered else "deepseek_r1")
    block = next(block for block in BLOCKS if parser in block.parsers or (parser == "qwen3" and block.name == "think"))
    return parser, block.openers[0] + ("\n" if block.name == "gemma4" else ""), block.closers[0]


# Special tokens a parser looks up in the vocabulary without the family's texts holding them.
EXTRA_TOKENS = {"llama3_json": ["<|python_tag|>"], "llama4_json": ["<|python_tag|>"], "poolside_v1": ["<assistant>"]}
# What looks like a special token in the families' texts: <|...|>, DeepSeek's <｜...｜>, [TOOL_CALLS], <tool_call>,
# <|tool_call>, <ifm|think>, <mm:think>, ...
SPECIAL = re.compile(r"<\|[^|<>\s]*\|>|<｜[^｜]*｜>|\[/?[A-Z_]+\]|</?[A-Za-z_:|]{1,30}>")
PROSE = ['Your record reads {"name": "John", "arguments": {"age": 3}} in the database.',
         'Stored: [{"name": "AddAlarm", "parameters": {"time": "9"}}], as you asked.',
         '{"name": "John", "age": 3}']
PARALLEL = (0, 100)  # the gold calls of these API rows, written together
REAL, DRAFT = 0, 500  # the call after the reasoning block, the draft call inside it


def vllm_families() -> list[str]:
    """The families both read: the package's readers that vLLM registers under the same name."""
    from vllm.tool_parsers import ToolParserManager

    ours = {name.replace("-", "_") for name in WRITERS}
    return sorted(name for name in ToolParserManager.list_registered() if name.replace("-", "_") in ours)


def writer_of(family: str):
    """The documented-format writer of a family, by vLLM's name (hyphens and underscores alike)."""
    return {name.replace("-", "_"): write for name, write in WRITERS.items()}[family.replace("-", "_")]


@dataclass(frozen=True)
class Case:
    kind: str  # "gold" (documented format), "gold via TEMPLATE", "parallel", "reasoning", "prose"
    row: str | None  # the API row whose gold call the text holds
    text: str
    tools: list[dict[str, Any]]
    expected: list[Call]


def _merged(*tool_lists: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return list({tool["function"]["name"]: tool for tools in tool_lists for tool in tools}.values())


def cases(family: str, rows: list[dict[str, Any]]) -> list[Case]:
    gold = [parse_request(row["expected_output"])[:2] for row in rows]
    tools = [build_conversation(row, "tools").tools for row in rows]
    writers = {"gold": writer_of(family)}
    writers |= {f"gold via {name}": TemplateWriter(name) for name in RENDERING
                if str(getattr(reader_for_template(template_text(name)), "name", None)).replace("-", "_")
                == family.replace("-", "_")}
    out = [Case(kind, row["id"], write([call]), row_tools, [call])
           for kind, write in writers.items() for row, call, row_tools in zip(rows, gold, tools)]
    write = writers["gold"]
    both = [gold[i] for i in PARALLEL]
    out.append(Case("parallel", None, write(both), _merged(*(tools[i] for i in PARALLEL)), both))
    _, opener, closer = reasoning_of(family)
    name, arguments = gold[DRAFT]
    # harmony's markers are structure even inside a message: its draft is the call's text without them
    draft = f"to=functions.{name} {json.dumps(arguments)}" if family == "openai" else write([gold[DRAFT]])
    out.append(Case("reasoning", None, f"{opener}Maybe {draft} first?{closer}{write([gold[REAL]])}",
                    _merged(tools[REAL], tools[DRAFT]), [gold[REAL]]))
    out += [Case("prose", None, text, tools[REAL], []) for text in PROSE]
    return out


class VllmReader:
    """One family's reading by vLLM, as its server reads a finished output: the tool parser alone (a model
    that does not think), or composed with the family's reasoning parser with thinking switched on (the
    reasoning case), over a local tokenizer that holds the family's special tokens. Harmony (``openai``) is
    one parser of both, read from harmony's own token ids."""

    def __init__(self, family: str, texts: list[str], base_tokenizer: Any):
        from vllm.parser.parser_manager import ParserManager

        self.family = family
        self.harmony = family == "openai"
        specials = sorted({token for text in texts for token in SPECIAL.findall(text)}
                          | set(EXTRA_TOKENS.get(family, ())))
        self.tokenizer = copy.deepcopy(base_tokenizer)
        self.tokenizer.add_special_tokens({"additional_special_tokens": specials})
        reasoning = reasoning_of(family)[0]
        self.parsers = {thinking: ParserManager.get_parser(
            tool_parser_name=family, reasoning_parser_name=reasoning if thinking or self.harmony else None,
            enable_auto_tools=True, is_harmony=self.harmony) for thinking in (False, True)}
        self._requests: dict[tuple[str, bool], Any] = {}

    def _request(self, tools: list[dict[str, Any]], thinking: bool) -> Any:
        from vllm.entrypoints.openai.chat_completion.protocol import (
            ChatCompletionRequest,
        )

        key = (json.dumps(tools, sort_keys=True), thinking)
        if key not in self._requests:
            options = {"enable_thinking": True, "thinking": True} if thinking else None
            self._requests[key] = ChatCompletionRequest(model=self.family, tools=tools, tool_choice="auto",
                                                        chat_template_kwargs=options,
                                                        messages=[{"role": "user", "content": "Hi"}])
        return self._requests[key]

    def read(self, text: str, tools: list[dict[str, Any]], thinking: bool = False) -> list[Call] | str:
        """The calls vLLM reads, or its error (``"error: ..."``)."""
        request = self._request(tools, thinking)
        try:
            parser = self.parsers[thinking](self.tokenizer, request.tools)
            if self.harmony:  # harmony's own encoding
                from vllm.entrypoints.openai.parser.harmony_utils import get_encoding

                token_ids = get_encoding().encode(text, allowed_special="all")
            else:  # the server gives the parser the output's token ids beside its text
                token_ids = self.tokenizer.encode(text, add_special_tokens=False)
            _, _, calls = parser.parse(text, request, enable_auto_tools=True, model_output_token_ids=token_ids)
            return [(call.name, json.loads(call.arguments)) for call in calls or []]
        except Exception as error:  # noqa: BLE001 - vLLM failing on a text is its reading of it
            return f"error: {type(error).__name__}: {error}"[:300]


def typed_calls(calls: list[Call], tools: list[dict[str, Any]]) -> list[Call]:
    """The calls with their string values typed by the offered tools' schemas, as the package reads them."""
    from support.native_calls import typed

    schemas = {tool["function"]["name"]: tool["function"]["parameters"] for tool in tools}
    return [(name, typed(name, dict(arguments), schemas)) for name, arguments in calls]


def package_reading(family: str, text: str, tools: list[dict[str, Any]]) -> list[Call]:
    return [(call["name"], call["arguments"]) for call in apibank.read_calls(text, parser=family, tools=tools)]


def _plain(calls: list[Call] | str) -> list[list[Any]] | str:
    return calls if isinstance(calls, str) else [[name, arguments] for name, arguments in calls]


def compare(family: str, rows: list[dict[str, Any]], base_tokenizer: Any) -> dict[str, Any]:
    """One family's texts read both ways: ``{"texts": n, "by_case": {kind: n}, "disagreements": [...]}``
    (each with its case, row, text and the two readings). Each template's texts get a tokenizer of their own,
    holding the special tokens of those texts and of the documented format (Mistral's parser reads ``[TOOL_CALLS]name[ARGS]{...}`` where the vocabulary holds ``[ARGS]``, as v11
    tokenizers do, and the older ``[TOOL_CALLS][{...}]`` otherwise)."""
    family_cases = cases(family, rows)
    documented = [case.text for case in family_cases if case.kind == "gold"]
    groups: dict[str, list[Case]] = {}
    for case in family_cases:
        groups.setdefault(case.kind if case.kind.startswith("gold via") else "documented", []).append(case)
    by_case: dict[str, int] = {}
    disagreements = []
    try:
        VllmReader(family, documented, base_tokenizer)
    except ImportError as error:  # a parser needing a package vLLM does not install (Cohere's cohere_melody)
        return {"texts": 0, "by_case": {}, "reasoning_parser": reasoning_of(family)[0],
                "unavailable": f"{type(error).__name__}: {str(error).splitlines()[0]}", "disagreements": []}
    for group in groups.values():
        vllm = VllmReader(family, documented + [case.text for case in group], base_tokenizer)
        for case in group:
            kind = "gold via template" if case.kind.startswith("gold via") else case.kind
            by_case[kind] = by_case.get(kind, 0) + 1
            ours = package_reading(family, case.text, case.tools)
            theirs = vllm.read(case.text, case.tools, thinking=case.kind == "reasoning")
            if _plain(ours) != _plain(theirs):
                entry = {"family": family, "case": case.kind, "row": case.row, "text": case.text,
                         "package": _plain(ours), "vllm": _plain(theirs),
                         "package_reads_the_gold": ours in (case.expected, typed_calls(case.expected, case.tools))}
                entry["kind"] = classify(entry, case.tools)
                disagreements.append(entry)
    return {"texts": len(family_cases), "by_case": by_case, "reasoning_parser": reasoning_of(family)[0],
            "disagreements": disagreements}


def _key(entry: dict[str, Any]) -> tuple[str, str, str]:
    """A disagreement's identity: family, case, and the API row whose gold call the text holds (else the text)."""
    return entry["family"], entry["case"], entry["row"] or entry["text"]


# The kinds :func:`classify` gives.
CLASSES = {"prose-object-read", "name-without-arguments", "unquoted-values-typed", "parallel-calls-raise", "vllm-raises",
           "draft-call-in-reasoning", "reasoning-misread", "unoffered-tool-dropped", "bracket-in-string-value",
           "call-unread", "name-misread", "python-true-as-boolean", "string-typed-by-schema", "strings-kept",
           "newlines-kept", "typed-against-schema", "arguments-lost", "values-differ"}


def _types(kind: Any) -> tuple[str, ...]:
    return (kind,) if isinstance(kind, str) else tuple(kind or ())


def classify(entry: dict[str, Any], tools: list[dict[str, Any]]) -> str:
    """The reason of a disagreement not recorded yet, by what differs (the record's ``reasons`` say why each is
    wrong); a kind no rule knows gets none, and the test fails until one is written."""
    ours, theirs, case = entry["package"], entry["vllm"], entry["case"]
    tools_offered = {tool["function"]["name"] for tool in tools}
    kinds = {(tool["function"]["name"], key): _types(spec.get("type")) for tool in tools
             for key, spec in tool["function"].get("parameters", {}).get("properties", {}).items()}
    if not entry["package_reads_the_gold"]:
        if case == "prose":
            return "prose-object-read" if ours and ours[0][1] else "name-without-arguments"
        return "unquoted-values-typed" if entry["family"] == "pythonic" else ""
    if isinstance(theirs, str):
        return "parallel-calls-raise" if case == "parallel" else "vllm-raises"
    if case == "reasoning":
        return "draft-call-in-reasoning" if theirs and theirs[0] != ours[0] else "reasoning-misread"
    if not theirs:
        if ours and ours[0][0] not in tools_offered:
            return "unoffered-tool-dropped"
        return "bracket-in-string-value" if "]" in json.dumps(ours[0][1]) else "call-unread"
    if [call[0] for call in theirs] != [call[0] for call in ours]:
        return "name-misread"
    if any(x and not y for (_, x), (_, y) in zip(ours, theirs)):
        return "arguments-lost"
    pairs = [(x.get(key), y.get(key), kinds.get((name, key), ())) for (name, x), (_, y) in zip(ours, theirs)
             for key in set(x) | set(y) if x.get(key) != y.get(key)]
    if pairs and all(isinstance(a, str) and a in ("True", "False") and isinstance(b, bool) for a, b, _ in pairs):
        return "python-true-as-boolean"
    if pairs and all(isinstance(a, str) and not isinstance(b, str) for a, b, _ in pairs):
        return "typed-against-schema" if any("string" in kind for _, _, kind in pairs) else "string-typed-by-schema"
    if pairs and all(not isinstance(a, str) and isinstance(b, str) for a, b, _ in pairs):
        return "strings-kept"
    if pairs and all(isinstance(a, str) and isinstance(b, str) and a == b.strip() for a, b, _ in pairs):
        return "newlines-kept"
    if pairs and any(isinstance(a, str) and not isinstance(b, str) for a, b, _ in pairs):
        return "typed-against-schema"
    return "values-differ"


def grouped(disagreements: list[dict[str, Any]], reasons: dict[tuple[str, str, str], str]) -> list[dict[str, Any]]:
    """The record's form of the disagreements: one entry per family, case and reason, with the rows (or the
    text) it covers and the first one's text and readings as its example."""
    groups: dict[tuple[str, str, str, bool], dict[str, Any]] = {}
    for entry in disagreements:
        recorded = reasons.get(_key(entry))
        # a reason written by hand stays; the kinds the rules give are given again (what differs may change)
        reason = recorded if recorded and recorded not in CLASSES else entry["kind"]
        key = (entry["family"], entry["case"], reason, entry["package_reads_the_gold"])
        if entry["row"] is None:
            key += (entry["text"],)
        group = groups.setdefault(key, {
            "family": entry["family"], "case": entry["case"], "reason": reason,
            "package_reads_the_gold": entry["package_reads_the_gold"], "rows": [],
            "example": {name: entry[name] for name in ("row", "text", "package", "vllm")}})
        if entry["row"] is not None:
            group["rows"].append(entry["row"])
    return list(groups.values())


def recorded_keys(group: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(group["family"], group["case"], row) for row in group["rows"]] or [
        (group["family"], group["case"], group["example"]["text"])]


# ------------------------------------------------------------------------------------------------ tests
@pytest.fixture(scope="module")
def record() -> dict[str, Any]:
    return json.loads(RECORD.read_text(encoding="utf-8"))


def gold_api_rows(data_dir: Any) -> list[dict[str, Any]]:
    """The 779 API rows of the three test levels, whose gold calls every family writes."""
    return [row for config in LEVELS for row in apibank.iter_rows(config, data_dir) if row["kind"] == "api"]


@pytest.fixture(scope="module")
def api_rows(data_dir) -> list[dict[str, Any]]:
    return gold_api_rows(data_dir)


@pytest.fixture(scope="module")
def base_tokenizer():
    return train_tokenizer(["some text"], 280)


def test_the_record_covers_every_family_both_read(record):
    pytest.importorskip("vllm")
    import vllm

    assert record["vllm"] == vllm.__version__
    assert sorted(record["families"]) == vllm_families()


def test_every_recorded_disagreement_says_why(record):
    """Each disagreement names its reason: why vLLM's reading is wrong, or, where the package misreads the text
    (``package_reads_the_gold`` false), what the package gets wrong."""
    for group in record["disagreements"]:
        reason = record["reasons"].get(group["reason"])
        assert reason and reason["why"], group
        assert reason["wrong"] == ("vllm" if group["package_reads_the_gold"] else "package"), group


@pytest.mark.parametrize("family", sorted(json.loads(RECORD.read_text(encoding="utf-8"))["families"])
                         if RECORD.exists() else [])
def test_vllm_reads_each_family_as_the_package_does_but_the_recorded_disagreements(family, record, api_rows,
                                                                                  base_tokenizer):
    pytest.importorskip("vllm")
    assert len(api_rows) == 779
    found = compare(family, api_rows, base_tokenizer)
    recorded = [group for group in record["disagreements"] if group["family"] == family]
    if found.get("unavailable") and not record["families"][family].get("unavailable"):
        pytest.skip(f"{family}: {found['unavailable']} (.ci/vllm-cpu installs what vLLM's parser imports)")
    assert found["texts"] == record["families"][family]["texts"]
    assert found.get("unavailable") == record["families"][family].get("unavailable")
    by_key = {_key(entry): entry for entry in found["disagreements"]}
    assert sorted(by_key) == sorted(key for group in recorded for key in recorded_keys(group))
    for group in recorded:  # each group's example reads as recorded, both ways
        example = by_key[recorded_keys(group)[0]]
        assert {name: example[name] for name in group["example"]} == group["example"]
        assert all(by_key[key]["package_reads_the_gold"] == group["package_reads_the_gold"]
                   for key in recorded_keys(group))


# ------------------------------------------------------------------------------ rewriting the record
def main(argv: list[str] | None = None) -> int:
    import argparse
    import logging
    import time

    import vllm

    parser = argparse.ArgumentParser(description="Rewrite benchmarks/vllm-parity.json (vLLM's environment).")
    parser.add_argument("--data-dir", required=True, help="local copy of the upstream API-Bank folder")
    args = parser.parse_args(argv)
    logging.getLogger("vllm").setLevel(logging.CRITICAL)  # its parsers log every text they cannot read
    old = json.loads(RECORD.read_text(encoding="utf-8")) if RECORD.exists() else {"reasons": {}, "disagreements": []}
    reasons = {key: group["reason"] for group in old["disagreements"] for key in recorded_keys(group)}
    rows = gold_api_rows(args.data_dir)
    tokenizer = train_tokenizer(["some text"], 280)
    families, disagreements = {}, []
    started = time.perf_counter()
    for family in vllm_families():
        found = compare(family, rows, tokenizer)
        families[family] = {key: value for key, value in found.items() if key != "disagreements"}
        families[family]["disagreements"] = len(found["disagreements"])
        disagreements += found["disagreements"]
        print(f"{family}: {found['texts']} texts, {len(found['disagreements'])} disagreements", file=sys.stderr)
    seconds = time.perf_counter() - started
    record = {"vllm": vllm.__version__, "rows": len(rows), "texts": sum(f["texts"] for f in families.values()),
              "families": families, "reasons": old["reasons"], "disagreements": grouped(disagreements, reasons)}
    RECORD.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(families)} families, {record['texts']} texts, {len(disagreements)} disagreements, {seconds:.0f} s",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
