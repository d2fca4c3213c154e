"""Call-like markup that no reader read is counted after every run (``unread_calls`` beside the reader's name
in results.json, a warning in the summary): on a third-party backend, an OpenAI-compatible endpoint (the
stand-in server) and in agentic episodes; the markup itself is defined conservatively
(:mod:`apibank.generate.toolcalls.markup`)."""

from __future__ import annotations

import json

import pytest
from support.local_endpoint import ChatCompletions

import apibank_cli
from apibank.generate.backends import BACKEND_REGISTRY
from apibank.generate.toolcalls.markup import holds_call_markup

TOOLS = [{"name": "GetToday"}, {"type": "function", "function": {"name": "QueryMeeting", "parameters": {}}}]


@pytest.mark.parametrize("text", [
    '<tool_call>{"name": "GetToday", "arguments": {}}</tool_call>',  # a family the package reads
    '<minimax:tool_call><invoke name="GetToday"></invoke></minimax:tool_call>',
    '<｜DSML｜function_calls><｜DSML｜invoke name="GetToday"></｜DSML｜invoke>',
    '<TOOLCALL>[{"name": "GetToday", "arguments": {}}]</TOOLCALL>',
    '<acme:tool_call>{"name": "GetToday", "arguments": {}}</acme:tool_call>',  # a family no reader knows
    '<|tool_call_start|>[GetToday()]<|tool_call_end|>',
    'Sure. {"name": "QueryMeeting", "arguments": {"user": "a"}} is what I call.',
    'Sure. {"parameters": {"user": "a"}, "name": "QueryMeeting"}',
    "I will now run QueryMeeting(user='a') for you.",
    "Calling GetToday() now.",
    "<think>let me think</think>\n<tool_calls>[{\"name\": \"GetToday\"}]</tool_calls>",
])
def test_call_like_markup(text):
    assert holds_call_markup(text, TOOLS)


@pytest.mark.parametrize("text", [
    "",
    "The meeting is on Monday.",
    'The answer is {"name": "Alice", "age": 3}.',  # a JSON object with a "name" key alone
    "GetToday tells the date; QueryMeeting finds meetings.",  # tool names in prose
    "Call UnknownTool(x=1) if you like.",  # a Python-style call of no offered tool
    '<think>{"name": "GetToday", "arguments": {}}</think>The date is today.',  # a draft call while thinking
    "<think>still thinking <tool_call>{\"name\": \"GetToday\"",  # cut while thinking: all reasoning
    "Use a <b>bold</b> word or <a href='x'>a link</a>.",
])
def test_not_call_markup(text):
    assert not holds_call_markup(text, TOOLS)


@pytest.fixture
def toy_registered(monkeypatch):
    monkeypatch.setattr(BACKEND_REGISTRY, "_entries", dict(BACKEND_REGISTRY._entries))
    BACKEND_REGISTRY.register("toy", "support.toy_backend:ToyBackend")
    return BACKEND_REGISTRY


def toy_evaluate(reply: str, data_dir, output, capsys, fmt: str = "tools") -> tuple[dict, str]:
    status = apibank_cli.main(["evaluate", "--model", "toy-model", "--backend", "toy", "--reply", reply,
                               "--format", fmt, "--levels", "1", "--limit", "2", "--allow-subset",
                               "--data-dir", str(data_dir), "--output", str(output), "--quiet"])
    printed = capsys.readouterr()
    assert status == 0, printed.err
    return json.loads((output / "results.json").read_text()), printed.out


def test_a_backend_without_a_reader_of_the_models_format_is_counted(toy_registered, data_dir, tmp_path, capsys):
    """The toy backend reads no call: every output holding MiniMax-style markup is an unread call."""
    results, printed = toy_evaluate('<minimax:tool_call><invoke name="GetToday"></invoke></minimax:tool_call>',
                                    data_dir, tmp_path / "unread", capsys)
    assert results["tool_parser"] == {"name": None, "chosen_by": "backend", "unread_calls": 4}
    assert ("warning: 4 outputs hold call markup from which the reader (auto) read no call: they count as no "
            "call") in printed


def test_an_answer_in_prose_is_no_unread_call(toy_registered, data_dir, tmp_path, capsys):
    results, printed = toy_evaluate("The meeting is on Monday.", data_dir, tmp_path / "prose", capsys)
    assert results["tool_parser"]["unread_calls"] == 0 and "warning" not in printed


def test_an_endpoint_run_counts_what_neither_the_server_nor_the_reader_read(data_dir, tmp_path, capsys):
    """The server parses no call (content only); the package's reader reads Hermes markup and not the
    unknown family's: one row of each, the unknown one counted."""
    replies = iter(['<tool_call>{"name": "GetToday", "arguments": {}}</tool_call>',
                    '<acme:tool_call>{"name": "GetToday", "arguments": {}}</acme:tool_call>'] * 8)
    with ChatCompletions(lambda body: {"role": "assistant", "content": next(replies)}) as server:
        status = apibank_cli.main(["evaluate", "--model", "m", "--backend", "openai", "--base-url", server.base_url,
                                   "--concurrency", "1", "--batch-size", "1", "--format", "tools", "--levels", "1",
                                   "--limit", "2", "--kinds", "api", "--allow-subset", "--data-dir", str(data_dir),
                                   "--output", str(tmp_path / "endpoint"), "--quiet"])
    printed = capsys.readouterr()
    assert status == 0, printed.err
    results = json.loads((tmp_path / "endpoint" / "results.json").read_text())
    parser = results["chat_template"]["tool_parser"]
    assert parser == {"name": "auto", "chosen_by": "text", "unread_calls": 1}
    assert results["chat_template"]["calls_read_back"]["result"] == "not checked"
    assert "warning: 1 outputs hold call markup" in printed.out


def test_agent_steps_with_unread_markup_are_counted(toy_registered, data_dir, tmp_path, capsys):
    output = tmp_path / "agent"
    status = apibank_cli.main(["agent", "--model", "toy-model", "--backend", "toy", "--reply",
                               "<TOOLCALL>[{\"name\": \"ToolSearcher\", \"arguments\": {}}]</TOOLCALL>",
                               "--tool-format", "native", "--levels", "3", "--limit", "1", "--max-steps", "2",
                               "--data-dir", str(data_dir), "--output", str(output), "--quiet"])
    printed = capsys.readouterr()
    assert status == 0, printed.err
    results = json.loads((output / "results.json").read_text())
    assert results["tool_parser"]["unread_calls"] >= 1
    assert "steps hold call markup from which the reader (auto) read no call" in printed.out
