"""Each correction of the corrected protocol, shown on real samples beside the paper protocol's verdict.

The metric card lists these corrections and names the test of each.
"""

from __future__ import annotations

import pytest

from apibank.data.rows import iter_rows
from apibank.judge.retriever import CachedRetriever
from apibank.judge.scoring import score


@pytest.fixture(scope="module")
def rows(data_dir):
    return {row["id"]: row for config in ("level-1", "level-2", "level-3") for row in iter_rows(config, data_dir)}


@pytest.fixture(scope="module")
def judge(rows, data_dir):
    retriever = CachedRetriever()

    def run(row_id: str, prediction: str | None = None) -> dict[str, dict]:
        row = rows[row_id]
        text = row["expected_output"] if prediction is None else prediction
        result = score([text], [row["reference"]], return_details=True, data_dir=data_dir, retriever=retriever)
        return {d["protocol"]: d for d in result["details"]}

    return run


def test_list_arguments_are_parsed_as_lists(judge):
    """Paper: `attendees` stays text and never equals the recorded list; corrected: a real list."""
    row_id = "level-1/AddMeeting-level-1-1#2"
    verdicts = judge(row_id)
    assert verdicts["paper"]["category"] == "INPUT_MISMATCH"
    assert verdicts["corrected"]["verdict"] is True
    python_style = (
        "[AddMeeting(token='a9s8d7f6g5h4j3k2l1', meeting_topic='project updates', start_time='2022-12-15 14:00:00', "
        "end_time='2022-12-15 16:00:00', location='conference room', attendees=['John Smith', 'Jane Doe', 'Adam Lee'])]"
    )
    assert judge(row_id, python_style)["corrected"]["verdict"] is True


def test_record_health_data_list_of_dicts(judge):
    verdicts = judge("level-1/RecordHealthData-level-1-1#0")
    assert verdicts["paper"]["category"] == "HAS_EXCEPTION"
    assert verdicts["corrected"]["verdict"] is True


def test_annotation_notation_with_quoted_lists_at_level_3(judge):
    """`attendees='['Mary', 'Peter']'` and `preferences='[...]'` are read as lists at level 3."""
    assert judge("level-3/10#7")["paper"]["category"] == "INPUT_MISMATCH"
    assert judge("level-3/10#7")["corrected"]["verdict"] is True
    assert judge("level-3/20#5")["paper"]["category"] == "HAS_EXCEPTION"
    assert judge("level-3/20#5")["corrected"]["verdict"] is True


def test_unquoted_numbers_keep_their_value(judge):
    """Paper: `latitude=40.7128` is cut to '40' (unknown coordinates: a TypeError lv3_evaluator counts as an
    execution error); corrected: a float."""
    prediction = "[GetWeatherForCoordinates(latitude=40.7128, longitude=74.0060)]"
    verdicts = judge("level-3/5#1", prediction)
    assert verdicts["paper"]["arguments"] == {"latitude": "40", "longitude": "74"}
    assert verdicts["paper"]["category"] == "EXECUTION_TYPE_ERROR"
    assert verdicts["corrected"]["verdict"] is True


def test_typed_coercion_rejects_instead_of_aborting(judge):
    prediction = (
        "[BookHotel(hotel_name='Hilton San Francisco', check_in_time='2023-08-10', check_out_time='2023-08-15', "
        "room_count='one', adult_count=2, child_count=1)]"
    )
    verdicts = judge("level-1/BookHotel-level-1-1#0", prediction)
    assert verdicts["paper"]["category"] == "ABORT_INVALID_PARAMETER_TYPE"
    assert verdicts["corrected"]["category"] == "INVALID_INPUT_TYPE"
    numbers = prediction.replace("'one'", "1")
    assert judge("level-1/BookHotel-level-1-1#0", numbers)["corrected"]["verdict"] is True


def test_earlier_gold_calls_are_replayed(judge):
    """ForgotPassword's second step needs the first one's state."""
    verdicts = judge("level-1/ForgotPassword-level-1-1#2")
    assert verdicts["paper"]["category"] == "HAS_EXCEPTION"
    assert verdicts["corrected"]["verdict"] is True


def test_recorded_appointment_ids_are_adopted(judge):
    """QueryRegistration after an AppointmentRegistration whose id was random when recorded."""
    verdicts = judge("level-1/RecordHealthData-AppointmentRegistration-QueryRegistration-level-2-2#4")
    assert verdicts["paper"]["result"]["exception"] == "No appointments found."
    assert verdicts["corrected"]["verdict"] is True


def test_delete_meeting_success_is_judged(judge):
    """Paper: two successes read a missing `time` (KEY_ERROR); corrected: judged, and a wrong call fails."""
    row_id = "level-1/DeleteMeeting-level-1-1#2"
    verdicts = judge(row_id)
    assert verdicts["paper"]["category"] == "KEY_ERROR"
    assert verdicts["corrected"]["verdict"] is True
    wrong = judge(row_id, "[DeleteMeeting(token='l9k8j7h6g5f4d3s2a1', meeting_topic='Budget')]")
    assert wrong["corrected"]["verdict"] is False


