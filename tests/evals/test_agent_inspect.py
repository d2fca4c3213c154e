"""The agentic episodes as inspect-ai tasks, offline with mockllm (issue 12, point 4)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.model import ModelOutput, get_model  # noqa: E402

from apibank.agent.agents import OracleAgent  # noqa: E402
from apibank.data.episodes import load_episodes  # noqa: E402
from apibank.agent.episode_runner import default_gold_cache, run_episode  # noqa: E402
from apibank.evals.agentic import apibank_agentic  # noqa: E402


def scripted_outputs(records):
    """The assistant turns of our own runs, replayed as mockllm outputs (same environment, same order)."""
    for record in records:
        for message in record["messages"]:
            if message["role"] != "assistant":
                continue
            calls = message.get("tool_calls") or []
            if not calls:
                yield ModelOutput.from_content("mockllm/model", message["content"] or "")
            for call in calls:
                # one call per output: the oracle issues one call per step
                yield ModelOutput.for_tool_call("mockllm/model", call["function"]["name"],
                                                json.loads(call["function"]["arguments"]), tool_call_id=call["id"])


@pytest.mark.parametrize(("level", "setting"), [("level-3", "searcher"), ("level-1", "searcher"), ("level-2", "all-tools")])
def test_inspect_loop_reaches_the_same_verdicts_as_our_runner(level, setting, data_dir, tmp_path):
    episodes = load_episodes(level, data_dir).episodes[:3]
    gold = default_gold_cache(data_dir)
    records = [run_episode(OracleAgent(), e, setting, gold) for e in episodes]
    assert all(r["verdict"]["success"] for r in records)
    model = get_model("mockllm/model", custom_outputs=scripted_outputs(records))
    log = inspect_eval(apibank_agentic(level=level, setting=setting, data_dir=str(data_dir)), model=model,
                       limit=3, max_samples=1, display="none", log_dir=str(tmp_path))[0]
    assert log.status == "success"
    samples = {s.id: s for s in log.samples}
    for record in records:
        score = samples[record["episode"]].scores["achieved"]
        assert score.value["success"] == 1.0, score.explanation
        assert [t["name"] for t in score.metadata["trajectory"]] == [t["name"] for t in record["trajectory"]]
    if level == "level-1":  # the recorded user turns arrive after each answer
        first = samples[records[0]["episode"]]
        users = [m.text for m in first.messages if m.role == "user"]
        assert users == [t.user for t in episodes[0].turns]


def test_epochs_give_pass_hat_k_and_pass_at_k(data_dir, tmp_path):
    log = inspect_eval(apibank_agentic(level="level-3", setting="all-tools", data_dir=str(data_dir), trials=2),
                       model="mockllm/model", limit=2, display="none", log_dir=str(tmp_path))[0]
    assert log.status == "success"
    reducers = {(s.name, s.reducer) for s in log.results.scores}
    assert {("success", "mean"), ("success", "pass_k_2"), ("success", "pass_at_2")} <= reducers
    for sample in log.samples:  # the default mockllm answers without a call: nothing achieved
        assert sample.scores["achieved"].value["success"] == 0.0


def test_inspect_eval_command_runs_offline_with_mockllm(data_dir, tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "APIBANK_DATA_DIR": str(data_dir), "INSPECT_LOG_DIR": str(tmp_path)}
    task = Path(__file__).resolve().parents[2] / "apibank" / "evals" / "agentic.py"
    result = subprocess.run(
        [sys.executable, "-m", "inspect_ai", "eval", f"{task}@apibank_agentic", "-T", "level=level-3",
         "--model", "mockllm/model", "--limit", "2", "--display", "plain", "--log-format", "json"],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    logs = list(tmp_path.glob("*.json"))
    assert len(logs) == 1
    log = json.loads(logs[0].read_text())
    assert log["status"] == "success" and len(log["samples"]) == 2
