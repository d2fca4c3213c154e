"""The probes against the rules that real chat templates have (each stand-in below keeps one rule of a
named real template, written for this test), the completeness check on every row, the template's
options (``--chat-template-kwargs``), thinking detection and ``evaluate --prompts-only``."""

from __future__ import annotations

import json

import pytest

from apibank.cli.main import main
from apibank.generate.backends.base import DecodingSettings
from apibank.generate.backends.hf import TokenizerRendering
from apibank.generate.backends.openai import OpenAIBackend
from apibank.generate.conversation import build_conversation
from apibank.generate.runner import sized_settings
from apibank.generate.templates import TemplateAdapter, TemplateRefusal, missing_pieces
from apibank.pipeline import load_rows
from support.tiny import build_tiny_model, train_tokenizer

_TURN = "{{ '<|' + m.role + '|>' + (m.content or '') }}"
_CALLS = ("{% for c in m.tool_calls or [] %}<call id={{ c.id }}>{{ c.function.name }} "
          "{{ c.function.arguments | tojson }}</call>{% endfor %}")
_TOOLS = "{% if tools %}{% for t in tools %}<tool>{{ t.function.name }}</tool>{% endfor %}{% endif %}"
_END = "{% if add_generation_prompt %}<|assistant|>{% endif %}"

STAND_INS = {
    # Mistral (v3 tekken onwards): a call id must be nine letters and digits.
    "mistral_ids": _TOOLS + "{% for m in messages %}{% for c in m.tool_calls or [] %}"
                   "{% if c.id|length != 9 or not c.id.isalnum() %}{{ raise_exception('Tool call IDs should be "
                   "alphanumeric strings with length 9!') }}{% endif %}{% endfor %}" + _TURN + _CALLS
                   + "{% endfor %}" + _END,
    # Mistral Nemo: the system text is shown only when the last message is a user turn.
    "nemo_system": _TOOLS + "{% set sys = messages[0].content if messages[0].role == 'system' else '' %}"
                   "{% for m in messages if m.role != 'system' %}{% if loop.last and m.role == 'user' %}"
                   "{{ sys }}{% endif %}" + _TURN + _CALLS + "{% endfor %}" + _END,
    # functionary v3.2: the arguments are printed as given (a dict comes out in Python's notation).
    "functionary_arguments": _TOOLS + "{% for m in messages %}" + _TURN
                             + "{% for c in m.tool_calls or [] %}>>>{{ c.function.name }}\n{{ c.function.arguments }}"
                             "{% endfor %}{% endfor %}" + _END,
    # Hermes-3 tool_use: written for tools only, it refuses tools=None.
    "hermes_tool_use": "{% if tools is none %}{{ raise_exception('tools is required') }}{% endif %}" + _TOOLS
                       + "{% for m in messages %}" + _TURN + _CALLS + "{% endfor %}" + _END,
    # GPT-OSS: a tool message needs an assistant tool call before it; there is no other tool role rule.
    "needs_call_before_result": _TOOLS + "{% set ns = namespace(call=none) %}{% for m in messages %}"
                                "{% if m.tool_calls %}{% set ns.call = m.tool_calls[0] %}{% endif %}"
                                "{% if m.role == 'tool' and ns.call is none %}{{ raise_exception('Message has tool "
                                "role, but there was no previous assistant message with a tool call!') }}{% endif %}"
                                + _TURN + _CALLS + "{% endfor %}" + _END,
    # Drops every argument value whatever is done: no adaptation can show them.
    "drops_arguments": _TOOLS + "{% for m in messages %}{{ '<|' + m.role + '|>' }}{% if m.role != 'assistant' %}"
                       "{{ m.content }}{% endif %}{% for c in m.tool_calls or [] %}{{ c.function.name }}"
                       "{% endfor %}{% endfor %}" + _END,
    # Qwen3's thinking switch.
    "thinking": "{% for m in messages %}" + _TURN + "{% endfor %}{% if add_generation_prompt %}<|assistant|>"
                "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n{% endif %}"
                "{% endif %}",
}


@pytest.fixture(scope="module")
def tokenizer():
    return train_tokenizer(["some text"], 280)


@pytest.fixture(scope="module")
def rows(data_dir):
    return load_rows(None, data_dir)


def adapter(tokenizer, name: str, **kwargs) -> TemplateAdapter:
    text = STAND_INS[name]

    def render(messages, tools):
        return tokenizer.apply_chat_template(messages, tools=tools, chat_template=text, add_generation_prompt=True,
                                             tokenize=False, **kwargs)

    return TemplateAdapter(render, text)


def render_all(adapter: TemplateAdapter, rows, fmt: str) -> list[str]:
    prompts = []
    for row in rows:
        conversation = build_conversation(row, fmt)
        prompt = adapter.render(conversation.messages, conversation.tools, fmt=fmt, row_id=row["id"])
        assert missing_pieces(conversation.messages, conversation.tools, prompt) == []
        prompts.append(prompt)
    return prompts


