"""The call formats kept as data (``apibank/generate/toolcalls/specs/*.json``): every file loads through
transformers' own loader and reads its family's calls with transformers' engine; a wrong file, a name
taken twice, a user's response template (dict or file) and the engine under hostile text."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from apibank.generate.toolcalls import READERS, get_reader, read_calls, read_tool_calls, reader_names
from apibank.generate.toolcalls.registry import Readers, reader_of_spec, spec_readers
from apibank.generate.toolcalls.generic import MAX_TEXT_CHARS
from support.paths import REPO

SPECS = sorted((REPO / "apibank" / "generate" / "toolcalls" / "specs").glob("*.json"))
HERMES = json.loads((REPO / "apibank" / "generate" / "toolcalls" / "specs" / "hermes.json").read_text("utf-8"))
CALL = '<tool_call>{"name": "GetToday", "arguments": {"day": "Monday"}}</tool_call>'
SPEC_FAMILIES = sorted(reader.name for reader in spec_readers())


def test_the_spec_files_are_the_spec_families():
    assert [path.stem for path in SPECS] == SPEC_FAMILIES
    for path in SPECS:
        spec = json.loads(path.read_text("utf-8"))
        assert spec["name"] == path.stem
        assert get_reader(spec["name"]).response_template == spec["response_template"]


@pytest.mark.parametrize("family", SPEC_FAMILIES)
def test_names_and_aliases_are_found_with_hyphens_or_underscores(family):
    reader = get_reader(family)
    for name in (family, *reader.aliases):
        assert name in reader_names()
        assert get_reader(name) is reader
        assert get_reader(name.replace("_", "-")) is reader
        assert get_reader(name.upper()) is reader


def test_families_are_tried_by_priority():
    priorities = [READERS.get(name).priority for name in READERS.names()]
    assert priorities == sorted(priorities, reverse=True)


def _spec(**changes):
    spec = copy.deepcopy(HERMES)
    spec.update(changes)
    return spec


@pytest.mark.parametrize("spec, message", [
    ([], "a spec is a JSON object"),
    ({k: v for k, v in HERMES.items() if k != "summary"}, r"keys missing \['summary'\]"),
    (_spec(parser="x"), r"unknown \['parser'\]"),
    (_spec(priority="high"), "'priority' must be a int"),
    (_spec(priority=True), "'priority' must be a int"),
    (_spec(aliases=[""]), "non-empty strings"),
    (_spec(template_markers=["<tool_call>"]), "list of non-empty lists"),
    (_spec(text_markers=["(unclosed"]), "no regular expression"),
    (_spec(response_template={"version": 2, "fields": {}}), "not a transformers response template"),
    (_spec(response_template={"version": 1, "fields": {"content": {}}}), "start_anchor"),
    (_spec(response_template={**HERMES["response_template"], "extra": 1}), "Unknown keys"),
])
def test_a_wrong_spec_is_refused_with_its_reason(spec, message):
    with pytest.raises(ValueError, match=message) as caught:
        reader_of_spec(spec, "specs/x.json")
    assert str(caught.value).startswith("specs/x.json: ") and "\n" not in str(caught.value)


def test_a_name_or_alias_taken_twice_is_refused():
    hermes = reader_of_spec(HERMES)
    with pytest.raises(ValueError, match="registered twice"):
        Readers([hermes, reader_of_spec(_spec(name="other", aliases=["Hermes"]))])
    with pytest.raises(ValueError, match="registered twice"):
        Readers([hermes, reader_of_spec(_spec(name="my-parser", aliases=[])),
                 reader_of_spec(_spec(name="my_parser", aliases=[]))])


def test_a_region_that_is_no_json_is_no_call_and_keeps_the_others():
    cut = '<tool_call>{"name": "AddAlarm", "arguments": {"time": '
    assert read_tool_calls(CALL + cut, parser="hermes") == [("GetToday", {"day": "Monday"})]
    assert read_tool_calls("<tool_call>not json</tool_call>" + CALL, parser="hermes") == [("GetToday", {"day": "Monday"})]


@pytest.mark.parametrize("family", SPEC_FAMILIES)
def test_the_engine_keeps_the_bounds(family):
    """Deep, long and many: no exception, past the bounds no call; a text past MAX_TEXT_CHARS is cut."""
    deep = '<tool_call>{"name": "X", "arguments": {"a": ' + "[" * 40 + "]" * 40 + "}}</tool_call>"
    assert read_tool_calls(deep, parser="hermes") == []
    deeper = '<tool_call>{"name": "X", "arguments": {"a": ' + "[" * 5000 + "]" * 5000 + "}}</tool_call>"
    assert read_tool_calls(deeper, parser=family) == []
    long = '<tool_call>{"name": "X", "arguments": {"a": "' + "x" * 30_000 + '"}}</tool_call>'
    assert read_tool_calls(long, parser="hermes") == []
    assert len(read_tool_calls(CALL * 100, parser="hermes")) == 64
    assert read_tool_calls(" " * MAX_TEXT_CHARS + CALL, parser="hermes") == []


# The native call text of each spec family (the writers of test_toolcall_families), with one call to read.
def _writers():
    from test_toolcall_families import WRITERS

    return WRITERS


@pytest.mark.parametrize("family", SPEC_FAMILIES)
def test_a_call_reads_back_wherever_a_piece_of_the_stream_ends(family):
    from apibank.generate.toolcalls.engine import FEED_CHARS

    call = ("QueryMeeting", {"user_name": "John", "n": "3"})
    text = _writers()[family]([call])
    for shift in range(FEED_CHARS):
        assert read_tool_calls("x" * shift + text, parser=family) == [call], shift


# ---------------------------------------------------------------------- a user's response template
ANGLED = {"version": 1, "start_anchor": "<|assistant|>", "fields": {"content": {}, "tool_calls": {
    "open_pattern": r"<<(?P<name>\w+) ", "close": ">>", "content": "json", "repeats": True,
    "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}}}}
ANGLED_CALL = 'Sure. <<QueryMeeting {"user_name": "John", "n": "3"}>>'
SCHEMA = [{"type": "function", "function": {"name": "QueryMeeting", "parameters": {"type": "object", "properties": {
    "user_name": {"type": "string"}, "n": {"type": "integer"}}}}}]


def test_read_calls_takes_a_response_template_as_a_dict_or_a_file(tmp_path):
    assert read_calls(ANGLED_CALL) == []  # no family reads this syntax
    expected = [{"name": "QueryMeeting", "arguments": {"user_name": "John", "n": 3}}]
    assert read_calls(ANGLED_CALL, response_template=ANGLED, tools=SCHEMA) == expected
    bare, spec = tmp_path / "bare.json", tmp_path / "spec.json"
    bare.write_text(json.dumps(ANGLED), encoding="utf-8")
    spec.write_text(json.dumps({**HERMES, "name": "angled", "response_template": ANGLED}), encoding="utf-8")
    for given in (str(bare), bare, spec):
        assert read_calls(ANGLED_CALL, response_template=given, tools=SCHEMA) == expected
    # reasoning is removed first; an output the template reads nothing in goes to the usual readers
    assert read_calls("<think>" + ANGLED_CALL + "</think>No call.", response_template=ANGLED) == []
    assert read_calls(CALL, response_template=ANGLED) == [{"name": "GetToday", "arguments": {"day": "Monday"}}]


@pytest.mark.parametrize("content, message", [
    ("nope", "not JSON"),
    ('{"version": 1}', "not a transformers response template"),
    ('{"version": 1, "start_anchor": "x", "fields": {"a": {"content": "yaml"}}}', "unknown content parser"),
])
def test_a_bad_response_template_file_is_one_clear_error(tmp_path, content, message):
    path = tmp_path / "given.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=message) as caught:
        read_calls(CALL, response_template=path)
    assert str(caught.value).startswith(f"response template {path}: ") and "\n" not in str(caught.value)
    with pytest.raises(ValueError, match="cannot read it"):
        read_calls(CALL, response_template=tmp_path / "missing.json")


def test_the_choice_order_is_given_template_then_the_models_then_markers():
    from apibank.generate.toolcalls import ParserChoice

    hermes_template = "{% for m in messages %}<tool_call>{{ m }}</tool_call>{% endfor %}"
    given = ParserChoice.make(None, hermes_template, response_template=ANGLED, model_template=HERMES["response_template"])
    assert given.as_dict() == {"name": "auto", "chosen_by": "response_template", "response_template": "given"}
    assert given.read(ANGLED_CALL, SCHEMA) == [("QueryMeeting", {"user_name": "John", "n": 3})]
    own = ParserChoice.make(None, hermes_template, model_template=ANGLED)
    assert own.as_dict() == {"name": "hermes", "chosen_by": "template", "response_template": "the model's own"}
    assert own.read(ANGLED_CALL, SCHEMA) == [("QueryMeeting", {"user_name": "John", "n": 3})]
    assert own.read(CALL) == [("GetToday", {"day": "Monday"})]  # the markers' family behind it
    named = ParserChoice.make("hermes", None, response_template=ANGLED)
    assert named.read(CALL) == [("GetToday", {"day": "Monday"})] and named.read(ANGLED_CALL) != []


@pytest.mark.parametrize("command", ["evaluate", "agent"])
def test_the_flag_refuses_a_bad_file_in_one_line_before_any_model_loads(command, tmp_path, data_dir, capsys,
                                                                        monkeypatch):
    from apibank.cli.main import MAX_LINE, main

    def no_model(*args, **kwargs):
        raise AssertionError("a model loaded before the flag was checked")

    monkeypatch.setattr("apibank.generate.backends.loading.load_tokenizer_and_model", no_model)
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 1, "fields": {}}', encoding="utf-8")
    argv = [command, "--model", "some/model", "--backend", "transformers", "--response-template", str(bad),
            "--data-dir", str(data_dir), "--output", str(tmp_path / "out")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"apibank {command}: error: --response-template {bad}: not a transformers response template")
    assert "\n" not in err and len(err) <= MAX_LINE and not (tmp_path / "out").exists()


def test_the_flag_is_recorded_beside_the_parser(tmp_path):
    from apibank.generate.backends.openai import OpenAIBackend

    path = tmp_path / "angled.json"
    path.write_text(json.dumps(ANGLED), encoding="utf-8")
    backend = OpenAIBackend("m", base_url="http://127.0.0.1:9", response_template=str(path))
    assert backend.template_info()["tool_parser"] == {"name": "auto", "chosen_by": "response_template",
                                                      "response_template": str(path)}
    assert backend.parser_choice.read(ANGLED_CALL, SCHEMA) == [("QueryMeeting", {"user_name": "John", "n": 3})]


# ---------------------------------------------------------------------------- hostile, through the engine
@pytest.fixture(scope="module")
def gold_sample(data_dir):
    import random

    import apibank
    from apibank.notation import parse_request

    rows = [row for level in ("level-1", "level-2", "level-3") for row in apibank.iter_rows(level, data_dir)
            if row["kind"] == "api"]
    return [parse_request(row["expected_output"])[:2] for row in random.Random(36).sample(rows, 60)]


@pytest.mark.parametrize("family", SPEC_FAMILIES)
def test_mutated_gold_calls_through_the_engine(family, gold_sample):
    """The judge's hostile mutations applied to native call texts (benchmarks/bench_toolcall_readers.py has
    the timings): never an exception; a text cut anywhere reads no call, the call, or (a model cut off
    between two arguments) the call with the arguments it finished."""
    import random

    sys_path_writers = _writers()
    generator = random.Random(family)
    noise = ["\ud800", "\x00", "\x01", "\x02", "\u202e", "<", '"', "{", "]"]
    for name, arguments in gold_sample:
        text = sys_path_writers[family]([(name, arguments)])
        for cut in sorted(generator.sample(range(len(text)), min(8, len(text)))):
            calls = read_tool_calls(text[:cut], parser=family)
            assert calls == [] or (len(calls) == 1 and calls[0][0] == name
                                   and calls[0][1].items() <= arguments.items()), (text[:cut], calls)
        at = generator.randrange(len(text) + 1)
        for mutated in ("[" * 5000 + text, text[:at] + generator.choice(noise) + text[at:], text * 40):
            assert isinstance(read_tool_calls(mutated, parser=family), list)
