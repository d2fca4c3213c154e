"""Model agents of ``apibank agent`` through the model layer: an OpenAI-compatible endpoint with native
tool calls (local server), a tiny transformers model through its chat template and through the text
template, and episodes stepped together giving the same results as one at a time."""

from __future__ import annotations
from support.local_endpoint import ChatCompletions
from support.paths import TEMPLATES_DIR

import json

import pytest

from apibank.agent.agents import OracleAgent
from apibank.agent.model_agent import CallIds, ModelAgent, ModelDriver, step_from_text, text_prompt
from apibank.agent.environment import EpisodeEnvironment
from apibank.data.episodes import load_episodes
from apibank.agent.episode_runner import Limits, default_gold_cache, run_episode, run_level
from apibank.cli.main import main
from apibank.generate.backends import make_backend


class ScriptedEndpoint(ChatCompletions):
    """``POST /v1/chat/completions`` answering with a recorded list of assistant messages."""

    def __init__(self, replies: list[dict]):
        self.replies = list(replies)
        super().__init__(lambda body: self.replies.pop(0), usage={"prompt_tokens": 100, "completion_tokens": 7})


@pytest.fixture(scope="module")
def gold(data_dir):
    return default_gold_cache(data_dir)


def test_openai_compatible_endpoint_native_tool_calls_end_to_end(data_dir, gold, tmp_path, capsys):
    episode = load_episodes("level-3", data_dir).episodes[0]
    record = run_episode(OracleAgent(), episode, "searcher", gold)
    replies = [{"role": "assistant", "content": m["content"], **({"tool_calls": m["tool_calls"]} if m.get("tool_calls") else {})}
               for m in record["messages"] if m["role"] == "assistant"]
    with ScriptedEndpoint(replies) as endpoint:
        assert main(["agent", "--model", "served-model", "--base-url", endpoint.base_url, "--levels", "level-3",
                     "--setting", "searcher", "--limit", "1", "--data-dir", str(data_dir), "--output", str(tmp_path), "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)["level-3"]
    assert figures["succeeded"] == 1 and figures["episodes"] == 1
    first, later = endpoint.requests[0], endpoint.requests[-1]
    assert [t["function"]["name"] for t in first["tools"]] == ["ToolSearcher"]  # native tools, searcher setting
    assert len(later["tools"]) > 1  # found tools are offered from then on
    assert later["messages"][-1]["role"] == "tool"
    saved = json.loads((tmp_path / "trajectories.jsonl").read_text().splitlines()[0])
    assert "truncated" not in saved
    assert saved["usage"] == {"prompt_tokens": 100 * len(replies), "completion_tokens": 7 * len(replies)}
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["model"]["backend"] == "openai" and results["model"]["tool_format"] == "native"


@pytest.mark.parametrize("flags,thinking", [
    ([], {"budget": 0, "why": None, "given": False}),  # an endpoint's template is unknown: no default budget
    (["--thinking-budget", "64"], {"budget": 64, "why": None, "given": True}),
])
def test_thinking_budget_reaches_every_step_and_is_recorded(flags, thinking, data_dir, tmp_path, capsys):
    with ScriptedEndpoint([{"role": "assistant", "content": "Done."}]) as endpoint:
        assert main(["agent", "--model", "served-model", "--base-url", endpoint.base_url, "--levels", "level-3",
                     "--limit", "1", "--max-new-tokens", "32", "--data-dir", str(data_dir), "--output", str(tmp_path),
                     "--json", *flags]) == 0
    capsys.readouterr()
    assert [body["max_tokens"] for body in endpoint.requests] == [32 + thinking["budget"]]
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["thinking"] == thinking
    assert results["decoding"].get("thinking_budget", 0) == thinking["budget"]


def test_huge_model_outputs_are_stored_cut_and_flagged(data_dir, tmp_path, capsys):
    """A server sending megabytes: the trajectory keeps each of the model's texts (a call's argument, an
    answer) up to MAX_STORED_CHARS, flagged ``truncated``, as predictions are; it is judged on the whole."""
    from apibank.generate.runner import MAX_STORED_CHARS

    huge = "x" * (10 * MAX_STORED_CHARS)
    call = {"id": "c1", "type": "function",
            "function": {"name": "ToolSearcher", "arguments": json.dumps({"keywords": huge})}}
    with ScriptedEndpoint([{"role": "assistant", "content": "", "tool_calls": [call]},
                           {"role": "assistant", "content": huge}]) as endpoint:
        assert main(["agent", "--model", "served-model", "--base-url", endpoint.base_url, "--levels", "level-3",
                     "--setting", "searcher", "--limit", "1", "--max-steps", "2", "--data-dir", str(data_dir),
                     "--output", str(tmp_path), "--json"]) == 0
    capsys.readouterr()
    path = tmp_path / "trajectories.jsonl"
    record = json.loads(path.read_text())
    assert record["truncated"] is True and record["steps"] == 2
    assert record["answers"][0] == huge[:MAX_STORED_CHARS]
    # arguments longer than the readers read are kept as the text written, cut as well
    assert record["trajectory"][0]["arguments"] == call["function"]["arguments"][:MAX_STORED_CHARS]

    def texts(value):
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            for key, item in value.items():
                yield key
                yield from texts(item)
        elif isinstance(value, list):
            for item in value:
                yield from texts(item)

    assert max(map(len, texts(record))) == MAX_STORED_CHARS
    assert path.stat().st_size < 6 * MAX_STORED_CHARS


def test_calls_in_text_and_refused_arguments(data_dir, gold):
    step = step_from_text('<tool_call>{"name": "QueryMeeting", "arguments": {"user_name": "John"}}</tool_call>', CallIds())
    assert [(c.name, c.arguments) for c in step.calls] == [("QueryMeeting", {"user_name": "John"})] and step.text == ""
    answer = step_from_text("You have two meetings.", CallIds())
    assert answer.calls == [] and answer.text == "You have two meetings."
    env = EpisodeEnvironment(load_episodes("level-3", data_dir).episodes[0], "all-tools", gold.data)
    assert env.call("QueryMeeting", "user_name=John").error == "the arguments must be a JSON object"
    assert "invalid_parameter_name" in env.call("QueryMeeting", {"who": "John"}).error


def test_text_prompt_shows_tools_calls_and_results():
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"},
                {"role": "assistant", "content": "", "tool_calls": [{"id": "1", "type": "function", "function": {"name": "T", "arguments": '{"a": 1}'}}]},
                {"role": "tool", "tool_call_id": "1", "content": '{"output": 2}'}]
    tools = [{"type": "function", "function": {"name": "T", "description": "d", "parameters": {"type": "object", "properties": {}}}}]
    prompt = text_prompt(messages, tools)
    assert '"name": "T"' in prompt and 'Assistant: {"name": "T", "arguments": {"a": 1}}' in prompt
    assert prompt.endswith('Tool result: {"output": 2}\nAssistant:')


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory, data_dir):
    from support.tiny import build_tiny_model

    corpus = [e.turns[0].user for e in load_episodes("level-3", data_dir).episodes] + ['{"name": "QueryMeeting", "arguments": {}}']
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", corpus)


