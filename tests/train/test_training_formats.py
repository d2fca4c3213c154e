"""The training rows in trainer formats: every training and test sample converted or listed with its
cause, converted back to its original text, exported, loaded and rendered through chat templates."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from apibank.data.dialogues import mapping_source
from apibank.data.rendering import render_dialogue
from apibank.data.rows import iter_rows
from apibank.generate.conversation import build_conversation
from apibank.generate.templates import TemplateAdapter
from support.tiny import train_tokenizer
from apibank.train.formats import (
    TRAINER_CONFIGS,
    Failure,
    convert,
    convert_training,
    evaluation_dialogues,
    training_dialogues,
)
from apibank.notation import ParseError, display, parse_request, render_request, shown_value
from apibank.train.upstream_text import Unconvertible, parse_flattened
from support.paths import TEMPLATES_DIR as TEMPLATES


# The level-3 training set of the local copy (907 API + 338 response samples).
TRAINING_SEEN = 1245
TRAINING_CONVERTED = 1226
TRAINING_CAUSES = {
    "call to a tool neither offered nor found by a search": 4,  # e.g. CaloriesCalculator, never searched for
    "parameter the tool does not declare": 9,  # ToolSearcher(keywords=..., location=...)
    "several calls in one request": 2,  # [RatioCalculator(...), RatioCalculator(...), ...]
    "unparsable request": 4,  # API-Request: PharmacyLocator(location=New York), without brackets
}
TEST_SEEN = 1307
TEST_CONVERTED = 1277
TEST_CAUSES = {
    # level 2: the search is written inside an AI turn, so the tool called next was never found
    "call to a tool neither offered nor found by a search": 14,
    # level 1: CancelTimedSwitch is called with device_id, which its description does not declare
    "parameter the tool does not declare": 16,
}
FLATTENED_TEST_FILES = {
    "test-data/level-1-api.json": (1, "api"),
    "test-data/level-1-response.json": (1, "response"),
    "test-data/level-2-api.json": (2, "api"),
    "test-data/level-2-response.json": (2, "response"),
    "test-data/level-3-batch-inf.json": (3, "api"),
    "test-data/level-3-batch-inf-response.json": (3, "response"),
}


@pytest.fixture(scope="module")
def training(data_dir):
    return convert_training(data_dir, levels=(3,))


@pytest.fixture(scope="module")
def test_rows(data_dir):
    return list(evaluation_dialogues(data_dir))


# ---------------------------------------------------------------------------------- every sample
def test_every_training_sample_is_converted_or_listed_with_its_cause(training, data_dir):
    assert training.seen == TRAINING_SEEN
    assert len(training.examples["chat"]) == len(training.examples["prompt-completion"]) == TRAINING_CONVERTED
    assert training.by_cause() == TRAINING_CAUSES
    converted = [example["id"] for example in training.examples["chat"]]
    listed = [failure.id for failure in training.failures]
    every = [record["id"] for record in iter_rows("training", data_dir, levels=(3,))]
    assert sorted(converted + listed) == sorted(every) and len(set(converted + listed)) == len(every)
    kinds = Counter(example["kind"] for example in training.examples["chat"])
    assert kinds == {"api": 895, "response": 331}


def test_every_test_row_converts_with_the_test_time_messages_and_schemas(test_rows):
    conversion = convert(test_rows)
    assert conversion.seen == TEST_SEEN and len(conversion.examples["chat"]) == TEST_CONVERTED
    assert conversion.by_cause() == TEST_CAUSES
    by_id = {row["id"]: row for row in test_rows}
    for chat, pair in zip(conversion.examples["chat"], conversion.examples["prompt-completion"]):
        row = by_id[chat["id"]]
        tools_format = build_conversation(row, "tools")
        assert chat["messages"][:-1] == tools_format.messages and chat["tools"] == tools_format.tools
        assert pair["prompt"] == build_conversation(row, "paper").plain_text  # byte-identical
        assert pair["completion"] == row["expected_output"]


def test_training_examples_convert_back_to_the_original_texts(data_dir, training):
    records = {record["id"]: record for record in iter_rows("training", data_dir, levels=(3,))}
    rows = {row["id"]: row for row in training_dialogues(data_dir, levels=(3,)) if not isinstance(row, Failure)}
    for chat, pair in zip(training.examples["chat"], training.examples["prompt-completion"]):
        record, row = records[chat["id"]], rows[chat["id"]]
        assert pair["prompt"] == f"{record['instruction']}\n{record['input']}"
        assert pair["completion"] == record["expected_output"]
        assert render_dialogue(row["history"], 3) in record["input"]
        answer = chat["messages"][-1]
        if chat["kind"] == "api":
            call = answer["tool_calls"][0]["function"]
            quoting = json.loads(row["target"]["quoting"])
            assert render_request(call["name"], call["arguments"], quoting) == record["expected_output"]
            assert set(call["arguments"]) == set(quoting)
        else:
            assert record["expected_output"] in (f"AI: {answer['content']}\n", answer["content"])
    # Numbers stay numbers in the arguments objects; text written without quotes stays text.
    arguments = [m["tool_calls"][0]["function"]["arguments"] for e in training.examples["chat"]
                 for m in e["messages"] if m.get("tool_calls")]
    assert any(isinstance(value, (int, float)) for args in arguments for value in args.values())


def _scalars_as_text(messages):
    """Messages with every argument value and tool result shown as the flattened text shows it."""
    out = []
    for message in messages:
        message = dict(message)
        if message["role"] == "tool":
            message["content"] = display(json.loads(message["content"]))
        if message.get("tool_calls"):
            call = message["tool_calls"][0]["function"]
            message["tool_calls"] = [{**message["tool_calls"][0], "function": {
                "name": call["name"], "arguments": {k: display(v) for k, v in call["arguments"].items()}}}]
        out.append(message)
    return out


def test_flattened_test_files_read_back_into_the_test_rows(data_dir, test_rows):
    """The training files' code path, run on the flattened files this copy has for every level: each
    sample reads back into its test row, with the same conversation and the same tool schemas.
    Where the flattened text cannot tell a number from a digit string (a result `11`, an argument
    `temperature='10'`) the types differ; the texts never do."""
    by_id = {row["id"]: row for row in test_rows}
    same = 0
    for path, (level, kind) in FLATTENED_TEST_FILES.items():
        for record in json.loads((data_dir / path).read_text("utf-8")):
            if "file" in record:
                row_id = f"level-{level}/{record['file'][: -len('.jsonl')]}#{record['id']}"
            else:
                row_id = f"level-3/{record['sample_id']}#{record['api_id'] if kind == 'api' else 'response'}"
            row = by_id[row_id]
            parsed = parse_flattened(record, row_id=row_id, level=level, kind=kind)
            assert [(t["role"], t["text"], t["api_name"]) for t in parsed["history"]] == [
                (t["role"], t["text"], t["api_name"]) for t in row["history"]]
            ours, theirs = build_conversation(parsed, "tools"), build_conversation(row, "tools")
            assert ours.tools == theirs.tools
            assert _scalars_as_text(ours.messages) == _scalars_as_text(theirs.messages)
            assert build_conversation(parsed, "paper").plain_text == build_conversation(row, "paper").plain_text
            same += ours.messages == theirs.messages
    assert same == 1223  # of 1307; the rest differ only in a scalar's type


def test_level_1_and_2_training_files_take_the_same_path(data_dir):
    """The level-1/2 training files are not in the local copy; their records have the flattened
    layout of the level-1/2 test files, so those files stand in for them, read through the
    training config exactly as the downloaded files would be."""
    files = {}
    for level in (1, 2):
        for kind in ("api", "response"):
            files[f"training-data/lv{level}-{kind}-train.json"] = data_dir / f"test-data/level-{level}-{kind}.json"
    conversion = convert_training(levels=(1, 2), source=mapping_source(files))
    assert conversion.seen == 774 + 238
    assert conversion.by_cause() == TEST_CAUSES  # the same samples fail as in the test rows
    assert len(conversion.examples["chat"]) == 774 + 238 - sum(TEST_CAUSES.values())
    first = conversion.examples["prompt-completion"][0]
    record = json.loads(files["training-data/lv1-api-train.json"].read_text("utf-8"))[0]
    assert first["id"] == "training/lv1-api-train#0"
    assert first["prompt"] == f"{record['instruction']}\n{record['input']}"
    assert first["completion"] == record["expected_output"]


@pytest.mark.parametrize("text, arguments, quoting", [
    ("API-Request: [F(a='it's here', b='x')]", {"a": "it's here", "b": "x"}, {"a": "'", "b": "'"}),
    ('API-Request: [F(stage="Stage 2")]', {"stage": "Stage 2"}, {"stage": '"'}),
    ("API-Request: [F(name=John Smith, n=2, r=0.5)]", {"name": "John Smith", "n": 2, "r": 0.5},
     {"name": "", "n": "", "r": ""}),
    ("API-Request: [F(items=['a', 'b'], c='[1, 2]')]", {"items": ["a", "b"], "c": "[1, 2]"}, {"items": "", "c": "'"}),
    ("API-Request: [F()]", {}, {}),
])
def test_requests_read_back_exactly(text, arguments, quoting):
    assert parse_request(text) == ("F", arguments, quoting)
    assert render_request("F", arguments, quoting) == text


@pytest.mark.parametrize("text, cause", [
    ("API-Request: F(location=New York)", "unparsable request"),
    ("API-Request: [F(a=1, b=2), F(a=3, b=4)]", "several calls in one request"),
    ("API-Request: [F(a=1, a=2)]", "repeated parameter in a request"),
    ("API-Request: [F(a='open)]", "unparsable request"),
    ("[F(a='x')]", "unparsable request"),
    ("API-Request: [F(a='x')] and more", "unparsable request"),
])
def test_malformed_requests_are_refused_with_a_cause(text, cause):
    with pytest.raises(ParseError) as error:
        parse_request(text)
    assert error.value.cause == cause


@pytest.mark.parametrize("record, cause", [
    ({"instruction": "no descriptions", "input": "User: hi\nGenerate API Request:\n", "output": "x"},
     "instruction without API descriptions"),
    ({"instruction": "API descriptions:\n", "input": "User: hi\n", "output": "x"}, "input without a Generate trailer"),
    ({"instruction": "API descriptions:\n", "input": "Hello\nGenerate API Request:\n", "output": "x"},
     "unreadable dialogue"),
    ({"instruction": "API descriptions:\n{not json\n", "input": "User: hi\nGenerate API Request:\n", "output": "x"},
     "unreadable API description"),
    ({"instruction": "API descriptions:\n", "input": "User: hi\nGenerate AI Response:\n", "output": "x"},
     "trailer disagrees with the file"),
])
def test_malformed_samples_are_refused_with_a_cause(record, cause):
    with pytest.raises(Unconvertible) as error:
        parse_flattened(record, row_id="r", level=1, kind="api")
    assert error.value.cause == cause


def test_results_are_read_as_literals_never_evaluated():
    record = {
        "instruction": 'API descriptions:\n{"name": "F", "description": "d", "input_parameters": {}}',
        "input": "User: hi\nAPI-Request: [F()]->__import__('os').system('true')\n"
                 "API-Request: [F()]->{'a': [1, 2.5, None]}\nGenerate AI Response:\n",
        "output": "done",
    }
    row = parse_flattened(record, row_id="r", level=1, kind="response")
    assert json.loads(row["history"][1]["result"]) == {"output": "__import__('os').system('true')"}
    assert json.loads(row["history"][2]["result"]) == {"output": {"a": [1, 2.5, None]}}


# ---------------------------------------------------------------------------------- export
@pytest.fixture(scope="module")
def exported(data_dir, tmp_path_factory):
    from apibank.hub.dataset_repo import export_repository

    out = tmp_path_factory.mktemp("trainer-export")
    report = export_repository(out, data_dir=data_dir, cache_dir=tmp_path_factory.mktemp("cache"),
                               configs=list(TRAINER_CONFIGS))
    return out, report


def _load(out: Path, config: str, cache: Path):
    import datasets

    return datasets.load_dataset(str(out), config, split="train", cache_dir=str(cache))


def test_export_writes_the_trainer_configs_and_lists_what_was_left_out(exported, training):
    out, report = exported
    assert report.rows == {name: TRAINING_CONVERTED for name in TRAINER_CONFIGS}
    listing = json.loads((out / "training-unconverted.json").read_text("utf-8"))
    assert listing["samples"] == TRAINING_SEEN and listing["not_converted_by_cause"] == TRAINING_CAUSES
    assert [f["id"] for f in listing["not_converted"]] == [f.id for f in training.failures]
    readme = (out / "README.md").read_text("utf-8")
    assert "training-chat" in readme and "training-prompt-completion" in readme
    assert "1226 of 1245 samples converted" in readme


def test_exported_configs_load_as_converted(exported, training, tmp_path):
    out, _ = exported
    chat = _load(out, "training-chat", tmp_path)
    pairs = _load(out, "training-prompt-completion", tmp_path)
    assert chat.to_list() == training.examples["chat"]  # every message keeps exactly its own keys
    assert pairs.to_list() == training.examples["prompt-completion"]
    assert set(pairs.column_names) >= {"prompt", "completion"} and set(chat.column_names) >= {"messages", "tools"}


def _adapter(template: Path) -> TemplateAdapter:
    tokenizer = train_tokenizer(["some text"], 280)
    text = template.read_text("utf-8")

    def render(messages, tools):
        return tokenizer.apply_chat_template(messages, tools=tools, chat_template=text, tokenize=False)

    return TemplateAdapter(render, text)


def _answer_texts(example) -> list[str]:
    answer = example["messages"][-1]
    if not answer.get("tool_calls"):
        return [answer["content"].strip()]
    call = answer["tool_calls"][0]["function"]
    return [call["name"], *(json.dumps(v, ensure_ascii=False).strip('"') for v in call["arguments"].values())]


def test_exported_chat_rows_render_with_tools_through_a_gemma_like_template(exported, tmp_path):
    out, _ = exported
    tokenizer = train_tokenizer(["some text"], 280)
    template = (TEMPLATES / "gemma_tools.jinja").read_text("utf-8")
    for example in _load(out, "training-chat", tmp_path):
        text = tokenizer.apply_chat_template(example["messages"], tools=example["tools"], chat_template=template,
                                             tokenize=False)
        assert text.count("<start_of_turn>") == len(example["messages"]) - 1  # system joins the first turn
        for tool in example["tools"]:
            assert json.dumps(tool["function"]["name"]) in text
        for shown in _answer_texts(example):
            assert shown in text, (example["id"], shown)


def test_exported_chat_rows_render_natively_through_a_chatml_template_with_tools(exported, tmp_path):
    """The tiny test model's template (ChatML with tools and tool_calls) takes every row unadapted."""
    out, _ = exported
    tokenizer = train_tokenizer(["some text"], 280)
    adapter = TemplateAdapter(lambda messages, tools: tokenizer.apply_chat_template(messages, tools=tools, tokenize=False))
    for example in _load(out, "training-chat", tmp_path):
        text = adapter.render(example["messages"], example["tools"], fmt="tools", row_id=example["id"])
        for tool in example["tools"]:
            assert json.dumps(tool, ensure_ascii=False) in text
        for shown in _answer_texts(example):
            assert shown in text or json.dumps(shown)[1:-1] in text, (example["id"], shown)
    assert adapter.adaptations == []


@pytest.mark.parametrize("template", ["strict_alternation", "silent_drops", "no_tool_calls"])
def test_exported_chat_rows_render_through_the_strict_templates(exported, tmp_path, template):
    out, _ = exported
    adapter = _adapter(TEMPLATES / f"{template}.jinja")
    for example in _load(out, "training-chat", tmp_path):
        text = adapter.render(example["messages"], example["tools"], fmt="tools", row_id=example["id"])
        for shown in _answer_texts(example):
            assert shown in text or json.dumps(shown)[1:-1] in text, (example["id"], shown)


def test_hostile_sizes_stay_text_or_refused_quickly():
    import time

    from apibank.train.upstream_text import described_tools

    start = time.process_time()  # CPU time: the machine's load does not count
    deep = "[" * 50_000 + "]" * 50_000
    assert shown_value(deep) == deep
    assert list(described_tools(deep)) == []
    with pytest.raises(ParseError):
        parse_request("API-Request: [F(a='" + "x'" * 100_000 + "x)]")  # never closed
    name, arguments, _ = parse_request("API-Request: [F(a='" + "x, y=" * 50_000 + "')]")
    assert name == "F" and len(arguments["a"]) == 250_000
    assert time.process_time() - start < 5
