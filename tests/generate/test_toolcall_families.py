"""Every family's native calls read back: the gold call of all 779 API rows written in each family's own
format (through its real chat template where that template renders assistant calls, else as the
family documents it), read back to exactly the gold name and arguments, and scored to the gold text's
own figures; parallel calls, hard values, thinking text and plain answers holding JSON."""

from __future__ import annotations

import json

import pytest

import apibank
from apibank.generate.conversation import tool_schema
from apibank.generate.toolcalls import (
    READERS, answer_of, get_reader, read_calls, read_tool_calls, reader_for_template, reader_names,
)
from apibank.generate.toolcalls.reasoning import BLOCKS, MARKERS
from apibank.notation import call_text, parse_request
from support.native_calls import BARE_JSON, SINGLE_CALL, UNMARKED, WRITERS, Call, typed
from support.paths import REAL_TEMPLATES_DIR, REPO
from support.template_calls import MANIFEST, RENDERING, SHIPPED, USER, render, rendered_output



# Every name a run can be given: each family's and its aliases (vLLM's names read the same way).
NAMES = READERS.all_names()
VLLM = json.loads((REPO / "apibank" / "generate" / "toolcalls" / "vllm_names.json").read_text(encoding="utf-8"))


def test_every_registered_name_has_a_writer():
    assert set(WRITERS) == set(NAMES)


def test_every_tool_parser_of_vllm_is_read():
    """vLLM 0.32.0's 53 registered tool-call formats (``hf`` reads a model's own response template, as
    ``--response-template`` does here) and 38 reasoning parsers, each read under its own name."""
    assert VLLM["vllm"] == "0.32.0"
    tool_parsers = [name for name in VLLM["tool_parsers"] if name != "hf"]
    assert len(tool_parsers) == 53 and len(VLLM["reasoning_parsers"]) == 38
    names = {name.replace("-", "_") for name in reader_names()}
    assert [name for name in tool_parsers if name.replace("-", "_") not in names] == []
    for name in tool_parsers:
        assert get_reader(name.replace("_", "-")) is get_reader(name.replace("-", "_"))


# ----------------------------------------------------------------------------------- the gold
@pytest.fixture(scope="module")
def api_rows(data_dir):
    return [row for config in ("level-1", "level-2", "level-3") for row in apibank.iter_rows(config, data_dir)
            if row["kind"] == "api"]


@pytest.fixture(scope="module")
def gold(api_rows) -> list[Call]:
    return [parse_request(row["expected_output"])[:2] for row in api_rows]


def test_the_gold_is_every_api_row(gold):
    assert len(gold) == 779


@pytest.fixture(scope="module")
def row_tools(api_rows) -> list[list[dict]]:
    """Each row's tools as ``evaluate --format tools`` offers them to the model (and to the reader)."""
    return [[tool_schema(tool["name"], tool["description"], int(row["level"])) for tool in row["tools"]]
            for row in api_rows]


def as_typed(call: Call, tools: list[dict]) -> Call:
    """The gold call with its values typed by the offered tools' schemas (transformers' rule, the engine's)."""
    schemas = {tool["function"]["name"]: tool["function"]["parameters"] for tool in tools}
    return call[0], typed(call[0], dict(call[1]), schemas)


@pytest.mark.parametrize("family", NAMES)
def test_every_gold_call_in_the_documented_format_reads_back(family, gold, row_tools):
    writer = WRITERS[family]
    typed_rows = 0
    for (name, arguments), tools in zip(gold, row_tools):
        text = writer([(name, arguments)])
        assert read_tool_calls(text, parser=family) == [(name, arguments)], text
        if family not in UNMARKED:  # recognised from the text alone, no template given
            assert read_tool_calls(text) == [(name, arguments)], text
        # with the row's tools, as evaluate passes them: the values as written, or typed by the schema
        typed_call = as_typed((name, arguments), tools)
        read = read_tool_calls(text, parser=family, tools=tools)
        assert read in ([(name, arguments)], [typed_call]), text
        typed_rows += read == [typed_call] != [(name, arguments)]
    # 12 rows give a string to an integer or boolean parameter ("1", "True"): typed, or kept as written
    assert typed_rows <= 12


# ------------------------------------------------------------------------------- real templates


@pytest.fixture(scope="module")
def templates():
    pytest.importorskip("transformers")
    return {family: (REAL_TEMPLATES_DIR / entry["file"]).read_text(encoding="utf-8")
            for family, entry in SHIPPED.items()}


