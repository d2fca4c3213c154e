"""Tool calls as real models write them, parsed without evaluating anything, with bounded depth and size;
the tokenizer's response template (transformers ``parse_response``) first where it has one."""

from __future__ import annotations

import itertools
import json

import pytest

from apibank.generate.backends.base import Backend, Completion
from apibank.generate.backends.hf import _HFRendering
from apibank.generate.conversation import build_conversation
from apibank.generate.runner import generate_predictions
from support.tiny import train_tokenizer
from apibank.generate.toolcalls import MAX_TEXT_CHARS, calls_from_message, calls_in_text
from apibank.notation import MAX_CALL_CHARS, UnreadableArguments, call_text, parse_call
from apibank.pipeline import load_rows

TOOLS = ["QueryMeeting", "GetToday", "AddAlarm"]
MEETING = ("QueryMeeting", {"user_name": "John", "n": 3})

SYNTAXES = {
    "hermes": '<tool_call>\n{"name": "QueryMeeting", "arguments": {"user_name": "John", "n": 3}}\n</tool_call>',
    "qwen with text": 'Sure.\n<tool_call>\n{"name": "QueryMeeting", "arguments": {"user_name": "John", "n": 3}}'
                      "\n</tool_call><|im_end|>",
    "llama3 json": '{"name": "QueryMeeting", "parameters": {"user_name": "John", "n": 3}}',
    "llama3 python_tag": '<|python_tag|>{"name": "QueryMeeting", "parameters": {"user_name": "John", "n": 3}}<|eom_id|>',
    "mistral list": '[TOOL_CALLS] [{"name": "QueryMeeting", "arguments": {"user_name": "John", "n": 3}}]</s>',
    "mistral v11": '[TOOL_CALLS]QueryMeeting[ARGS]{"user_name": "John", "n": 3}',
    "functions prefix": 'functions.QueryMeeting:\n{"user_name": "John", "n": 3}',
    "functions html-escaped": "functions.QueryMeeting:\n{&#34;user_name&#34;: &#34;John&#34;, &#34;n&#34;: 3}",
    "html-escaped json": "{&quot;name&quot;: &quot;QueryMeeting&quot;, &quot;arguments&quot;: "
                         "{&quot;user_name&quot;: &quot;John&quot;, &quot;n&quot;: 3}}",
    "openai arguments string": '{"type": "function", "function": {"name": "QueryMeeting", '
                               '"arguments": "{\\"user_name\\": \\"John\\", \\"n\\": 3}"}}',
    "json left unclosed": '{"name": "QueryMeeting", "arguments": {"user_name": "John", "n": 3}, "output": {"meet',
    "python call": 'QueryMeeting(user_name="John", n=3)',
    "python list": '[QueryMeeting(user_name="John", n=3)]',
    "python fenced": '```python\nQueryMeeting(user_name="John", n=3)\n```',
    "tool_code fenced": '```tool_code\nQueryMeeting(user_name="John", n=3)\n```',
    "python in prose": 'I will look it up: QueryMeeting(user_name="John", n=3). One moment.',
}


@pytest.mark.parametrize("syntax", sorted(SYNTAXES))
def test_every_syntax_gives_the_call(syntax):
    assert calls_in_text(SYNTAXES[syntax], TOOLS) == [MEETING]


def test_several_calls_in_order():
    text = '[QueryMeeting(user_name="John", n=3), GetToday()]'
    assert calls_in_text(text, TOOLS) == [MEETING, ("GetToday", {})]
    text = "<tool_call>" + json.dumps({"name": "GetToday", "arguments": {}}) + "</tool_call>" + SYNTAXES["hermes"]
    assert calls_in_text(text, TOOLS) == [("GetToday", {}), MEETING]


@pytest.mark.parametrize("text", [
    "The meeting is at 3pm.",
    'print("hello")',  # a Python call, but of no tool
    "QueryMeeting(user_name=__import__('os').system('true'))",  # never evaluated: not a literal
    "QueryMeeting(*args)",
    "{'name': 'QueryMeeting'}",  # not JSON
    '{"name": 7, "arguments": {}}',
    '{"name": "QueryMeeting", "arguments": [1, 2]}',
    "",
])
def test_no_call(text):
    assert calls_in_text(text, TOOLS) == []