@pytest.mark.parametrize("tool_format", ["native", "text"])
def test_tiny_transformers_model_runs_episodes_end_to_end(tiny_model, tool_format, data_dir, gold):
    driver = ModelDriver(make_backend(str(tiny_model), device="cpu"), tool_format=tool_format, max_new_tokens=8)
    agent = ModelAgent(driver)
    assert driver.native == (tool_format == "native")
    episode = load_episodes("level-1", data_dir).episodes[0]
    record = run_episode(agent, episode, "all-tools", gold, limits=Limits(max_steps=3))
    assert 1 <= record["steps"] <= 3
    assert record["usage"]["completion_tokens"] <= 8 * record["steps"]
    assert record["verdict"]["success"] is False  # a random model achieves nothing
    assert record["verdict"]["state_ok"] in (True, False) and record["verdict"]["missing"]


def _without_timings(records):
    return [{k: v for k, v in r.items() if k not in ("seconds", "model_seconds")} for r in records]


@pytest.mark.parametrize("level,setting", [("level-1", "searcher"), ("level-3", "all-tools"), ("level-3", "searcher")])
def test_oracle_stepped_together_equals_one_at_a_time(level, setting, data_dir, gold):
    episodes = load_episodes(level, data_dir)
    one = run_level(OracleAgent, episodes, setting, gold, trials=2, limit=12, batch_size=1)
    many = run_level(OracleAgent, episodes, setting, gold, trials=2, limit=12, batch_size=8)
    assert [(r["episode"], r["trial"]) for r in many] == [(r["episode"], r["trial"]) for r in one]
    assert _without_timings(many) == _without_timings(one)
    assert all(r["verdict"]["success"] for r in many)


