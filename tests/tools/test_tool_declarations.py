"""What every tool declares for judges agrees with what its recorded gold calls really do.

Judges never name a tool; they read each tool's declarations (``apibank_tools.base``, "what judges
read"). Each gold call of the upstream dialogues is executed in the state its dialogue built (the
earlier gold calls replayed first), and everything a call could change is compared before and after.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from typing import Any, Sequence

import pytest
from apibank_tools import CallRejected, Session, pristine_data
from apibank_tools.base import Tool
from apibank_tools.registry import TOOLSETS

from apibank.judge.replay import GoldCall, level3_gold_calls, level12_gold_calls

ALL_TOOLS = [(set_name, name) for set_name, tools in TOOLSETS.items() for name in tools.names()]


class FirstFound:
    """A stand-in retrieval model: what a search finds does not change what the searcher may change."""

    model_id = "first-found"

    def best(self, keywords: str, documents: Sequence[str]) -> int | None:
        return 0 if documents else None

    def scores(self, keywords: str, documents: Sequence[str]) -> list[float]:
        return [1.0] + [0.0] * (len(documents) - 1)


@pytest.fixture(scope="module")
def data(data_dir):
    return pristine_data(data_dir).preload()


@pytest.fixture(scope="module")
def gold_calls(data_dir) -> dict[tuple[str, str], list[GoldCall]]:
    calls: dict[tuple[str, str], list[GoldCall]] = defaultdict(list)
    for call in level12_gold_calls(data_dir):
        calls[("level-1-2", call.api_name)].append(call)
    for call in level3_gold_calls(data_dir):
        calls[("level-3", call.api_name)].append(call)
    return calls


def _public(instance: Tool) -> dict[str, Any]:
    return {attr: value for attr, value in vars(instance).items() if attr != "session" and not attr.startswith("_")}


def _world(session: Session) -> dict[str, Any]:
    """Everything a call could change: each database of the session and every tool instance's records."""
    world = {f"db:{name}": copy.deepcopy(store) for name, store in session.written_stores().items()}
    for tool_name, instance in session.tool_instances().items():
        world.update({f"{tool_name}.{attr}": copy.deepcopy(value) for attr, value in _public(instance).items()})
    return world


def _changed(session: Session, before: dict[str, Any]) -> set[str]:
    after = _world(session)
    pristine = {key: session.data.store(key[3:]) for key in after if key.startswith("db:")}
    return {key for key, value in after.items() if value != before.get(key, pristine.get(key))}


def _run(tools: Any, data: Any, call: GoldCall, seed: int) -> tuple[dict[str, Any] | None, set[str]]:
    """The gold call's result in its dialogue's state (None if refused) and what it changed."""
    session = Session(tools, data, seed=seed, retriever=FirstFound(), timeout=None)
    session.replay(call.earlier)
    session.tool(call.api_name)  # the tool's own records exist before the snapshot, as judges take it
    before = _world(session)
    cls = tools.get(call.api_name)
    try:
        result = session.call(call.api_name, cls.current_arguments(call.arguments), coercion="none")
    except CallRejected:
        result = None
    return result, _changed(session, before)


@pytest.mark.parametrize("set_name,name", ALL_TOOLS)
def test_declared_records_are_the_tools_public_records(set_name, name, data):
    tools = TOOLSETS[set_name]
    cls = tools.get(name)
    instance = Session(tools, data, retriever=FirstFound()).tool(name)
    assert set(_public(instance)) == set(cls.state_records) | set(cls.incidental_records)
    assert set(cls.writes) <= set(data.database_names())
    assert set(cls.writes) <= {cls.database}, "a tool writes only the database it declares"
    assert not (cls.external_effect and cls.writes), "an effect outside the environment changes no database"


@pytest.mark.parametrize("set_name,name", ALL_TOOLS)
def test_declarations_hold_on_the_gold_calls(set_name, name, data, gold_calls):
    tools = TOOLSETS[set_name]
    cls = tools.get(name)
    may_change = {f"db:{db}" for db in cls.writes} | {f"{name}.{attr}" for attr in cls.state_records}
    incidental = {f"{name}.{attr}" for attr in cls.incidental_records}
    changed_by_successes: set[str] = set()
    successes = 0
    random_differs = False
    for call in gold_calls[(set_name, name)]:
        result, changed = _run(tools, data, call, seed=0)
        where = f"{call.file} @{call.position}"
        # A read-only tool (nothing declared) leaves every database and record as it found them.
        assert changed <= may_change | incidental, f"{where}: undeclared changes {sorted(changed - may_change - incidental)}"
        if result is None or result.get("exception") is not None:
            continue
        successes += 1
        changed_by_successes |= changed - incidental
        other_seed, _ = _run(tools, data, call, seed=1)
        random_differs |= other_seed != result
        if not cls.generates_random_values:
            assert other_seed == result, f"{where}: the result depends on the seed, but no random values are declared"
    if cls.external_effect:
        assert not changed_by_successes, "an effect outside the environment leaves no record"
    if cls.generates_random_values:
        assert successes and random_differs, f"{name} declares random values, but no result depends on the seed"


def test_the_special_declarations():
    """The few tools whose declarations the judges rely on beyond databases."""
    level12, level3 = TOOLSETS["level-1-2"], TOOLSETS["level-3"]
    declared = {
        (tools.name, name): cls
        for tools in (level12, level3) for name in tools.names() for cls in [tools.get(name)]
    }
    assert sorted(k for k, c in declared.items() if c.external_effect) == [
        ("level-1-2", "PlayMusic"), ("level-1-2", "SendEmail"), ("level-3", "EmailReminder")]
    assert sorted(k for k, c in declared.items() if c.generates_random_values) == [
        ("level-1-2", "AppointmentRegistration"), ("level-1-2", "RegisterUser")]
    assert sorted(k for k, c in declared.items() if c.incidental_records) == [
        ("level-3", "FlightSearch"), ("level-3", "HotelAvailability")]
    assert {k: c.renamed_parameters for k, c in declared.items() if c.renamed_parameters} == {
        ("level-1-2", "CancelTimedSwitch"): {"device_id": "name"},
        ("level-1-2", "TimedSwitch"): {"device_id": "name"},
    }
    assert level12.preloading() == ["Dictionary", "Translate"] and level3.preloading() == []
    assert level12.get("TimedSwitch").current_arguments({"device_id": "1", "on": True}) == {"name": "1", "on": True}
    # both spellings given: the recorded one is kept beside the current one (the call is then refused)
    assert level12.get("TimedSwitch").current_arguments({"device_id": "1", "name": "2"}) == {"device_id": "1", "name": "2"}


def test_an_unknown_coordinate_is_a_type_error_upstream(data):
    """The weather tool's failed lookup raised TypeError outside its catch-all; the rejection says so."""
    session = Session("level-3", data)
    with pytest.raises(CallRejected) as refused:
        session.call("GetWeatherForCoordinates", {"latitude": "40", "longitude": "74"}, coercion="paper")
    assert refused.value.kind == "invalid_value" and refused.value.raised is TypeError