HOSTILE_UNITS = ["[", "{", "(", '"', "\\", '{"name": ', "QueryMeeting(", "functions.QueryMeeting:", "[TOOL_CALLS]",
                 "&quot;", "<tool_call>", "```python\n", "'", ")", "]", "}"]


def test_hostile_nesting_and_sizes_are_bounded():
    """5,000 '[' (issue 10) and every unit of the syntaxes repeated far past the bounds: no exception,
    and a valid call after the hostile prefix is still found where the prefix closes."""
    for unit, count in itertools.product(HOSTILE_UNITS, (1, 5_000)):
        assert isinstance(calls_in_text(unit * count, TOOLS), list)
    for unit in ("[", "{", '{"name": ', "QueryMeeting(", "functions.QueryMeeting:"):
        assert isinstance(calls_in_text(unit * (2 * MAX_TEXT_CHARS), TOOLS), list)
    assert calls_in_text("[" * 5000) == []
    deep = '{"name": "QueryMeeting", "arguments": {"a": ' + "[" * 5000 + "]" * 5000 + "}}"
    assert calls_in_text(deep, TOOLS) == []  # too deep to be a benchmark argument: no call, no crash
    assert calls_in_text("] } ) " * 1000 + SYNTAXES["hermes"], TOOLS) == [MEETING]
    # arguments too deep to read: the call is kept with them as written (up to the bound), never read
    ((name, written),) = calls_from_message([{"function": {"name": "QueryMeeting", "arguments": "[" * 5000}}])
    assert name == "QueryMeeting" and isinstance(written, UnreadableArguments) and written == "[" * 5000
    ((_, long),) = calls_from_message([{"function": {"name": "Q", "arguments": "{" * (2 * MAX_TEXT_CHARS)}}])
    assert len(long) == MAX_TEXT_CHARS
    assert calls_from_message("not a list") == [] and calls_from_message(None) == []