def test_renamed_timed_switch_parameter(judge):
    """The gold uses `device_id`, renamed `name` in the tool: both spellings are accepted."""
    row_id = "level-1/TimedSwitch-level-1-1#0"
    verdicts = judge(row_id)
    assert verdicts["paper"]["category"] == "INVALID_INPUT_PARAMETER"
    assert verdicts["corrected"]["verdict"] is True
    renamed = "[TimedSwitch(name='12345', time='2021-08-05 19:00:00', on=True)]"
    assert judge(row_id, renamed)["paper"]["category"] == "KEY_ERROR"
    assert judge(row_id, renamed)["corrected"]["verdict"] is True
    assert judge(row_id, renamed.replace("on=True", "on=False"))["corrected"]["verdict"] is False


def test_query_scene_capitalisation_drift(judge):
    verdicts = judge("level-1/QueryScene-level-1-1#0")
    assert verdicts["paper"]["category"] == "OUTPUT_MISMATCH"
    assert verdicts["corrected"]["verdict"] is True
    assert judge("level-1/QueryScene-level-1-1#0", "[QueryScene(name='Party Time')]")["corrected"]["verdict"] is False


def test_tool_searcher_is_judged_on_the_retrieved_tool(judge, rows):
    """Descriptions changed after annotation: paper compares whole descriptions, corrected the tool found."""
    changed = "level-2/QueryStock-level-3-1#0"
    assert judge(changed)["paper"]["category"] == "OUTPUT_MISMATCH"
    assert judge(changed)["corrected"]["verdict"] is True
    # other keywords that retrieve the annotated tool are right; keywords that retrieve another are wrong
    good = judge(changed, "[ToolSearcher(keywords='stock price query')]")["corrected"]
    assert good["retrieved"] == "QueryStock" and good["verdict"] is True
    bad = judge(changed, "[ToolSearcher(keywords='set an alarm clock')]")["corrected"]
    assert bad["retrieved"] != "QueryStock" and bad["verdict"] is False


def test_tool_searcher_gold_keywords_that_miss_the_annotated_tool(judge):
    """`book meeting` was annotated with BookHotel but retrieves AddMeeting: both tools count as right."""
    row_id = "level-2/AddMeeting-level-3-1#0"
    verdicts = judge(row_id)
    assert verdicts["paper"]["verdict"] is False
    assert verdicts["corrected"]["verdict"] is True
    assert verdicts["corrected"]["recorded_tool"] == "BookHotel"
    assert verdicts["corrected"]["gold_keywords_tool"] == "AddMeeting"
    assert judge(row_id, "[ToolSearcher(keywords='hotel room booking')]")["corrected"]["verdict"] is True


def test_level_3_requires_the_gold_tool(judge):
    """Level-3 paper judges with the gold tool's check only; Calculator's has no name assertion."""
    row_id = "level-3/25#7"
    assert judge(row_id)["corrected"]["verdict"] is True
    other = judge(row_id, "[ToolSearcher(keywords='Calculator')]")
    assert other["paper"]["verdict"] is False
    assert other["corrected"]["category"] == "API_NAME_MISMATCH"


def test_original_aborts_count_as_wrong(judge):
    missing_keywords = judge("level-3/2#0", "[ToolSearcher(query='meeting')]")
    assert missing_keywords["paper"]["category"] == "ABORT_MISSING_KEYWORDS"
    assert missing_keywords["corrected"]["category"] == "INVALID_INPUT_PARAMETER"


def test_a_call_that_never_returns_is_cut_off(rows, data_dir, monkeypatch):
    """Upstream's Calculator can loop forever on some formulas; any such call ends at the time limit."""
    from apibank_tools.registry import LEVEL_1_2

    def forever(self, formula):
        while True:
            pass

    monkeypatch.setattr(LEVEL_1_2.get("Calculator"), "run", forever)
    row = rows["level-1/Calculator-level-1-1#0"]
    result = score([row["expected_output"]], [row["reference"]], return_details=True, data_dir=data_dir, timeout=0.2)
    assert {d["protocol"]: d["category"] for d in result["details"]} == {"paper": "TIMEOUT", "corrected": "TIMEOUT"}
    assert {d["error"] for d in result["details"]} == {"the sample exceeded its time limit of 0.2 s of CPU time"}
    assert result["paper"]["level-1"]["errors"] == {"TIMEOUT": 1}


def test_gigantic_arguments_get_a_verdict(rows, data_dir):
    row = rows["level-1/Calculator-level-1-1#0"]
    huge = "[Calculator(formula='" + "1+" * 500_000 + "1')]"
    result = score([huge], [row["reference"]], return_details=True, data_dir=data_dir, timeout=1.0)
    categories = {d["protocol"]: d["category"] for d in result["details"]}
    # a million characters is beyond the judged length: a documented category, never a truncation
    assert categories == {"paper": "PREDICTION_TOO_LONG", "corrected": "PREDICTION_TOO_LONG"}
