"""A reasoning block its token budget cut never becomes the prediction: the prediction is empty, the record says
``finish_reason`` ``length`` and keeps the raw output. The markers are every family's (``reasoning.BLOCKS``), and
a piece of one at the cut end (``<thin``, ``</thin``) counts as the marker the model was writing."""

from __future__ import annotations

import pytest

from apibank.generate import DecodingSettings, OracleBackend, build_conversation, generate_predictions
from apibank.generate.backends import Completion
from apibank.generate.runner import cut_while_reasoning, finish, partial_marker
from apibank.generate.toolcalls.reasoning import BLOCKS
from apibank.pipeline import load_rows

THINKING = DecodingSettings(max_new_tokens=8, thinking_budget=64)
PLAIN = DecodingSettings(max_new_tokens=8)
CALL = "API-Request: [GetToday()]"


@pytest.fixture(scope="module")
def row(data_dir):
    return next(row for row in load_rows(["level-1"], data_dir, limit=1) if row["kind"] == "api")


def _cut(text: str) -> Completion:
    return Completion(text=text, raw=text, extra={"finish_reason": "length"})


class CutWhileThinking(OracleBackend):
    """Every answer is the issue's: all reasoning (its template opened the block), cut at ``</thin``."""

    def render(self, conversation) -> str:
        return super().render(conversation) + "<think>\n"

    def generate(self, conversations, prompts, settings, on_completion=None):
        return [_cut("The user asks for the date, so GetToday.\n</thin") for _ in conversations]


def test_the_issues_run_saves_an_empty_prediction_and_keeps_the_raw_output(row):
    """The old code saved the reasoning (here, '<think'-like text) as the prediction."""
    records = generate_predictions([row], CutWhileThinking(), fmt="chat", settings=THINKING, progress=False)
    assert records[0]["prediction"] == ""
    assert records[0]["finish_reason"] == "length"
    assert records[0]["raw_output"] == "The user asks for the date, so GetToday.\n</thin"


@pytest.mark.parametrize("block", BLOCKS, ids=lambda block: block.name)
def test_a_block_opened_and_cut_anywhere_in_its_markers_is_no_answer(block, row):
    chat = build_conversation(row, "chat")
    for opener in block.openers:
        for closer in block.closers:
            for cut in range(len(closer)):  # cut before the closer, or inside it
                text = f"{opener}plan: {CALL}\n{closer[:cut]}"
                assert finish(chat, _cut(text), PLAIN) == ("", None), text


@pytest.mark.parametrize("block", [block for block in BLOCKS if block.prefilled], ids=lambda block: block.name)
def test_a_block_the_prompt_opened_is_no_answer_when_cut(block, row):
    chat = build_conversation(row, "chat")
    reasoning = f"the date is asked: {CALL}"
    for opener in block.openers:
        assert finish(chat, _cut(reasoning), PLAIN, prompt=f"...assistant\n{opener}\n") == ("", None), opener
    for closer in block.closers:
        for piece in range(2, len(closer)):  # a model that thinks first, cut while writing the closer
            assert finish(chat, _cut(reasoning + closer[:piece]), THINKING) == ("", None), closer[:piece]
    # the same text from a model that does not think, in a prompt that opened nothing, stays its answer
    assert finish(chat, _cut(reasoning), PLAIN, prompt="...assistant\n")[0] == reasoning


def test_what_the_cut_leaves_alone(row):
    chat = build_conversation(row, "chat")
    closed = f"<think>plan</think>{CALL}"
    assert finish(chat, _cut(closed), THINKING)[0] == CALL  # the block closed: the cut answer is kept
    assert finish(chat, _cut(f"{CALL}<thi"), THINKING)[0] == CALL  # a block only begun is no part of it
    assert finish(chat, _cut(f"{CALL}<|chan"), PLAIN)[0] == CALL
    ended = Completion(text=f"plan</thin {CALL}", raw=f"plan</thin {CALL}", extra={"finish_reason": "eos"})
    assert finish(chat, ended, THINKING)[0] == f"plan</thin {CALL}"  # not cut: read as it is
    assert partial_marker(f"{CALL} <") == "" and partial_marker("x</thin") == "</thin"
    assert not cut_while_reasoning(CALL, prompt="<think>a</think>\n", thinking=True)


def test_an_answer_before_a_block_cut_open_stays_the_answer(row):
    chat = build_conversation(row, "chat")
    assert finish(chat, _cut(f"{CALL}\n<think>now check the date again"), THINKING)[0] == CALL
    tools = build_conversation(row, "tools")
    called = Completion(text="", raw="x</thin", tool_calls=[("GetToday", {})], extra={"finish_reason": "length"})
    assert finish(tools, called, THINKING) == ("", None)  # read from the reasoning the budget cut: no call


class CutAgentStep(OracleBackend):
    """A template that opens the thinking block; every step is cut while thinking."""

    def render(self, conversation) -> str:
        return super().render(conversation) + "<think>\n"

    def generate(self, conversations, prompts, settings, on_completion=None):
        return [Completion(text='{"name": "GetToday", "arguments": {}} maybe', raw="r",
                           extra={"finish_reason": "length"}) for _ in conversations]


def test_an_agent_step_cut_while_thinking_has_no_answer_and_no_call():
    from apibank.agent.model_agent import ModelAgent, ModelDriver

    agent = ModelAgent(ModelDriver(CutAgentStep(), tool_format="text"))
    step = agent.act([{"role": "user", "content": "What day is it?"}], [])
    assert step.text == "" and step.calls == [] and step.raw == "r"


def test_an_endpoint_reply_cut_inside_reasoning_is_no_answer(data_dir, tmp_path):
    """An OpenAI-compatible server's finish_reason "length" is recorded and applies the same rule (the old
    endpoint backend recorded no finish_reason, so the reasoning became the prediction)."""
    import json

    import apibank_cli
    from support.local_endpoint import ChatCompletions

    reasoning = "<think>The user asks for the date, so GetToday.\n</thin"
    with ChatCompletions(lambda body: {"role": "assistant", "content": reasoning}, finish_reason="length") as server:
        status = apibank_cli.main(["evaluate", "--model", "m", "--backend", "openai", "--base-url", server.base_url,
                                   "--format", "chat", "--levels", "1", "--limit", "1", "--kinds", "api",
                                   "--allow-subset", "--data-dir", str(data_dir), "--output", str(tmp_path / "run"),
                                   "--quiet"])
    assert status == 0
    record = json.loads((tmp_path / "run" / "predictions.jsonl").read_text().splitlines()[0])
    assert record["prediction"] == "" and record["finish_reason"] == "length"
    assert json.loads(record["raw_output"])["content"] == reasoning