def test_a_native_call_is_read_to_the_judges_bound():
    """One size bound for a call, the notation's: a Python-style call the judge could still read is not
    refused here, and its prediction reads back whole; one past the bound is no call."""
    for size in (MAX_CALL_CHARS // 2, MAX_CALL_CHARS - 100):
        text = f"QueryMeeting(user_name='{'x' * size}')"
        [(name, arguments)] = calls_in_text(text, TOOLS)
        assert parse_call(call_text(name, arguments)).arguments == {"user_name": "x" * size}
    assert calls_in_text(f"QueryMeeting(user_name='{'x' * MAX_CALL_CHARS}')", TOOLS) == []


def test_python_style_values_follow_the_judges_literal_rule():
    # a set or a repeated keyword is no literal call for the judge, so no call here either
    assert calls_in_text("QueryMeeting(user_name={'John'})", TOOLS) == []
    assert calls_in_text("QueryMeeting(n=1, n=2)", TOOLS) == []
    assert calls_in_text("QueryMeeting(n=-1, d={'a': (1, 2)})", TOOLS) == [("QueryMeeting", {"n": -1, "d": {"a": [1, 2]}})]


def test_pairs_of_hostile_units():
    for first, second in itertools.product(HOSTILE_UNITS, repeat=2):
        assert isinstance(calls_in_text((first + second) * 300, TOOLS), list)


# ------------------------------------------------------------------------ through a backend
HERMES_LIKE_RESPONSE = {
    "version": 1,
    "start_anchor": "<|im_start|>assistant\n",
    "defaults": {"role": "assistant"},
    "fields": {
        "content": {"close": "<|im_end|>"},
        # A syntax none of the text parsers reads: only the response template can.
        "tool_calls": {"open": "<<", "close": ">>", "content": "json", "repeats": True,
                       "transform": {"type": "function",
                                     "function": {"name": "{content.tool}", "arguments": "{content.args}"}}},
    },
}


class _Scripted(_HFRendering, Backend):
    """The HF rendering and parsing path; each ``generate`` returns the scripted raw outputs."""

    name = "scripted"

    def __init__(self, tokenizer, outputs):
        self.tokenizer, self.chat_template, self.outputs = tokenizer, "auto", list(outputs)

    def generate(self, conversations, prompts, settings):
        completions = []
        for conversation, prompt in zip(conversations, prompts):
            raw = self.outputs.pop(0)
            completions.append(Completion(text=raw, raw=raw, tool_calls=self._parse_tool_calls(raw, prompt,
                                                                                                 conversation)))
        return completions

    def info(self):
        return {"backend": self.name, "model_id": "scripted"}


@pytest.fixture(scope="module")
def api_rows(data_dir):
    return [row for row in load_rows(["level-1"], data_dir, limit=3) if row["kind"] == "api"]


def test_response_template_is_used_where_the_tokenizer_has_one(api_rows):
    tokenizer = train_tokenizer(["some text"], 280)
    tokenizer.response_template = HERMES_LIKE_RESPONSE
    name = api_rows[0]["tools"][0]["name"]
    raw = 'Calling. <<{"tool": "%s", "args": {"token": "abc"}}>>' % name
    backend = _Scripted(tokenizer, [raw])
    (record,) = generate_predictions(api_rows[:1], backend, fmt="tools", progress=False)
    assert record["prediction"] == call_text(name, {"token": "abc"})
    assert record["tool_call"] == {"name": name, "arguments": {"token": "abc"}}
    assert record["raw_output"] == raw  # the raw output is kept as generated
    assert backend.template_info()["tool_parser"] == {"name": "hermes", "chosen_by": "template",
                                                      "response_template": "the model's own"}
    plain = _Scripted(train_tokenizer(["some text"], 280), [raw])  # no response template: no call found
    assert plain._parse_tool_calls(raw, "", build_conversation(api_rows[0], "tools")) == []


def test_text_parsers_behind_the_backend_keep_raw_outputs(api_rows):
    names = [row["tools"][0]["name"] for row in api_rows]
    outputs = [f"functions.{names[0]}:\n{{&#34;token&#34;: &#34;abc&#34;}}",
               f'```python\n{names[1]}(token="abc")\n```', "I do not know."][: len(api_rows)]
    backend = _Scripted(train_tokenizer(["some text"], 280), outputs)
    records = generate_predictions(api_rows, backend, fmt="tools", batch_size=1, progress=False)
    # the tiny template writes Hermes' <tool_call>; each text's own markers are read where Hermes finds none
    assert backend.template_info()["tool_parser"] == {"name": "hermes", "chosen_by": "template"}
    by_raw = {r["raw_output"]: r for r in records}
    assert set(by_raw) == set(outputs)
    assert by_raw[outputs[0]]["prediction"] == call_text(names[0], {"token": "abc"})
    assert by_raw[outputs[1]]["prediction"] == call_text(names[1], {"token": "abc"})
    if len(outputs) > 2:
        assert by_raw[outputs[2]]["prediction"] == "I do not know." and "tool_call" not in by_raw[outputs[2]]


def test_thinking_stays_in_the_raw_output_and_out_of_the_prediction(api_rows):
    name = api_rows[0]["tools"][0]["name"]
    thought = '<think>Maybe <tool_call>{"name": "%s", "arguments": {"token": "abc"}}</tool_call>?</think>\n' % name
    for fmt in ("tools", "chat"):
        backend = _Scripted(train_tokenizer(["some text"], 280), [thought + "No call is needed."])
        (record,) = generate_predictions(api_rows[:1], backend, fmt=fmt, progress=False)
        assert record["prediction"] == "No call is needed." and "tool_call" not in record
        assert record["raw_output"] == thought + "No call is needed."
    unfinished = thought.replace("</think>", "")  # cut off while thinking: no call, no answer
    backend = _Scripted(train_tokenizer(["some text"], 280), [unfinished])
    (record,) = generate_predictions(api_rows[:1], backend, fmt="tools", progress=False)
    assert record["prediction"] == "" and "tool_call" not in record
