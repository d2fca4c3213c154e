"""Chat templates that refuse or drop parts of a conversation: probed once, adapted, recorded.

The templates under tests/templates/ are deliberately strict: strict user/assistant alternation with
no system or tool role and no tools (Gemma style), one that silently drops everything but user and
assistant text, one that raises on tool_calls, and one no adaptation can satisfy. Every row of every
level is rendered through each, and the prompt must still show everything the dialogue holds.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from apibank.generate.backends.base import Backend
from apibank.generate.backends.hf import _HFRendering
from apibank.generate.backends.model_checks import read_chat_template
from apibank.data.rendering import result_shown
from apibank.generate.conversation import build_conversation
from apibank.notation import display
from apibank.generate.runner import generate_predictions
from apibank.generate.templates import ORDER, TemplateAdapter, TemplateRefusal, adapt
from support.tiny import train_tokenizer
from apibank.pipeline import load_rows
from support.paths import TEMPLATES_DIR as TEMPLATES


EXPECTED = {
    ("strict_alternation", "chat"): ["tool-results-as-user", "system-in-first-user", "merge-consecutive"],
    ("strict_alternation", "tools"): ["tools-in-prompt", "calls-as-text", "tool-results-as-user",
                                      "system-in-first-user", "merge-consecutive"],
    ("silent_drops", "chat"): ["tool-results-as-user", "system-in-first-user"],
    ("silent_drops", "tools"): ["tools-in-prompt", "calls-as-text", "tool-results-as-user", "system-in-first-user"],
    ("no_tool_calls", "chat"): [],
    ("no_tool_calls", "tools"): ["tools-in-prompt", "calls-as-text"],
}


class _Renderer(_HFRendering, Backend):
    """The HF rendering path with a tokenizer and no model; generating is a test failure."""

    name = "render-only"

    def __init__(self, tokenizer, chat_template: str = "auto"):
        self.tokenizer, self.chat_template = tokenizer, chat_template

    def generate(self, conversations, prompts, settings):
        raise AssertionError("generation started although a prompt could not be rendered")

    def info(self):
        return {"backend": self.name, "model_id": "render-only"}


@pytest.fixture(scope="module")
def all_rows(data_dir):
    return load_rows(None, data_dir)


def _must_show(row, fmt: str) -> list[str]:
    """What the prompt has to show of a row, whatever the template: every turn's text, every call's
    name and argument values, every result, and (tools format) every tool's name."""
    shown = []
    for turn in row["history"]:
        if turn["role"] in ("User", "AI"):
            shown.append(turn["text"].strip())
        else:
            shown.append(turn["api_name"])
            arguments = json.loads(turn["arguments"]) if turn.get("arguments") else {}
            for value in arguments.values():
                shown.append(display(value) if fmt == "chat" or isinstance(value, str) else json.dumps(value))
            result = result_shown(turn, row["level"])
            shown.append(json.dumps(result, ensure_ascii=False) if fmt == "tools" else display(result))
    if fmt == "tools":
        shown += [tool["name"] for tool in row["tools"]]
    else:
        shown += [tool["description"] for tool in row["tools"]]
    return [text for text in shown if text]


@pytest.mark.parametrize("template,fmt", sorted(EXPECTED))
def test_every_row_renders_through_strict_templates_with_nothing_lost(all_rows, template, fmt):
    renderer = _Renderer(train_tokenizer(["some text"], 280), str(TEMPLATES / f"{template}.jinja"))
    for row in all_rows:
        prompt = renderer.render(build_conversation(row, fmt))
        for text in _must_show(row, fmt):
            # Templates may trim a turn; JSON in the prompt may be escaped differently: compare loosely.
            assert text in prompt or text.strip() in prompt or json.dumps(text)[1:-1] in prompt, (row["id"], text)
    adaptations = renderer.template_info()["template_adaptations"]
    assert [a["name"] for a in adaptations] == list(EXPECTED[template, fmt])
    for adaptation in adaptations:
        assert adaptation["reason"].startswith("the template raises: ") or "silently" in adaptation["reason"]
    assert renderer.template_info()["chat_template_sha256"]


