"""A judging verdict does not depend on the machine's load: a step's limit is the CPU time the worker
itself uses, counted from the worker's own reports, so a worker kept off the CPU (a loaded machine) or
a parent that reads its reports late (a busy caller) changes no verdict. Load is simulated
deterministically: sleeps in the worker or the parent, never timing assertions."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from apibank import score
from apibank.data.rows import iter_rows
from apibank.judge import scoring
from apibank.judge.categories import TIMEOUT
from apibank.judge.worker import Overrun, Step, run_steps
from support.endless import ENDLESS_PREDICTION, endless_receiver_check  # noqa: F401 (a fixture)


def _work(payload, state):
    kind, amount, marker = payload
    if kind == "sleep":  # off the CPU for a while: what a loaded machine does to the worker
        time.sleep(amount)
    elif kind == "burn":  # a bounded step that uses ``amount`` seconds of CPU
        end = time.process_time() + amount
        while time.process_time() < end:
            pass
    elif kind == "spin":
        while True:
            pass
    if marker:
        Path(marker).touch()
    return kind, state


def test_a_worker_kept_off_the_cpu_keeps_its_verdicts():
    steps = [Step(index, ("sleep", 0.3, None)) for index in range(3)] + [Step(3, ("spin", 0, None))]
    results = run_steps(steps, _work, timeout=0.1)
    assert results[:3] == ["sleep"] * 3  # three times the limit in wall time, no CPU: judged
    assert isinstance(results[3], Overrun) and results[3].kind == TIMEOUT
    assert "0.1 s of CPU time" in results[3].message


def test_a_parent_reading_late_keeps_the_verdicts(tmp_path):
    """The parent reads the over-long step's report only after the step finished: still TIMEOUT."""
    marker = tmp_path / "burnt"
    steps = [Step(0, ("sleep", 0, None)), Step(1, ("burn", 0.3, str(marker))), Step(2, ("sleep", 0, None))]

    def late(done, total):
        while done == 1 and not marker.exists():
            time.sleep(0.01)

    results = run_steps(steps, _work, timeout=0.1, progress=late)
    assert results[0] == results[2] == "sleep"
    assert isinstance(results[1], Overrun) and results[1].kind == TIMEOUT


def test_a_blocked_step_is_stopped_by_the_wall_limit(monkeypatch):
    from apibank.judge import worker

    monkeypatch.setattr(worker, "WALL_FACTOR", 2.0)
    results = run_steps([Step(0, ("sleep", 60, None)), Step(1, ("sleep", 0, None))], _work, timeout=0.1)
    assert isinstance(results[0], Overrun) and results[0].kind == TIMEOUT and "wall time" in results[0].message
    assert results[1] == "sleep"


@pytest.fixture(scope="module")
def sample(data_dir):
    rows = {row["id"]: row for level in ("level-1", "level-2", "level-3") for row in iter_rows(level, data_dir)}
    ids = ["level-1/SendEmail-level-1-1#0", "level-1/Calculator-level-1-1#0", "level-2/AddAgenda-level-3-1#0",
           "level-3/0#0", "level-1/SendEmail-level-1-1#0"]
    picked = [rows[i] for i in ids if i in rows]
    assert len(picked) == len(ids), "the sample's rows moved"
    predictions = [row["expected_output"] for row in picked[:-1]] + [ENDLESS_PREDICTION]
    return predictions, [row["reference"] for row in picked]


def _verdicts(result):
    return [(d["protocol"], d["verdict"], d["category"]) for d in result["details"] if d["kind"] == "api"]


def test_slowed_judging_gets_the_same_verdicts(sample, data_dir, monkeypatch, endless_receiver_check):
    predictions, references = sample
    plain = _verdicts(score(predictions, references, return_details=True, data_dir=data_dir, timeout=0.2))
    assert plain[-2:] == [("paper", False, TIMEOUT), ("corrected", False, TIMEOUT)]
    assert plain[:2] == [("paper", True, None), ("corrected", True, None)]

    real = scoring._handler

    def slowed(judge):
        handle = real(judge)

        def handler(payload, state):
            time.sleep(0.3)  # every step waits longer than its limit before it runs
            return handle(payload, state)

        return handler

    monkeypatch.setattr(scoring, "_handler", slowed)
    slow = score(predictions, references, return_details=True, data_dir=data_dir, timeout=0.2,
                 progress=lambda done, total: time.sleep(0.05))
    assert _verdicts(slow) == plain
