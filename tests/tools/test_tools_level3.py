"""The 21 non-search level-3 tools: schemas, gold replay, special logic."""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any

import pytest
from apibank_tools.base import CallRejected
from apibank_tools.coercion import coerce_paper
from apibank_tools.environment import Session, new_session
from apibank_tools.level12.calculator import NON_TERMINATING as NEVER_TERMINATES
from apibank_tools.registry import LEVEL_3

GOLD_FILE = Path("test-data/level-3.json")
SEARCH = "ToolSearcher"

# Catalogue order fixed by upstream's file names (clothing_recommandation.py, update_account_info.py ...).
CATALOGUE = [
    "AccountInfo", "AddMeeting", "Calculator", "ClothingRecommendation", "EmailReminder", "FlightSearch",
    "Geocoding", "GetOccupationSalary", "GetWeatherForCoordinates", "HotelAvailability", "LikeCount",
    "MovieRecommendations", "NearbyRestaurants", "OrganizationMembers", "QueryMeeting", "TaxCalculator",
    "TravelStatus", "PersonalInfoUpdate", "UserPosts", "UserWatchedMovies", "UserMoviePreferences",
]


def _dialogues() -> list[dict[str, Any]]:
    # Parametrisation happens before fixtures exist: the same place as conftest's ``data_dir``.
    shared = Path(__file__).resolve().parents[3] / "shared" / "apibank-upstream"
    return json.loads((shared / GOLD_FILE).read_text("utf-8"))


DIALOGUES = _dialogues()
GOLD_CALLS = [
    pytest.param(call, id=f"d{d}-c{c}-{call['api_name']}")
    for d, dialogue in enumerate(DIALOGUES)
    for c, call in enumerate(dialogue["apis"])
    if call["api_name"] != SEARCH
]


def _session(data_dir: Path) -> Session:
    return new_session("level-3", data_dir)


def _call(session: Session, name: str, **arguments: Any) -> dict[str, Any]:
    return session.call(name, arguments, coercion="none")


# ------------------------------------------------------------------------------------ schemas
def test_catalogue_order_and_size():
    assert [name for name in LEVEL_3.names() if name != SEARCH] == CATALOGUE


def test_descriptors_are_the_recorded_ones_byte_for_byte():
    recorded = {}
    for dialogue in DIALOGUES:
        for call in dialogue["apis"]:
            if call["api_name"] == SEARCH:
                entry = call["output"]["output"]
                recorded[entry["name"]] = json.dumps(entry)
    assert sorted(recorded) == sorted(CATALOGUE)
    for name in CATALOGUE:
        assert json.dumps(LEVEL_3.descriptor(name)) == recorded[name], name


@pytest.mark.parametrize("name", CATALOGUE)
def test_every_parameter_is_required_and_schema_exported(name):
    schema = LEVEL_3.json_schema(name)["function"]
    assert schema["parameters"]["required"] == list(LEVEL_3.get(name).input_parameters)
    assert LEVEL_3.describe(name) == json.dumps(LEVEL_3.descriptor(name), ensure_ascii=True)


# ------------------------------------------------------------------ gold calls
@pytest.mark.parametrize("gold", GOLD_CALLS)
def test_gold_call_reproduces_from_fresh_state(gold, data_dir):
    recorded = gold["output"]
    name = gold["api_name"]
    executed = _call(_session(data_dir), name, **recorded["input"])
    assert executed == recorded
    tool = LEVEL_3.get(name)
    assert tool.check_corrected(executed, recorded)
    assert tool.check(copy.deepcopy(executed), copy.deepcopy(recorded))


def _parsed_as_paper_text(value: Any) -> str:
    """The value the paper's parser extracts from ``key='<value>'`` in a batch prompt.

    A quoted value ends at the next quote of either kind, so ``'['Mary', 'Peter']'`` yields ``[``.
    """
    text = str(value)
    cuts = [i for i in (text.find("'"), text.find('"')) if i >= 0]
    return text[: min(cuts)] if cuts else text