def names(adapter: TemplateAdapter) -> list[str]:
    return [a["name"] for a in adapter.adaptations]


def test_mistral_id_rule_gets_nine_character_ids_and_keeps_native_calls(tokenizer, rows):
    mistral = adapter(tokenizer, "mistral_ids")
    prompts = render_all(mistral, rows, "tools")
    assert names(mistral) == ["call-ids-alphanumeric"]
    assert "alphanumeric strings with length 9" in mistral.adaptations[0]["reason"]
    with_call = next(p for p in prompts if "<call id=" in p)
    assert "<call id=call00000>" in with_call


def test_system_shown_only_with_a_user_turn_last_is_folded_into_the_first_user_turn(tokenizer, rows):
    for fmt in ("chat", "tools"):
        nemo = adapter(tokenizer, "nemo_system")
        render_all(nemo, rows, fmt)  # every row's system text is in its prompt, tool or assistant turn last too
        assert "system-in-first-user" in names(nemo)
        assert "silently" in nemo.adaptations[names(nemo).index("system-in-first-user")]["reason"]


def test_arguments_printed_as_python_are_sent_as_json_text(tokenizer, rows):
    functionary = adapter(tokenizer, "functionary_arguments")
    prompts = render_all(functionary, rows, "tools")
    assert names(functionary) == ["arguments-as-json-text"]
    assert "Python's notation" in functionary.adaptations[0]["reason"]
    calls = 0
    for row, prompt in zip(rows, prompts):
        for message in build_conversation(row, "tools").messages:
            for call in message.get("tool_calls") or []:
                function = call["function"]
                assert f">>>{function['name']}\n{json.dumps(function['arguments'], ensure_ascii=False)}" in prompt
                calls += 1
    assert calls > 100


def test_a_template_that_refuses_tools_none_renders_the_tools_format(tokenizer, rows):
    hermes = adapter(tokenizer, "hermes_tool_use")
    render_all(hermes, rows[:200], "tools")
    assert names(hermes) == []


def test_tool_results_keep_their_role_when_the_template_wants_a_call_before_them(tokenizer, rows):
    harmony = adapter(tokenizer, "needs_call_before_result")
    prompts = render_all(harmony, rows, "tools")
    assert names(harmony) == []
    assert any("<|tool|>" in prompt for prompt in prompts)
    chat = adapter(tokenizer, "needs_call_before_result")
    render_all(chat, rows[:100], "chat")  # chat results answer no structured call: user turns there
    assert names(chat) == ["tool-results-as-user"]


def test_a_row_whose_prompt_loses_a_piece_is_refused_naming_row_and_piece(tokenizer, rows):
    lossy = adapter(tokenizer, "drops_arguments")
    row = next(r for r in rows if any(t["role"] == "API" and t.get("arguments") not in (None, "{}", "")
                                      for t in r["history"]))
    conversation = build_conversation(row, "tools")
    with pytest.raises(TemplateRefusal, match=rf"row {row['id']}: .*drops the assistant turn at message 2"):
        lossy.render(conversation.messages, conversation.tools, fmt="tools", row_id=row["id"])


def test_missing_pieces_names_each_lost_piece():
    messages = [{"role": "system", "content": "S text"}, {"role": "user", "content": "hello"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "Tool", "arguments": {
                        "a": "ü value", "n": 3, "flag": True, "nested": {"x": None}}}}]},
                {"role": "tool", "tool_call_id": "call_1", "name": "Tool", "content": '{"r": "é"}'}]
    tools = [{"type": "function", "function": {"name": "Tool"}}]
    whole = 'S text hello Tool {"a": "\\u00fc value", "n": 3, "flag": true, "x": null} {\\"r\\": \\"é\\"}'
    assert missing_pieces(messages, tools, whole) == []
    lost = missing_pieces(messages, tools, "hello Tool 3 True None")
    assert lost == ["the system text", "an argument of the call Tool at message 2 ('ü value')",
                    "the result in message 3"]


def test_a_models_own_reasoning_in_earlier_turns_may_be_dropped():
    """Templates strip a model's reasoning from its earlier turns (Gemma 4's thought channel, even unclosed;
    Qwen3's and DeepSeek-R1's <think>): the rest of the turn must still show."""
    for content in ("<|channel>thought\nplan <|channel>more", "<think>plan</think>Done.", "plan</think>Done.",
                    "<|channel>thought\nplan<channel|>Done."):
        messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": content}]
        assert missing_pieces(messages, None, "hi Done.") == []
    lost = missing_pieces([{"role": "assistant", "content": "<think>plan</think>Answer."}], None, "plan")
    assert lost == ["the assistant turn at message 0"]


