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