def test_gold_calls_through_the_paper_path(data_dir):
    """One shared session for the whole file, as lv3_evaluator keeps one manager."""
    session = _session(data_dir)
    failed = []
    judged = 0
    for d, dialogue in enumerate(DIALOGUES):
        for c, call in enumerate(dialogue["apis"]):
            name = call["api_name"]
            if name == SEARCH:
                continue
            tool = LEVEL_3.get(name)
            texts = {key: _parsed_as_paper_text(value) for key, value in call["input"].items()}
            executed = session.tool(name).execute(coerce_paper(tool, texts))
            reproduced = executed == call["output"]
            corrected = tool.check_corrected(executed, call["output"])
            verdict = tool.check(executed, copy.deepcopy(call["output"]))
            assert corrected == verdict
            judged += 1
            assert reproduced == verdict
            if not verdict:
                failed.append((name, executed["exception"]))
    assert judged == 131
    assert sorted(failed) == sorted([("AddMeeting", None)] * 5 + [("MovieRecommendations", "'['")] * 5)


# --------------------------------------------------------------------------------- Calculator
@pytest.mark.parametrize(
    "formula, output, exception",
    [
        ("40+50+60", 150.0, None),
        ("(1+2)*(3+4)", 21.0, None),
        ("7-2-1", 4.0, None),
        ("8/2*2", 8.0, None),
        ("30 / 3", 10.0, None),
        ("3-(2)", 1.0, None),
        ("1+2*3-4/5", 6.2, None),
        ("7/3", 2.3333333333333335, None),
        ("1+2-3*4/5", 0.6000000000000001, None),
        ("007+1", 8.0, None),
        ("(1+2)(3)", 3.0, None),
        ("2(3)+1", 2.0, None),
        ("((1+2))*3", None, "')' is not in list"),
        ("((1+2)*3)", None, "')' is not in list"),
        ("(1+(2*3))", None, "')' is not in list"),
        ("1/0", None, "float division by zero"),
        ("5*-3", None, "can't multiply sequence by non-int of type 'float'"),
        ("3*-2", None, "can't multiply sequence by non-int of type 'float'"),
        ("1++2", None, "unsupported operand type(s) for +: 'float' and 'str'"),
        ("1+-2", None, "unsupported operand type(s) for +: 'float' and 'str'"),
        ("1-+2", None, "unsupported operand type(s) for -: 'float' and 'str'"),
        ("()+1", None, "list index out of range"),
        ("1+2*", None, "list index out of range"),
        ("1+2)(", None, "list index out of range"),
        ("5)+(3", None, "list index out of range"),
        ("12+", None, "list index out of range"),
        ("+", None, "list index out of range"),
        ("1()+2", None, "list index out of range"),
        ("2.5*2", None, "invalid formula"),
        ("5", None, "invalid formula"),
        ("(5)", None, "invalid formula"),
        ("1+", None, "invalid formula"),
        ("-5", None, "invalid formula"),
        ("(1+2", None, "invalid formula"),
        ("2*(3", None, "invalid formula"),
        ("", None, "invalid formula"),
        ("1\t+2", None, "invalid formula"),
        # Upstream never returns on these; we fail at once instead.
        ("-5+3", None, NEVER_TERMINATES),
        ("+12", None, NEVER_TERMINATES),
        ("2*(-3)", None, NEVER_TERMINATES),
        ("5*(-2)", None, NEVER_TERMINATES),
        ("-(1+2)", None, NEVER_TERMINATES),
        # ...unless the first step of the endless loop already fails.
        ("2*(/0)", None, "float division by zero"),
    ],
)
def test_calculator(formula, output, exception, data_dir):
    result = _call(_session(data_dir), "Calculator", formula=formula)
    assert (result["output"], result["exception"]) == (output, exception)


@pytest.mark.parametrize(
    "formula",
    [
        "1+" * 100_000 + "1",
        "(1+1)*" * 30_000 + "1",
        "(" * 50_000 + "1+1" + ")" * 50_000,
        "9" * 200_000 + "*9",
        "-" * 100_000 + "1" * 100_000,
        ")(" * 50_000 + "+1",
    ],
)
def test_calculator_pathological_inputs_end_quickly(formula, data_dir):
    session = _session(data_dir)
    started = time.process_time()  # CPU time: the machine's load does not count
    result = _call(session, "Calculator", formula=formula)
    assert time.process_time() - started < 2.0
    assert set(result) == {"api_name", "input", "output", "exception"}