def test_thinking_follows_the_template_and_its_options(tokenizer):
    assert adapter(tokenizer, "thinking").thinking() == "the template thinks unless its thinking switch turns it off (enable_thinking, thinking_budget)"
    assert adapter(tokenizer, "hermes_tool_use").thinking() is None
    off = adapter(tokenizer, "thinking", enable_thinking=False)
    assert off.thinking() is None


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory, rows):
    corpus = [row["instruction"] + row["input"] + row["expected_output"] for row in rows[:20]]
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", corpus)


def test_chat_template_kwargs_reach_the_template_and_the_thinking_budget(tiny_model, tmp_path, rows):
    template = tmp_path / "qwen3_like.jinja"
    template.write_text("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
                        "{% if add_generation_prompt %}<|im_start|>assistant\n{% if enable_thinking is defined and "
                        "enable_thinking is false %}<think>\n\n</think>\n\n{% endif %}{% endif %}")
    thinking = TokenizerRendering(str(tiny_model), chat_template=str(template))
    plain = TokenizerRendering(str(tiny_model), chat_template=str(template),
                               chat_template_kwargs={"enable_thinking": False})
    conversation = build_conversation(rows[0], "chat")
    assert plain.render(conversation).endswith("<think>\n\n</think>\n\n")
    assert not thinking.render(conversation).endswith("</think>\n\n")
    assert thinking.thinking("chat") == "the template thinks unless its thinking switch turns it off (enable_thinking, thinking_budget)"
    assert plain.thinking("chat") is None
    assert plain.template_info()["chat_template_kwargs"] == {"enable_thinking": False}
    level = [row for row in rows if row["level"] == 1]
    on, off = sized_settings(thinking, level, "chat"), sized_settings(plain, level, "chat")
    assert on.thinking_budget == 4096 and off.thinking_budget == 0
    assert on.max_tokens_for(1, "api") == off.max_tokens_for(1, "api") + 4096
    assert on.as_dict()["thinking_budget"] == 4096 and "thinking_budget" not in off.as_dict()
    assert DecodingSettings.from_dict(on.as_dict()) == on
    assert sized_settings(thinking, level, "chat", thinking_budget=100).thinking_budget == 100


def test_endpoints_get_chat_template_kwargs_in_the_request_body(rows):
    backend = OpenAIBackend("m", base_url="http://127.0.0.1:9/v1", chat_template_kwargs={"enable_thinking": False})
    body = backend.request_body(build_conversation(rows[0], "tools"), DecodingSettings(max_new_tokens=10))
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert backend.template_info()["chat_template_kwargs"] == {"enable_thinking": False}


@pytest.mark.parametrize("given", ['{"enable_thinking": fals', '[1, 2]'])
@pytest.mark.parametrize("command", ["evaluate", "agent"])
def test_malformed_chat_template_kwargs_is_one_line_exit_2(given, command, tiny_model, data_dir, tmp_path, capsys):
    argv = [command, "--model", str(tiny_model), "--levels", "1", "--data-dir", str(data_dir),
            "--output", str(tmp_path / "out"), "--chat-template-kwargs", given]
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--chat-template-kwargs" in error and "give an object" in error
    assert not (tmp_path / "out").exists()


def test_prompts_only_writes_every_row_without_loading_weights(tiny_model, data_dir, tmp_path, capsys, monkeypatch):
    import transformers

    def no_weights(*args, **kwargs):
        raise AssertionError("--prompts-only loaded the model's weights")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", no_weights)
    out = tmp_path / "prompts"
    assert main(["evaluate", "--model", str(tiny_model), "--backend", "transformers", "--format", "tools",
                 "--levels", "1", "3", "--data-dir", str(data_dir), "--output", str(out), "--prompts-only"]) == 0
    records = [json.loads(line) for line in (out / "prompts.jsonl").read_text(encoding="utf-8").splitlines()]
    rows = load_rows(["level-1", "level-3"], data_dir)
    assert [r["id"] for r in records] == [row["id"] for row in rows]
    assert set(records[0]) == {"id", "prompt", "messages", "tools", "adaptations"}
    with_call = next(r for r in records if any(m.get("tool_calls") for m in r["messages"]))
    call = next(m for m in with_call["messages"] if m.get("tool_calls"))["tool_calls"][0]["function"]
    assert isinstance(call["arguments"], dict) and call["name"] in with_call["prompt"]
    assert all(isinstance(r["prompt"], str) and r["prompt"].endswith("<|im_start|>assistant\n") for r in records)
    assert f"{len(rows)} prompts (tools format) written" in capsys.readouterr().out
    assert not (out / "predictions.jsonl").exists()


def test_prompts_only_refuses_a_template_that_loses_content_in_one_line(tiny_model, data_dir, tmp_path, capsys):
    template = tmp_path / "lossy.jinja"
    template.write_text(STAND_INS["drops_arguments"])
    out = tmp_path / "prompts"
    assert main(["evaluate", "--model", str(tiny_model), "--backend", "transformers", "--format", "tools",
                 "--levels", "1", "--data-dir", str(data_dir), "--output", str(out), "--prompts-only",
                 "--chat-template", str(template)]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "drops" in error and "row level-1/" in error