@pytest.mark.parametrize("family", RENDERING)
def test_every_gold_call_rendered_by_the_real_template_reads_back(family, templates, gold, row_tools):
    template, entry = templates[family], SHIPPED[family]
    assert reader_for_template(template) is not None, family
    prompt = render(template, [USER], True)
    exact = same_prediction = 0
    for name, arguments in gold:
        text = rendered_output(template, entry, [(name, arguments)], prompt)
        calls = read_tool_calls(text, chat_template=template)
        exact += calls == [(name, arguments)]
        same_prediction += len(calls) == 1 and call_text(*calls[0]) == call_text(name, arguments)
    if family == "toolace":
        # ToolACE's template prints values unquoted (`id=78901234`, `lon=74.0060`): such text reads back as
        # a number, so 58 of 779 values change type and 8 of them their text as well (trailing zeros).
        assert (exact, same_prediction) == (721, 771)
        # with the row's tools, as evaluate passes them, a value the schema declares a string is the text written;
        # the 45 rows that still differ call a tool that is not offered (levels 2 and 3 offer ToolSearcher alone)
        exact_with_tools = 0
        for (name, arguments), tools in zip(gold, row_tools):
            text = rendered_output(template, entry, [(name, arguments)], prompt)
            read = read_tool_calls(text, chat_template=template, tools=tools)
            offered = name in {tool["function"]["name"] for tool in tools}
            assert not offered or read in ([(name, arguments)], [as_typed((name, arguments), tools)]), text
            exact_with_tools += read == [(name, arguments)]
        assert exact_with_tools == 734
    else:
        assert exact == len(gold)


@pytest.mark.parametrize("family", RENDERING)
def test_parallel_calls_rendered_by_the_real_template(family, templates, gold):
    template, entry = templates[family], SHIPPED[family]
    calls = [gold[0], gold[100], gold[500]]
    text = rendered_output(template, entry, calls, render(template, [USER], True))
    # GPT-OSS's and GigaChat 3's templates write the first call of a turn only (one call per message)
    assert read_tool_calls(text, chat_template=template) == (calls[:1] if family in ("gpt-oss", "gigachat3") else calls), text


# The family each collected template selects (the unshipped ones checked where the collection is at hand).
SELECTS = {
    "deepseek-r1-distill": "deepseek_v3", "deepseek-v3": "deepseek_v3", "deepseek-v3.1": "deepseek_v31",
    "functionary-v3.2": "functionary_v32", "gemma-4": "gemma4", "glm-4.6": "glm45", "gpt-oss": "openai",
    "granite-3.3": "granite", "granite-4.0": "hermes", "hermes-2-pro": "hermes", "hermes-3": "hermes",
    "internlm2": "internlm", "kimi-k2": "kimi_k2", "llama-3.1": "llama3_json", "llama-3.2": "llama3_json",
    "llama-4": "llama4_pythonic", "mistral-nemo": "mistral", "mistral-small-3.2": "mistral",
    "phi-4-mini": "phi4_mini_json", "phi-4-mini-vllm": "phi4_mini_json", "qwen2.5": "hermes", "qwen3": "hermes",
    "qwen3-8b": "hermes", "qwq": "hermes", "qwen3-coder": "qwen3_coder", "smollm3": None, "toolace": "pythonic",
    "xlam": "xlam", "xlam-llama": "xlam",
    "seed-oss": "seed_oss", "glm-4.7": "glm45", "kimi-k2-thinking": "kimi_k2", "nemotron-3-nano": "qwen3_coder",
    "step-3.5": "qwen3_coder", "deepseek-v3.2": "deepseek_v32", "minimax-m2": "minimax_m2",
    "nemotron-nano-v2": "nemotron_json", "command-r7b": "cohere_command3", "apertus": "apertus", "lfm2.5": "lfm2",
    "apriel-1.6": "hunyuan_a13b", "ministral-3-reasoning": "mistral", "gigachat3": "gigachat3", "mimo-vl": "hermes",
    "hy3": "hy_v3",
}


def test_each_template_selects_its_family(templates):
    assert {entry["family"] for entry in MANIFEST} == set(SELECTS)
    chosen = {family: getattr(reader_for_template(text), "name", None) for family, text in templates.items()}
    assert chosen == {family: SELECTS[family] for family in templates}