def test_calculator_check_ignores_spaces_only(data_dir):
    check = LEVEL_3.get("Calculator").check
    gold = {"api_name": "Calculator", "input": {"formula": "1 + 2"}, "output": 3.0, "exception": None}
    assert check({**gold, "input": {"formula": "1+2"}}, gold)
    assert not check({**gold, "input": {"formula": "2+1"}}, gold)


# -------------------------------------------------------------------------- stateful tools
def test_flight_search_rewrites_its_table_so_a_repeated_route_fails(data_dir):
    session = _session(data_dir)
    first = _call(session, "FlightSearch", source="New York", destination="London", travel_dates="2022-01-04")
    assert first["output"] == {
        "flights": [
            {
                "source": "New York",
                "destination": "London",
                "departure_date": "2022-01-04 12:00:00",
                "arrival_date": "2022-01-04 15:00:00",
            }
        ]
    }
    other_day = _call(session, "FlightSearch", source="New York", destination="London", travel_dates="2022-01-09")
    assert other_day["exception"] == "'str' object has no attribute 'date'"
    none = _call(session, "FlightSearch", source="New York", destination="Paris", travel_dates="2022-01-04")
    assert none["output"] == {"flights": []}
    bad = _call(session, "FlightSearch", source="New York", destination="London", travel_dates="2022/01/04")
    assert bad["exception"] == "time data '2022/01/04' does not match format '%Y-%m-%d'"
    # A new session is a new world.
    again = _call(_session(data_dir), "FlightSearch", source="New York", destination="London", travel_dates="2022-01-04")
    assert again == first


def test_hotel_availability_window_and_rematch_bug(data_dir):
    session = _session(data_dir)
    same_day = _call(
        session, "HotelAvailability", destination="San Francisco", check_in_date="2022-01-02", check_out_date="2022-01-02"
    )
    assert same_day["output"] == {
        "hotels": [
            {"destination": "San Francisco", "check_in_date": "2022-01-01", "check_out_date": "2022-01-02"},
            {"destination": "San Francisco", "check_in_date": "2022-01-02", "check_out_date": "2022-01-03"},
        ]
    }
    again = _call(
        session, "HotelAvailability", destination="San Francisco", check_in_date="2022-01-01", check_out_date="2022-01-02"
    )
    assert again["exception"] == "'str' object has no attribute 'strftime'"
    untouched = _call(
        session, "HotelAvailability", destination="San Francisco", check_in_date="2022-01-05", check_out_date="2022-01-06"
    )
    assert untouched["output"]["hotels"] == [
        {"destination": "San Francisco", "check_in_date": "2022-01-05", "check_out_date": "2022-01-06"}
    ]
    elsewhere = _call(session, "HotelAvailability", destination="Paris", check_in_date="2022-01-01", check_out_date="2022-01-02")
    assert elsewhere["output"] == {"hotels": []}


def test_personal_info_update_keeps_its_own_accounts(data_dir):
    session = _session(data_dir)
    updated = _call(session, "PersonalInfoUpdate", username="Tom", password="asdfgh", address="1 Road")
    assert updated["output"] == {"status": "success"}
    assert session.tool("PersonalInfoUpdate").accounts[3]["address"] == "1 Road"
    info = _call(session, "AccountInfo", username="Tom", password="asdfgh")
    assert info["output"] == {"email": "tom@example.com", "phone": "4564564567"}
    assert _call(session, "PersonalInfoUpdate", username="Tom", password="x", address="")["exception"] == "User not found."
    assert _call(session, "AccountInfo", username="tom", password="asdfgh")["exception"] == "User not found."