class CountingBackend:
    """Wraps a backend; records each generate call's size and its completions' reused prompt tokens."""

    def __init__(self, inner):
        self.inner, self.calls, self.reused = inner, [], []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def generate(self, conversations, prompts, settings):
        completions = self.inner.generate(conversations, prompts, settings)
        self.calls.append(len(conversations))
        self.reused.append([(c.extra.get("reused_prompt_tokens", 0), c.prompt_tokens) for c in completions])
        return completions


@pytest.mark.parametrize("tool_format", ["native", "text"])
def test_tiny_model_stepped_together_equals_one_at_a_time(tiny_model, tool_format, data_dir, gold):
    backend = make_backend(str(tiny_model), device="cpu")
    episodes = load_episodes("level-3", data_dir)
    limits = Limits(max_steps=3)

    def run(batch_size):
        counting = CountingBackend(backend)
        driver = ModelDriver(counting, tool_format=tool_format, max_new_tokens=12)
        records = run_level(lambda: ModelAgent(driver), episodes, "all-tools", gold, limit=6, limits=limits,
                            batch_size=batch_size)
        return records, counting

    one, sequential = run(1)
    many, batched = run(6)
    assert _without_timings(many) == _without_timings(one)
    steps = sum(r["steps"] for r in many)
    assert sum(batched.calls) == steps == sum(sequential.calls)
    assert len(batched.calls) <= limits.max_steps and max(batched.calls) == 6  # one batched call per model step
    assert all(r["usage"]["prompt_tokens"] > 0 and r["model_seconds"] > 0 for r in many)
    # The episodes share the system text and the tool schemas (most of the prompt): after the first prompt
    # of the run, every prompt of the first step reuses the KV cache of that prefix.
    assert all(reused > 0.9 * prompt for reused, prompt in batched.reused[0][1:])


def test_cli_strict_template_through_the_model_layer_records_adaptations(tiny_model, data_dir, tmp_path, capsys):
    import hashlib
    from pathlib import Path

    template = TEMPLATES_DIR / "strict_alternation.jinja"
    assert main(["agent", "--model", str(tiny_model), "--chat-template", str(template), "--setting", "all-tools",
                 "--levels", "3", "--limit", "2", "--max-steps", "2", "--max-new-tokens", "8", "--batch-size", "2",
                 "--price-per-mtok", "1,2", "--dtype", "float32", "--device", "cpu", "--data-dir", str(data_dir),
                 "--output", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["level-3"]["episodes"] == 2
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["model"]["tool_format"] == "native" and results["model"]["backend"] == "transformers"
    assert results["model"]["dtype"] == "float32" and results["batch_size"] == 2
    used = results["chat_template"]
    assert used["chat_template_sha256"] == hashlib.sha256(template.read_bytes()).hexdigest()
    names = [a["name"] for a in used["template_adaptations"]]
    assert {"tools-in-prompt", "system-in-first-user"} <= set(names)
    usage = results["usage"]
    assert usage["samples"] == 2 and usage["prompt_tokens"] > 0 and usage["generated_tokens"] > 0
    assert usage["cost"] > 0 and usage["seconds"] > 0 and usage["episodes_per_second"] > 0
    assert results["versions"]["transformers"] and results["versions"]["torch"]


@pytest.mark.parametrize("flags,message", [
    (["--levels", "4"], "--levels"),
    (["--batch-size", "0"], "--batch-size 0"),
    (["--thinking-budget", "-1"], "--thinking-budget -1: must be at least 0"),
    (["--price-per-mtok", "1"], "--price-per-mtok"),
    (["--chat-template", "no-such.jinja"], "--chat-template no-such.jinja"),
    (["--tool-format", "text", "--chat-template", "tests/templates/strict_alternation.jinja"], "--tool-format text"),
])
def test_cli_refuses_bad_options_before_any_work(flags, message, tiny_model, data_dir, tmp_path, capsys):
    output = tmp_path / "out"
    assert main(["agent", "--model", str(tiny_model), "--data-dir", str(data_dir), "--output", str(output),
                 *flags]) == 2
    error = capsys.readouterr().err
    assert message in error and len(error.strip().splitlines()) == 1
    assert not output.exists()
