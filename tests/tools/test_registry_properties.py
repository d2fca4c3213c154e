"""Properties that hold for every registered tool of both tool sets."""

from __future__ import annotations

import json
import re

import pytest
from apibank_tools import LEVEL_1_2, LEVEL_3, CallRejected, Session, pristine_data
from apibank_tools.base import CallTimeout
from apibank_tools.registry import TOOLSETS, ToolSet
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ALL_TOOLS = [(set_name, tool) for set_name, tools in TOOLSETS.items() for tool in tools.names()]
ENVELOPE_KEYS = {"api_name", "input", "output", "exception"}


def test_tool_counts():
    assert len(LEVEL_1_2) == 53
    assert len(LEVEL_3) == 22
    assert "ToolSearcher" in LEVEL_1_2 and "ToolSearcher" in LEVEL_3


@pytest.mark.parametrize("set_name,tool", ALL_TOOLS)
def test_schema_is_declared_and_serialisable(set_name, tool):
    tools = TOOLSETS[set_name]
    cls = tools.get(tool)
    assert cls.name == tool == cls.__name__ or cls.name == tool
    line = tools.describe(tool)
    assert json.loads(line) == cls.descriptor()
    assert list(json.loads(line)) == ["name", "description", "input_parameters", "output_parameters"]
    schema = tools.json_schema(tool)["function"]
    assert schema["name"] == tool
    assert list(schema["parameters"]["properties"]) == list(cls.input_parameters)
    assert set(schema["parameters"]["required"]) <= set(cls.input_parameters)


def _instruction_description_lines(data_dir) -> dict[str, set[str]]:
    seen: dict[str, set[str]] = {}
    for name in ("level-1-api", "level-1-response", "level-2-api", "level-2-response"):
        for record in json.loads((data_dir / f"test-data/{name}.json").read_text("utf-8")):
            _, _, descriptions = record["instruction"].partition("API descriptions:\n")
            for line in descriptions.split("\n"):
                if line.strip():
                    seen.setdefault(json.loads(line)["name"], set()).add(line)
    return seen


def test_prompt_descriptions_are_byte_exact(data_dir):
    """Every description line in the upstream prompts is what the registry renders.

    The one known exception is Translate: 8 samples (Translate-level-1-1…4) still carry the
    description the tool had when they were generated.
    """
    mismatched = {}
    for name, lines in _instruction_description_lines(data_dir).items():
        current = LEVEL_1_2.describe(name)
        stale = lines - {current}
        if stale:
            mismatched[name] = stale
    assert set(mismatched) == {"Translate"}
    assert all("translating text from source language" in line for line in mismatched["Translate"])


def test_level3_descriptors_match_recorded_searches(data_dir):
    dialogues = json.loads((data_dir / "test-data/level-3.json").read_text("utf-8"))
    for dialogue in dialogues:
        for call in dialogue["apis"]:
            if call["api_name"] == "ToolSearcher":
                found = call["output"]["output"]
                assert LEVEL_3.descriptor(found["name"]) == found


def test_unknown_tool_is_rejected_with_suggestion():
    with pytest.raises(CallRejected) as info:
        LEVEL_1_2.get("GetUserTokn")
    assert info.value.kind == "unknown_tool"
    assert str(info.value) == "invalid tool name."
    assert "GetUserToken" in str(info.value.__cause__)


def test_registry_is_read_only_after_loading():
    LEVEL_1_2.names()
    with pytest.raises(RuntimeError, match="read-only"):
        LEVEL_1_2.register(LEVEL_1_2.get("CheckToken"))


def test_duplicate_names_are_rejected():
    fresh = ToolSet("scratch", "apibank_tools.level12")
    cls = LEVEL_1_2.get("CheckToken")
    fresh.register(cls)
    with pytest.raises(ValueError, match="duplicate"):
        fresh.register(cls)


# ------------------------------------------------------------------------------- hostile arguments
_values = st.one_of(
    st.text(max_size=40),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.lists(st.text(max_size=10), max_size=4),
    st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=3),
)


def _arguments_for(cls):
    declared = list(cls.input_parameters)
    keys = st.one_of(st.sampled_from(declared), st.text(min_size=1, max_size=12)) if declared else st.text(min_size=1, max_size=12)
    return st.dictionaries(keys, _values, max_size=len(declared) + 2)


def _is_envelope(record, cls) -> bool:
    expected = ENVELOPE_KEYS if cls.envelope_has_api_name else ENVELOPE_KEYS - {"api_name"}
    failed = record.get("exception") is not None
    return set(record) == expected and (not failed or record["output"] is None)


@pytest.mark.parametrize("set_name,tool", [t for t in ALL_TOOLS if t[1] != "ToolSearcher"])
@pytest.mark.parametrize("coercion", ["paper", "typed"])
def test_hostile_arguments_get_a_verdict_never_a_crash(set_name, tool, coercion, data_dir):
    data = pristine_data(data_dir)
    cls = TOOLSETS[set_name].get(tool)

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None, derandomize=True)
    @given(arguments=_arguments_for(cls))
    def check(arguments):
        session = Session(set_name, data, timeout=5)
        try:
            record = session.call(tool, arguments, coercion=coercion)
        except CallRejected as rejected:
            assert rejected.kind in {
                "invalid_parameter_name",
                "invalid_parameter_type",
                "invalid_value",
                "missing_argument",
            }
            if rejected.kind == "invalid_parameter_name":
                assert re.fullmatch(r"invalid parameter name\. parameter: .*", str(rejected), re.S)
            return
        except CallTimeout:
            pytest.fail(f"{tool} timed out on {arguments!r}")
        assert _is_envelope(record, cls), record
        if record["exception"] is not None:
            assert isinstance(record["exception"], str)

    check()


@pytest.mark.parametrize("set_name,tool", ALL_TOOLS)
def test_undeclared_parameter_is_rejected_before_the_tool_runs(set_name, tool, data_dir):
    session = Session(set_name, pristine_data(data_dir))
    with pytest.raises(CallRejected) as info:
        session.call(tool, {"not_a_parameter": "x"})
    assert info.value.kind == "invalid_parameter_name"
    assert str(info.value) == "invalid parameter name. parameter: not_a_parameter"


@pytest.mark.parametrize("set_name,tool", ALL_TOOLS)
def test_missing_required_argument_is_rejected(set_name, tool, data_dir):
    cls = TOOLSETS[set_name].get(tool)
    if not cls.required_parameters():
        pytest.skip(f"{tool} has no required parameter")
    session = Session(set_name, pristine_data(data_dir))
    with pytest.raises(CallRejected) as info:
        session.call(tool, {})
    assert info.value.kind == "missing_argument"
    assert "required positional argument" in str(info.value)