def test_add_meeting_validates_then_stores(data_dir):
    session = _session(data_dir)
    ok = _call(
        session, "AddMeeting", meeting_topic="Sync", start_time="2023-6-8 9:0:0", end_time="2023-06-08 10:00:00",
        location="A", attendees="[",
    )
    assert ok["output"] == "success"
    assert session.tool("AddMeeting").meetings[0]["attendees"] == "["
    blank = _call(
        session, "AddMeeting", meeting_topic="  ", start_time="2023-06-08 09:00:00", end_time="2023-06-08 10:00:00",
        location="A", attendees=[],
    )
    assert blank["exception"] == "Meeting Topic should not be null"
    late = _call(
        session, "AddMeeting", meeting_topic="", start_time="2023-06-08 09:00:00", end_time="2023-06-08 10:00:00x",
        location="A", attendees=[],
    )
    assert late["exception"] == "unconverted data remains: x"


# ------------------------------------------------------------------------- lookups and messages
@pytest.mark.parametrize(
    "name, arguments, exception",
    [
        ("Geocoding", {"address": "Berlin"}, "'Berlin'"),
        ("Geocoding", {"address": "Rock'n'roll"}, '"Rock\'n\'roll"'),
        ("UserPosts", {"user_id": 6}, "6"),
        ("MovieRecommendations", {"preferences": "['Action']"}, "'['"),
        ("MovieRecommendations", {"preferences": "Action"}, "'A'"),
        ("MovieRecommendations", {"preferences": ["Horror"]}, "'Horror'"),
        ("OrganizationMembers", {"organization": "alibaba"}, "'alibaba'"),
        ("QueryMeeting", {"user_name": "Bob"}, "'Bob'"),
        ("TravelStatus", {"member_name": "Eve"}, "'Eve'"),
        ("UserMoviePreferences", {"user_name": "Eve"}, "'Eve'"),
        ("UserWatchedMovies", {"user_name": "Eve"}, "User not found."),
        ("LikeCount", {"post_id": 16}, "Post with ID 16 does not exist."),
        ("GetOccupationSalary", {"occupation": "Pilot"}, "The occupation is not in the database."),
        ("TaxCalculator", {"salary": -1.0}, ""),
        ("EmailReminder", {"content": " ", "time": "2021-01-01 10:00:00", "location": "", "recipient": ""},
         "Content should not be empty"),
        ("EmailReminder", {"content": "x", "time": "2021-01-01", "location": "", "recipient": ""},
         "time data '2021-01-01' does not match format '%Y-%m-%d %H:%M:%S'"),
    ],
)
def test_failure_messages(name, arguments, exception, data_dir):
    result = _call(_session(data_dir), name, **arguments)
    assert result["output"] is None
    assert result["exception"] == exception


@pytest.mark.parametrize(
    "name, arguments, output",
    [
        ("MovieRecommendations", {"preferences": ["Romance", "Romance"]},
         {"recommended_movies": ["Titanic", "La La Land", "The Notebook"] * 2}),
        ("MovieRecommendations", {"preferences": []}, {"recommended_movies": []}),
        ("TaxCalculator", {"salary": 100000.0}, {"salary_after_tax": 70000.0}),
        ("TaxCalculator", {"salary": 4999.0}, {"salary_after_tax": 3999.2}),
        ("TaxCalculator", {"salary": 2999.5}, {"salary_after_tax": 2699.55}),
        ("TaxCalculator", {"salary": 999.0}, {"salary_after_tax": 999.0}),
        ("ClothingRecommendation", {"temperature": 5.0, "humidity": 71.0, "weather_conditions": "Light RAIN"},
         {"clothing_options": ["Warm coat", "Hat", "Gloves", "Umbrella", "Waterproof shoes", "Raincoat"]}),
        ("ClothingRecommendation", {"temperature": 30.0, "humidity": 0.9, "weather_conditions": "Rainy"},
         {"clothing_options": ["Sun hat", "Sunglasses", "Loose-fitting clothes", "Raincoat"]}),
        ("ClothingRecommendation", {"temperature": 20.0, "humidity": 70.0, "weather_conditions": "Clear"},
         {"clothing_options": ["T-shirt", "Shorts"]}),
        ("LikeCount", {"post_id": 15}, {"like_count": 150}),
        ("TravelStatus", {"member_name": "Jane"}, "Working from office"),
        ("NearbyRestaurants", {"latitude": 0.0, "longitude": 0.0, "distance": 1},
         {"restaurants": [
             {"coordinates": [40.7128, 74.006], "name": "Restaurant A"},
             {"coordinates": [37.7749, 122.4194], "name": "Restaurant B"},
             {"coordinates": [40.7128, 74.006], "name": "Restaurant C"},
             {"coordinates": [37.7749, 122.4194], "name": "Restaurant D"},
         ]}),
    ],
)
def test_outputs(name, arguments, output, data_dir):
    result = _call(_session(data_dir), name, **arguments)
    assert result["exception"] is None
    assert result["output"] == output