def test_strict_alternation_prompt_alternates_and_names_each_tool_result(all_rows):
    renderer = _Renderer(train_tokenizer(["some text"], 280), str(TEMPLATES / "strict_alternation.jinja"))
    row = next(r for r in all_rows if r["level"] == 1 and sum(t["role"] == "API" for t in r["history"]) >= 1)
    prompt = renderer.render(build_conversation(row, "chat"))
    turns = re.findall(r"<start_of_turn>(\w+)", prompt)
    history = turns[:-1]  # the last is the generation prompt (after a final AI turn, a second model turn)
    assert len(history) >= 3 and history == ["user", "model"] * (len(history) // 2) + ["user"] * (len(history) % 2)
    assert turns[-1] == "model"
    api = next(t for t in row["history"] if t["role"] == "API")
    assert f"Result of {api['api_name']}: " in prompt
    assert "You are an AI assistant" in prompt.split("<start_of_turn>user", 2)[1]  # system text opens turn 1


def test_tools_written_into_prompt_when_template_ignores_them(all_rows):
    renderer = _Renderer(train_tokenizer(["some text"], 280), str(TEMPLATES / "strict_alternation.jinja"))
    row = next(r for r in all_rows if r["level"] == 3 and r["kind"] == "api" and len(r["history"]) > 2)
    conversation = build_conversation(row, "tools")
    prompt = renderer.render(conversation)
    for tool in conversation.tools:
        assert json.dumps(tool["function"], ensure_ascii=False) in prompt
    assert '{"name": "<tool name>", "arguments"' in prompt
    call = next(m for m in conversation.messages if m.get("tool_calls"))["tool_calls"][0]["function"]
    assert json.dumps({"name": call["name"], "arguments": call["arguments"]}, ensure_ascii=False) in prompt


def test_lenient_template_needs_no_adaptation(all_rows):
    renderer = _Renderer(train_tokenizer(["some text"], 280))  # the tiny model's ChatML template
    for row in all_rows[:50]:
        for fmt in ("chat", "tools"):
            conversation = build_conversation(row, fmt)
            assert renderer.render(conversation) == renderer.tokenizer.apply_chat_template(
                conversation.messages, tools=conversation.tools, add_generation_prompt=True, tokenize=False)
    assert renderer.template_info()["template_adaptations"] == []


@pytest.mark.parametrize("fmt", ["chat", "tools"])
def test_unrenderable_conversation_fails_before_generation_naming_row_and_rule(all_rows, fmt):
    renderer = _Renderer(train_tokenizer(["some text"], 280), str(TEMPLATES / "refuses_assistant.jinja"))
    rows = [r for r in all_rows if any(t["role"] == "AI" for t in r["history"])][:3]
    with pytest.raises(TemplateRefusal, match=rf"row {rows[0]['id']}: .*assistant turns are not allowed"):
        generate_predictions(rows, renderer, fmt=fmt, progress=False)


def test_template_that_cannot_render_a_user_turn_is_refused_at_the_probe():
    adapter = TemplateAdapter(lambda messages, tools: (_ for _ in ()).throw(ValueError("broken")))
    with pytest.raises(TemplateRefusal, match="cannot render a single user message: the template raises: broken"):
        adapter.render([{"role": "user", "content": "x"}], None, fmt="chat", row_id="r")


def test_shape_not_foreseen_by_probes_is_adapted_on_first_sight():
    """A template that accepts every probe but refuses a conversation ending with two user turns."""

    def render(messages, tools):
        if len(messages) > 1 and messages[-1]["role"] == messages[-2]["role"] == "user":
            raise ValueError("two user turns at the end")
        return "".join(f"{m['role']}:{m['content']}|" for m in messages)

    adapter = TemplateAdapter(render)
    messages = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
    assert adapter.render(messages, None, fmt="chat", row_id="row-9") == "user:a\nb|"
    (adaptation,) = adapter.adaptations
    assert adaptation["name"] == "merge-consecutive" and "row row-9" in adaptation["reason"]


def test_adapt_keeps_every_text_in_order():
    messages = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "U"},
        {"role": "assistant", "content": "A"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "F", "arguments": {"k": 1}}}]},
        {"role": "tool", "tool_call_id": "call_1", "name": "F", "content": "R"},
    ]
    adapted, tools = adapt(messages, [{"type": "function", "function": {"name": "F"}}], ORDER)
    assert tools is None
    assert [m["role"] for m in adapted] == ["user", "assistant", "user"]
    assert adapted[0]["content"].startswith("S\n\nTools you can call") and adapted[0]["content"].endswith("U")
    assert adapted[1]["content"] == 'A\n{"name": "F", "arguments": {"k": 1}}'
    assert adapted[2]["content"] == "Result of F: R"


def test_chat_template_file_errors_name_the_file(tmp_path):
    with pytest.raises(ValueError, match="cannot read it"):
        read_chat_template(tmp_path / "missing.jinja")
    bad = tmp_path / "bad.jinja"
    bad.write_text("{% for m in messages %}{{ m.content }")
    with pytest.raises(ValueError, match=r"bad.jinja: not a valid Jinja template"):
        read_chat_template(bad)
    assert "raise_exception" in read_chat_template(TEMPLATES / "strict_alternation.jinja")
