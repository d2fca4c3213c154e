"""The benchmark's facts (apibank.benchmark) against the real data, declared once; one reader of the dialogues."""

from __future__ import annotations

import ast
import json
import re
from collections import Counter
from pathlib import Path

import pytest
from apibank_tools.registry import toolset

from apibank import benchmark
from apibank.benchmark import (
    AGENT_TOOL_FORMATS, CITATION, EPISODE_COUNTS, FORMATS, FULL_COUNTS, LEVEL_NUMBERS, LEVEL_SPECS, LEVELS, PROTOCOLS,
    SEARCHER, SETTINGS, TEMPLATE_MODES, TOOLSETS, TRAINING_FORMATS, level_spec,
)
from apibank.data import dialogues
from apibank.data.episodes import load_episodes
from apibank.data.renames import renamed, renamed_parameters
from apibank.data.rows import iter_rows
from apibank.judge.replay import level3_gold_calls, level12_gold_calls

REPO = Path(__file__).resolve().parents[1]
SOURCES = [
    *sorted((REPO / "apibank").rglob("*.py")),
    *sorted(REPO.glob("apibank_*.py")),
    *sorted((REPO / "benchmarks").glob("*.py")),
]
FACTS_FILE = REPO / "apibank" / "benchmark.py"
# Literal collections that only the facts module may spell out.
DECLARED = {
    LEVELS: "LEVELS", PROTOCOLS: "PROTOCOLS", FORMATS: "FORMATS", SETTINGS: "SETTINGS",
    TEMPLATE_MODES: "TEMPLATE_MODES", LEVEL_NUMBERS: "LEVEL_NUMBERS", AGENT_TOOL_FORMATS: "AGENT_TOOL_FORMATS",
    TRAINING_FORMATS: "TRAINING_FORMATS",
}


def _literal(node: ast.AST):
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return None