def test_outputs_do_not_share_the_tools_data(data_dir):
    first = _call(_session(data_dir), "QueryMeeting", user_name="John")
    first["output"]["meetings"][0]["meeting_attendees"].append("Eve")
    second = _call(_session(data_dir), "QueryMeeting", user_name="Mary")
    assert second["output"]["meetings"][0]["meeting_attendees"] == ["John", "Mary", "Peter"]


def test_weather_for_unknown_coordinates_never_reaches_an_envelope(data_dir):
    session = _session(data_dir)
    # The paper's parser truncates an unquoted 40.7128 to 40.
    arguments = coerce_paper(LEVEL_3.get("GetWeatherForCoordinates"), {"latitude": "40", "longitude": "74.0060"})
    with pytest.raises(CallRejected) as caught:
        session.tool("GetWeatherForCoordinates").execute(arguments)
    assert caught.value.kind == "invalid_value"
    assert str(caught.value) == "'NoneType' object is not subscriptable"
    with pytest.raises(CallRejected, match="missing 1 required positional argument: 'longitude'"):
        _call(session, "GetWeatherForCoordinates", latitude=40.7128)


# ------------------------------------------------------------------------------------ checks
def _record(name: str, inputs: dict[str, Any], output: Any, exception: str | None = None) -> dict[str, Any]:
    return {"api_name": name, "input": inputs, "output": output, "exception": exception}


def test_add_meeting_check_uses_topic_overlap_and_edits_both_records():
    check = LEVEL_3.get("AddMeeting").check
    rest = {"start_time": "2023-06-08 14:00:00", "end_time": "2023-06-08 15:00:00", "location": "A", "attendees": ["Mary"]}
    gold = _record("AddMeeting", {"meeting_topic": "Team Meeting", **rest}, "success")
    close = _record("Whatever", {"meeting_topic": "Team Meeting now", **rest}, "success")
    assert LEVEL_3.get("AddMeeting").check_corrected(close, gold)
    assert "meeting_topic" in gold["input"] and "meeting_topic" in close["input"]
    assert check(close, gold)  # 2/3 overlap; no name assertion
    assert "meeting_topic" not in gold["input"] and "meeting_topic" not in close["input"]
    with pytest.raises(KeyError):  # judging the same gold twice, as the original evaluator would
        check(_record("AddMeeting", {"meeting_topic": "Team Meeting", **rest}, "success"), gold)
    far = _record("AddMeeting", {"meeting_topic": "Team sync", **rest}, "success")
    assert not check(far, _record("AddMeeting", {"meeting_topic": "Team Meeting", **rest}, "success"))  # 1/3


def test_email_reminder_check_ignores_content_and_edits_both_records():
    check = LEVEL_3.get("EmailReminder").check
    inputs = {"content": "a", "time": "2021-01-01 10:00:00", "location": "Room 1", "recipient": "x@y"}
    gold = _record("EmailReminder", dict(inputs), "success")
    prediction = _record("EmailReminder", {**inputs, "content": "something else"}, "success")
    assert LEVEL_3.get("EmailReminder").check_corrected(prediction, gold)
    assert "content" in gold["input"]
    assert check(prediction, gold)
    assert "content" not in gold["input"]
    with pytest.raises(AssertionError, match="The API name is not correct."):
        check(_record("AddMeeting", dict(inputs), "success"), _record("EmailReminder", dict(inputs), "success"))