# ------------------------------------------------------------------------------------ scoring
def test_read_calls_score_as_the_gold_text(api_rows, gold, row_tools, data_dir):
    """The predictions the backends make of read-back calls (call_text) score the gold text's own figures;
    every family above reads back the same calls, so one scoring covers them all."""
    references = [row["reference"] for row in api_rows]
    text = WRITERS["mistral"]
    predictions = [call_text(*read_tool_calls(text([call]))[0]) for call in gold]
    read = apibank.score(predictions, references, protocols=("paper", "corrected"), data_dir=data_dir)
    own = apibank.score([row["expected_output"] for row in api_rows], references, protocols=("paper", "corrected"),
                        data_dir=data_dir)
    for protocol, correct in (("paper", 671), ("corrected", 779)):
        assert read[protocol]["overall"]["api"] == own[protocol]["overall"]["api"]
        assert read[protocol]["overall"]["api"]["correct"] == correct and own[protocol]["overall"]["api"]["total"] == 779
    # read with the rows' tools, as evaluate reads them, 12 calls hold values the schema types ("1" as 1, "True"
    # as True): their predictions are the same text, so they score the same figures
    typed_calls = [as_typed(call, tools) for call, tools in zip(gold, row_tools)]
    assert sum(typed != call for typed, call in zip(typed_calls, gold)) == 12
    assert [call_text(*call) for call in typed_calls] == predictions


# --------------------------------------------------------------------------- values and shapes
HARD = ("Probe", {"text": 'héllo 世界 "quoted" \'single\', comma) [x]', "n": 3, "f": -1.5, "yes": True, "no": False,
                  "nothing": None, "items": [1, "two", {"k": [True, None]}], "nested": {"a": {"b": "c"}}})
HARD_SCHEMA = [{"type": "function", "function": {"name": "Probe", "parameters": {"type": "object", "properties": {
    "text": {"type": "string"}, "n": {"type": "integer"}, "f": {"type": "number"}, "yes": {"type": "boolean"},
    "no": {"type": "boolean"}, "nothing": {"type": "null"}, "items": {"type": "array"},
    "nested": {"type": "object"}}}}}]


@pytest.mark.parametrize("family", NAMES)
def test_hard_values_and_parallel_calls(family):
    calls = [HARD, ("GetToday", {}), ("QueryMeeting", {"user_name": "Zoë"})][:1 if family in SINGLE_CALL else 3]
    text = WRITERS[family](calls)
    # families that write values as bare text type them by the offered schema
    assert read_tool_calls(text, parser=family, tools=HARD_SCHEMA) == calls, text


@pytest.mark.parametrize("family", NAMES)
def test_thinking_is_never_read_as_a_call(family):
    real = ("GetToday", {})
    thought = ("<think>Maybe " + WRITERS[family]([HARD]) + ' or {"name": "AddAlarm", "arguments": {}}?</think>\n')
    assert read_tool_calls(thought + "It is Monday.", parser=family) == []
    assert read_tool_calls(thought + WRITERS[family]([real]), parser=family) == [real]
    assert read_tool_calls("<think>cut off while thinking " + WRITERS[family]([real]), parser=family) == []
    prefilled = "the prompt opened the block: " + WRITERS[family]([HARD]) + "</think>It is Monday."
    assert read_tool_calls(prefilled, parser=family) == []


def test_every_reasoning_parser_of_vllm_has_its_markers():
    assert MARKERS["vllm"] == VLLM["vllm"]
    parsers = [parser for block in BLOCKS for parser in block.parsers]
    assert sorted(parsers) == sorted(name for name in VLLM["reasoning_parsers"] if name != "hf")


@pytest.mark.parametrize("block", BLOCKS, ids=lambda block: block.name)
def test_a_draft_call_inside_any_reasoning_block_is_never_read(block):
    """Seed-OSS drafting ``<seed:tool_call>`` inside ``<seed:think>``, Ministral 3 Reasoning ``[TOOL_CALLS]``
    inside ``[THINK]``, ...: for every family, the call after the block is the one read."""
    real = ("GetToday", {})
    for family in NAMES:
        write = WRITERS[family]
        for opener, closer in zip(block.openers, block.closers):
            if closer in write([HARD]):  # the family's own call text ends the block (harmony's <|end|>)
                continue
            draft = opener + "Maybe " + write([HARD]) + closer + "\n"
            assert read_tool_calls(draft + "It is Monday.", parser=family) == [], (family, opener)
            assert read_tool_calls(draft + write([real]), parser=family) == [real], (family, opener)
            if family not in UNMARKED:
                assert read_tool_calls(draft + write([real])) == [real], (family, opener)
            if block.prefilled:  # the template opened the block in the prompt
                assert read_tool_calls(write([HARD]) + closer + write([real]), parser=family) == [real], family


def test_gpt_oss_analysis_channel_is_reasoning():
    analysis = ('<|channel|>analysis<|message|>Call to=functions.AddAlarm <|message|>{"time": "9"} maybe.<|end|>')
    final = "<|start|>assistant<|channel|>final<|message|>It is Monday.<|return|>"
    assert read_calls(analysis + final) == []
    assert answer_of("analysisCall ... It is Monday.", analysis + final) == "It is Monday."
    assert answer_of("<think>{\"name\": \"x\"}</think> Monday.") == " Monday."


