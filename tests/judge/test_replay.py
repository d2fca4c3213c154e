"""The gold-replay table agrees with the replay counts measured on the recorded dialogues."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest
from apibank_tools import Session, pristine_data

from apibank.judge.replay import run_replay


@pytest.fixture(scope="module")
def replay(data_dir):
    data = pristine_data(data_dir).preload()
    before = {name: copy.deepcopy(data.store(name)) for name in data.database_names()}
    results = run_replay(data_dir)
    after = {name: data.store(name) for name in data.database_names()}
    return results, before, after


def _failures(report, api):
    return [f for f in report["failures"] if f["api"] == api]


def test_level12_table(replay):
    results, _, _ = replay
    report = results["level-1-2"]
    assert report["total"] == 508  # 389 level-1 + 119 level-2 API turns
    # level-1/2 tools A-M: 241 fresh, 254 with structured attendees, + 5 Dictionary from local data;
    # level-1/2 tools M-Z: 161 fresh + 4 Translate from local data; ToolSearcher: 14 of 45 recorded outputs.
    assert report["fresh"] == 259 + 165 + 14
    assert report["after_replay"] == 6
    assert report["not_reproducible"] == 64
    counts = {}
    for failure in report["failures"]:
        counts[failure["api"]] = counts.get(failure["api"], 0) + 1
    assert counts == {
        "AppointmentRegistration": 12,
        "CancelTimedSwitch": 5,
        "QueryScene": 5,
        "TimedSwitch": 3,
        "RegisterUser": 7,
        "QueryRegistration": 1,
        "ToolSearcher": 31,
    }
    (query_registration,) = _failures(report, "QueryRegistration")
    assert "recorded random ids" in query_registration["reason"]
    assert all("device_id" in f["reason"] for f in _failures(report, "TimedSwitch"))


def test_level3_table(replay):
    results, _, _ = replay
    report = results["level-3"]
    assert report["total"] == 245
    non_search = [f for f in report["failures"] if f["api"] != "ToolSearcher"]
    assert non_search == []
    searches = report["tool_searcher"]
    assert searches["total"] == 114
    assert report["fresh"] == 131 + searches["retrieves_recorded_tool"]
    assert searches["retrieves_recorded_tool_camel_split"] == 109
    assert report["after_replay"] == 0


def test_no_sample_state_leaks_into_pristine_data(replay):
    _, before, after = replay
    assert before == after


def test_sessions_do_not_see_each_other(data_dir):
    data = pristine_data(data_dir)
    first = Session("level-1-2", data)
    deleted = first.call("DeleteAccount", {"token": "a9s8d7f6g5h4j3k2l1"})
    assert deleted["exception"] is None
    assert first.call("CheckToken", {"token": "a9s8d7f6g5h4j3k2l1"})["exception"] == "The token is invalid."
    second = Session("level-1-2", data)
    assert second.call("CheckToken", {"token": "a9s8d7f6g5h4j3k2l1"})["output"] == {"username": "JohnDoe"}


def test_replay_command_prints_json(data_dir):
    result = subprocess.run(
        [sys.executable, "-m", "apibank_cli", "replay", "--data-dir", str(data_dir), "--json"],
        capture_output=True, text=True, check=True, timeout=600,
    )
    printed = json.loads(result.stdout)
    for name in ("level-1-2", "level-3"):
        assert {"total", "fresh", "after_replay", "not_reproducible", "failures"} <= set(printed[name])
        for failure in printed[name]["failures"]:
            assert {"file", "api", "reason"} <= set(failure) and ("turn" in failure or "index" in failure)