@pytest.mark.parametrize(
    "name, inputs, gold_output",
    [
        ("TaxCalculator", {"salary": 100000.0}, {"salary_after_tax": 70000.0}),
        ("HotelAvailability", {"destination": "San Francisco", "check_in_date": "2022-01-01", "check_out_date": "2022-01-02"},
         {"hotels": []}),
    ],
)
def test_unguarded_output_crashes_the_original_check_only(name, inputs, gold_output):
    tool = LEVEL_3.get(name)
    errored = _record(name, dict(inputs), None, "boom")
    gold = _record(name, dict(inputs), gold_output)
    with pytest.raises(TypeError):
        tool.check(errored, gold)
    assert tool.check_corrected(errored, gold) is False


def test_checks_that_skip_fields():
    nearby = LEVEL_3.get("NearbyRestaurants").check
    inputs = {"latitude": 1.0, "longitude": 2.0, "distance": 3}
    assert nearby(_record("NearbyRestaurants", inputs, None, "x"), _record("NearbyRestaurants", inputs, {"restaurants": []}))
    update = LEVEL_3.get("PersonalInfoUpdate").check
    inputs = {"username": "John", "password": "123456", "address": "a"}
    status = {"status": "success"}
    assert update(_record("PersonalInfoUpdate", inputs, status, "x"), _record("PersonalInfoUpdate", inputs, status))
    hotel = LEVEL_3.get("HotelAvailability").check
    inputs = {"destination": "Paris", "check_in_date": "2022-01-01", "check_out_date": "2022-01-02"}
    assert hotel(_record("HotelAvailability", inputs, {"hotels": []}, "x"), _record("HotelAvailability", inputs, {"hotels": []}))
    weather = LEVEL_3.get("GetWeatherForCoordinates").check
    same = {"latitude": 1.0, "longitude": 2.0}
    assert weather(_record("Other", same, 1), _record("GetWeatherForCoordinates", same, 1))
    standard = LEVEL_3.get("Geocoding").check
    assert not standard(_record("Geocoding", {"address": "a"}, 1, "x"), _record("Geocoding", {"address": "a"}, 1))
    with pytest.raises(AssertionError):
        standard(_record("Other", {"address": "a"}, 1), _record("Geocoding", {"address": "a"}, 1))


class _Endless(Exception):
    pass


def _upstream_calculator(formula: str) -> tuple[Any, str | None]:
    """The original's splicing procedure written out literally, with a step cap for its endless loops."""
    import operator

    from apibank_tools.level12.calculator import _is_valid as is_valid
    from apibank_tools.level12.calculator import tokenise as tokenize

    apply = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}
    steps = 0

    def evaluate(tokens: list[Any]) -> Any:
        nonlocal steps
        while "(" in tokens:
            i, j = tokens.index("("), tokens.index(")")
            tokens[i : j + 1] = [evaluate(tokens[i + 1 : j])]
        for level in ("*/", "+-"):
            while any(op in tokens for op in level):
                k = min(tokens.index(op) for op in level if op in tokens)
                result = apply[tokens[k]](tokens[k - 1], tokens[k + 1])
                tokens[k - 1 : k + 2] = [result]
                steps += 1
                if steps > 200 or (isinstance(result, str) and len(result) > 64):
                    raise _Endless
        return tokens[0]

    formula = formula.replace(" ", "")
    if not is_valid(formula):
        return None, "invalid formula"
    try:
        return evaluate(tokenize(formula)), None
    except _Endless:
        return None, NEVER_TERMINATES
    except Exception as error:
        return None, str(error)


def test_calculator_agrees_with_the_literal_procedure(data_dir):
    from hypothesis import given, settings
    from hypothesis import strategies as st

    session = _session(data_dir)
    pieces = st.sampled_from(["1", "2", "0", "10", "+", "-", "*", "/", "(", ")", " "])

    @settings(max_examples=400, deadline=None, derandomize=True)
    @given(st.lists(pieces, max_size=10).map("".join))
    def agree(formula: str) -> None:
        result = _call(session, "Calculator", formula=formula)
        assert (result["output"], result["exception"]) == _upstream_calculator(formula)

    agree()