PLAIN = ['Your record reads {"name": "John", "arguments": {"age": 3}} in the database.',
         'Stored: [{"name": "AddAlarm", "parameters": {"time": "9"}}], as you asked.',
         "The meeting is at 3pm.", '{"name": "John", "age": 3}']


@pytest.mark.parametrize("text", PLAIN)
def test_plain_answers_holding_json_are_no_calls(text, templates):
    assert read_calls(text) == []
    for family, template in templates.items():
        reader = reader_for_template(template)
        if reader is None or reader.name not in BARE_JSON:
            assert read_calls(text, template) == [], family
    for family in sorted(set(NAMES) - BARE_JSON):
        assert read_tool_calls(text, parser=family) == [], family


def test_a_whole_answer_that_is_a_call_is_read_without_markers():
    assert read_calls('{"name": "GetToday", "arguments": {}}') == [{"name": "GetToday", "arguments": {}}]
    assert read_calls('```json\n[{"name": "GetToday", "parameters": {}}]\n```') == [{"name": "GetToday", "arguments": {}}]
    assert read_calls("GetToday()", tools=[{"function": {"name": "GetToday"}}]) == [{"name": "GetToday", "arguments": {}}]
    assert read_calls("GetToday()") == []  # a bare Python call of no offered tool


def test_unknown_parser_names_the_close_ones():
    from apibank.generate.toolcalls import UnknownName

    with pytest.raises(UnknownName, match="did you mean 'hermes'"):
        get_reader("hermez")


def test_public_read_calls_is_lazy_and_documented():
    assert apibank.read_calls is read_calls
    assert "read_calls" in apibank.__all__
    table = (REPO / "docs" / "backends.md").read_text(encoding="utf-8")
    assert all(f"`{name}`" in table for name in READERS.names())


# ------------------------------------------------------------------------------------ hostile
HOSTILE = ["[", "{", '"', "\\", '{"name": ', "<tool_call>", "<tool_call>X\n<arg_key>k</arg_key><arg_value>",
           "<function=X><parameter=k>", "<|tool_call>call:X{", "{a:", '<|"|>', "to=functions.X<|message|>",
           "<｜tool▁call▁begin｜>X<｜tool▁sep｜>{", "<|tool_call_begin|>functions.X:0<|tool_call_argument_begin|>{",
           ">>>X\n{", "functools[", "[TOOL_CALLS]X[ARGS]{", "<|action_start|><|plugin|>{", "<|tool_call|>[", "[X(",
           "<think>", "</think>", "<|channel|>analysis<|message|>",
           # issue 36's families: their call openers, unclosed
           '<｜DSML｜invoke name="X"><｜DSML｜parameter name="k" string="true">', '<invoke name="X"><parameter name="k">',
           ']<]minimax[>[<invoke name="X">]<]minimax[>[<k>', "<seed:tool_call><function=X><parameter=k>",
           "<tool_calls>[", "<longcat_tool_call>{", "<|tool_call_start|>[X(", "<start_function_call>call:X{k:<escape>",
           "<|function_call|>{", "<function_call> {", "<tool_call>X<tool_sep><arg_key>k</arg_key><arg_value>",
           "<tool_calls><tool_call>X<arg_key>k</arg_key><arg_value>", "<ifm|tool_call>X<ifm|arg_key>k</ifm|arg_key>",
           '<|open|>call tool="X" index="1"<|sep|><|open|>argument key="k" type="string"<|sep|>',
           '<function name="X"><param name="k">', "<|plamo:begin_tool_name:plamo|>X<|plamo:end_tool_name:plamo|>",
           "<|content_invoke_tool_json|>{", '<steptml:invoke name="X"><steptml:parameter name="k">',
           "<|START_ACTION|>[", '<atem:invoke name="X"><atem:parameter name="k">', "<TOOLCALL>[", "<|tools_prefix|>[",
           "<function_calls>X(", "[THINK]", "<seed:think>", "<|START_THINKING|>"]


@pytest.mark.parametrize("family", [*NAMES, None])
def test_hostile_text_is_bounded(family):
    """Every family's openers repeated past the bounds (unclosed, or nested 2,000 deep): no exception, no call
    invented; a real call after a run of unclosed openers is still read."""
    for unit in HOSTILE:
        assert read_tool_calls(unit * 2000, parser=family) == [], unit
    if family not in UNMARKED and family != "xlam":  # xLAM's list is the whole answer: text before it is prose
        real = ("GetToday", {"day": "Monday"})
        assert read_tool_calls("] } ) " * 500 + WRITERS[family or "hermes"]([real]), parser=family) == [real]
