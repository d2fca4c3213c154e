"""Argument coercion: the original ToolManager's rules and the corrected, typed ones."""

from __future__ import annotations

import pytest
from apibank_tools import LEVEL_1_2, LEVEL_3, CallRejected
from apibank_tools.coercion import coerce_paper, coerce_typed

BOOK_HOTEL = LEVEL_1_2.get("BookHotel")  # int counts
TIMED_SWITCH = LEVEL_1_2.get("TimedSwitch")  # bool `on`
ADD_MEETING = LEVEL_1_2.get("AddMeeting")  # list(str) attendees
WEATHER = LEVEL_3.get("GetWeatherForCoordinates")  # float coordinates


@pytest.mark.parametrize("text,expected", [("007", 7), ("12", 12)])
def test_paper_int_accepts_digit_text(text, expected):
    assert coerce_paper(BOOK_HOTEL, {"room_count": text}) == {"room_count": expected}


@pytest.mark.parametrize("text", ["-1", "1.0", " 1", "1e3", ""])
def test_paper_int_rejects_anything_but_digits(text):
    with pytest.raises(CallRejected) as info:
        coerce_paper(BOOK_HOTEL, {"room_count": text})
    assert info.value.kind == "invalid_parameter_type"
    assert str(info.value) == f"invalid parameter type. parameter: {text}"


def test_paper_int_unicode_digit_is_the_original_crash():
    with pytest.raises(CallRejected) as info:
        coerce_paper(BOOK_HOTEL, {"room_count": "²"})
    assert info.value.kind == "invalid_value"


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan"), [1], None])
def test_paper_int_structured_non_numbers_are_rejected_not_raised(value):
    # Structured arguments (tools format, replay) reach the paper rules without passing through text.
    with pytest.raises(CallRejected) as info:
        coerce_paper(BOOK_HOTEL, {"room_count": value})
    assert info.value.kind == "invalid_value"


@pytest.mark.parametrize("coerce,kind", [(coerce_paper, "invalid_value"), (coerce_typed, "invalid_parameter_type")])
def test_int_beyond_float_range_for_a_float_parameter_is_rejected(coerce, kind):
    # ast reads a 400-digit literal as an int; float() of it overflows.
    with pytest.raises(CallRejected) as info:
        coerce(WEATHER, {"latitude": 10**400})
    assert info.value.kind == kind


@pytest.mark.parametrize("text,expected", [(".5", 0.5), ("5.", 5.0), ("40.7128", 40.7128)])
def test_paper_float_allows_one_dot(text, expected):
    assert coerce_paper(WEATHER, {"latitude": text}) == {"latitude": expected}


@pytest.mark.parametrize("text", ["-33.86", "1e3", "1.2.3"])
def test_paper_float_rejects_signs_exponents_and_second_dots(text):
    with pytest.raises(CallRejected, match=r"^invalid parameter type\.$"):
        coerce_paper(WEATHER, {"latitude": text})


@pytest.mark.parametrize("value,expected", [("True", True), ("true", False), ("1", False), (True, False)])
def test_paper_bool_is_true_only_for_the_exact_text(value, expected):
    assert coerce_paper(TIMED_SWITCH, {"on": value}) == {"on": expected}


def test_paper_lists_stay_text():
    assert coerce_paper(ADD_MEETING, {"attendees": "['John', 'Jane']"}) == {"attendees": "['John', 'Jane']"}


def test_rejections_follow_the_text_order():
    with pytest.raises(CallRejected) as info:
        coerce_paper(BOOK_HOTEL, {"bogus": "x", "room_count": "-1"})
    assert info.value.kind == "invalid_parameter_name"
    assert str(info.value) == "invalid parameter name. parameter: bogus"


@pytest.mark.parametrize(
    "tool,key,value,expected",
    [
        (BOOK_HOTEL, "room_count", " 3 ", 3),
        (BOOK_HOTEL, "room_count", 2.0, 2),
        (WEATHER, "latitude", "-33.86", -33.86),
        (WEATHER, "latitude", 40, 40.0),
        (TIMED_SWITCH, "on", "false", False),
        (TIMED_SWITCH, "on", True, True),
        (ADD_MEETING, "attendees", "['John', 'Jane']", ["John", "Jane"]),
        (ADD_MEETING, "attendees", ("John",), ["John"]),
        (ADD_MEETING, "meeting_topic", 42, "42"),
    ],
)
def test_typed_coercion_converts_to_the_declared_schema(tool, key, value, expected):
    assert coerce_typed(tool, {key: value}) == {key: expected}


@pytest.mark.parametrize(
    "tool,key,value",
    [
        (BOOK_HOTEL, "room_count", True),
        (BOOK_HOTEL, "room_count", "two"),
        (WEATHER, "latitude", float("nan")),
        (TIMED_SWITCH, "on", "yes"),
        (ADD_MEETING, "attendees", "John and Jane"),
        (ADD_MEETING, "attendees", [1, 2]),
        (ADD_MEETING, "meeting_topic", None),
    ],
)
def test_typed_coercion_names_what_is_wrong(tool, key, value):
    with pytest.raises(CallRejected) as info:
        coerce_typed(tool, {key: value})
    assert info.value.kind == "invalid_parameter_type"
    assert key in str(info.value) and "expected" in str(info.value)