def _copies(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, (ast.Tuple, ast.List)):
            value = _literal(node)
            if value is not None and all(isinstance(item, (str, int)) for item in value) and tuple(value) in DECLARED:
                found.append(f"{path.relative_to(REPO)}:{node.lineno} repeats {DECLARED[tuple(value)]}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value == SEARCHER or re.fullmatch(r"APIBANK_[A-Z_]+", node.value):
                found.append(f"{path.relative_to(REPO)}:{node.lineno} spells {node.value!r}")
        elif isinstance(node, ast.Dict):
            value = _literal(node)
            if value == FULL_COUNTS or value == TOOLSETS:
                found.append(f"{path.relative_to(REPO)}:{node.lineno} repeats a table of apibank.benchmark")
    return found


def test_the_facts_are_declared_only_in_the_facts_module():
    copies = [copy for path in SOURCES if path != FACTS_FILE for copy in _copies(path)]
    assert not copies, copies


def test_full_counts_and_levels_are_those_of_the_real_data(data_dir):
    counts = {level: Counter(row["kind"] for row in iter_rows(level, data_dir)) for level in LEVELS}
    assert counts == FULL_COUNTS
    assert [int(level.rsplit("-", 1)[1]) for level in LEVELS] == list(LEVEL_NUMBERS)


def test_episode_counts_are_those_of_the_real_data(data_dir):
    assert {level: len(load_episodes(level, data_dir).episodes) for level in LEVELS} == EPISODE_COUNTS


def test_every_level_runs_on_a_registered_tool_set_that_holds_the_searcher(data_dir):
    for level in LEVELS:
        tools = toolset(TOOLSETS[level])
        assert SEARCHER in tools.names(), level
    # each row's reference names the tool set of its level
    for level in LEVELS:
        row = next(iter_rows(level, data_dir))
        assert f'"toolset": "{TOOLSETS[level]}"' in row["reference"]


def test_each_level_spec_describes_its_real_rows(data_dir):
    """What a LevelSpec says of a level is what its rows show (the rooms act on the spec, not the number)."""
    from apibank.generate.conversation import build_conversation
    from apibank.notation import display

    for name, spec in LEVEL_SPECS.items():
        rows = list(iter_rows(name, data_dir))
        assert {row["level"] for row in rows} == {spec.number} and level_spec(spec.number) is spec
        api_rows = [row for row in rows if row["kind"] == "api"]
        offered = {tuple(tool["name"] for tool in row["tools"]) for row in api_rows}
        assert (offered == {(SEARCHER,)}) == spec.searches_tools, name
        # a requirements file: every row from one file, dialogues told apart by sample id
        assert (len({row["file"] for row in rows}) == 1) == spec.from_requirements, name
        called = [(row, turn) for row in api_rows for turn in row["history"] if turn["role"] == "API"]
        for row, turn in called[:50]:
            record = json.loads(turn["result"])
            assert f"->{display(record if spec.full_results else record['output'])}\n" in row["input"], name
        system = build_conversation(api_rows[0], "chat").messages[0]["content"]
        assert (f"The current year is {spec.year}." in system) == (spec.year is not None), name
        assert spec.dialogue_accuracy == spec.from_requirements  # one planned call sequence per requirement


def test_the_faces_and_cards_cite_the_one_citation(tmp_path):
    import apibank_dataset
    import apibank_metric

    assert apibank_dataset.ApiBank(config_name="level-1", cache_dir=str(tmp_path)).info.citation == CITATION
    assert apibank_metric.Apibank._info(None).citation == CITATION
    for card in (REPO / "dataset_card.md", REPO / "apibank" / "judge" / "metric_card.md"):
        assert CITATION in card.read_text("utf-8"), card


def test_the_facts_module_is_light():
    tree = ast.parse(FACTS_FILE.read_text("utf-8"))
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported <= {"__future__", "dataclasses", "typing", "apibank_tools.data"}
    assert set(benchmark.__all__) <= set(vars(benchmark))


# ------------------------------------------------------------------------------ the one reader
@pytest.fixture
def reads(monkeypatch):
    """Every upstream path read through :mod:`apibank.data.dialogues` while the fixture is active."""
    seen: list[str] = []
    read_turns, read_json = dialogues.read_turns, dialogues.read_json

    def counting_turns(source, path):
        seen.append(path)
        return read_turns(source, path)

    def counting_json(source, path):
        seen.append(path)
        return read_json(source, path)

    monkeypatch.setattr(dialogues, "read_turns", counting_turns)
    monkeypatch.setattr(dialogues, "read_json", counting_json)
    return seen


@pytest.mark.parametrize("level", ["level-1", "level-2"])
def test_rows_episodes_and_replay_read_the_dialogues_through_the_one_reader(reads, data_dir, level):
    paths = dialogues.dialogue_paths(level)
    next(iter_rows(level, data_dir))
    assert set(paths) <= set(reads)
    reads.clear()
    load_episodes(level, data_dir)
    assert reads == paths
    reads.clear()
    list(level12_gold_calls(data_dir))
    assert set(paths) <= set(reads)


def test_level3_rows_episodes_and_replay_read_the_one_level3_file(reads, data_dir):
    for consume in (lambda: next(iter_rows("level-3", data_dir)), lambda: load_episodes("level-3", data_dir),
                    lambda: list(level3_gold_calls(data_dir))):
        reads.clear()
        consume()
        assert dialogues.LEVEL_3_DIALOGUES in reads


def test_no_consumer_opens_the_upstream_dialogue_files_itself():
    for module in ("data/rows.py", "data/episodes.py", "judge/replay.py"):
        text = (REPO / "apibank" / module).read_text("utf-8")
        for spelling in ("fetch(", "open(", "read_text(", "json.loads(", "manifest().under("):
            assert spelling not in text, (module, spelling)


def test_renamed_parameters_are_applied_in_one_place(data_dir):
    from apibank.judge import judging

    assert judging.renamed is renamed
    renames = renamed_parameters()
    calls = [call for episode in load_episodes("level-1", data_dir).episodes for call in episode.gold_calls
             if call.name in renames]
    assert calls
    for call in calls:
        assert not set(call.arguments) & set(renames[call.name])
        recorded = call.recorded["input"]
        # the renamed parameter keeps its place among the recorded arguments
        assert list(call.arguments) == [renames[call.name].get(key, key) for key in recorded]
