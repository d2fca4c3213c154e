"""API-Bank evaluation and training rows, derived from the raw upstream dialogues.

This module is the single source of the rows that ``apibank_dataset.py`` turns into Arrow datasets
and that the metric and generation code read (the fields: ``apibank.data.features``). It needs no
``datasets`` import.

How the rows are made:

* levels 1 and 2 come from the dialogues ``lv1-lv2-samples/<folder>/*.jsonl``: every API turn at
  position i gives sample 2k (target: turn i) and sample 2k+1 (target: turn i+1); samples whose
  target is a User turn are dropped. ``input`` and ``expected_output`` are rendered from the
  dialogue and checked byte for byte against upstream ``test-data``; ``instruction`` is copied from
  test-data because its description order came from an unordered set in the original.
* level 3 comes from ``test-data/level-3.json``: one API row per gold call (teacher forced: the
  history holds the earlier gold calls) and one response row per dialogue, checked against the
  ``level-3-batch-inf*.json`` files.

The dialogues are read by ``apibank.data.dialogues`` through a *source* (see there); which files
each config needs is ``apibank.data.configs``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping

from apibank.benchmark import LEVEL_SPECS, SEARCHER, LevelSpec
from apibank.data.configs import (
    LEVEL_3_STEP_FILES, level12_test_file, missing_files_message, missing_local_files, required_files,
    training_files, training_levels,
)
from apibank.data.dialogues import Source, iter_dialogues, level3_dialogues, local_source, read_json
from apibank.data.rendering import (
    LEVEL_12_TRAILER, call_record, dialogue_turn, instruction_tools, json_text, level3_offered_tools,
    offered_tools, render_dialogue, render_requirement_input, turn_record,
)
from apibank.data.upstream import UpstreamDataError, manifest, resolve_data_dir
from apibank.notation import render_request

# The version of the ``reference`` records the rows carry (the judges refuse any other).
REFERENCE_VERSION = 1


class SampleMismatch(UpstreamDataError):
    """A row regenerated from the dialogues disagrees with upstream test-data."""


# ---------------------------------------------------------------------------------------- levels 1, 2
@dataclass(frozen=True)
class DialogueSample:
    sample_id: int
    kind: str
    target_position: int


def dialogue_samples(turns: list[Mapping[str, Any]]) -> list[DialogueSample]:
    """The samples of one dialogue, by ascending id; User targets are dropped."""
    samples = []
    api_positions = [i for i, turn in enumerate(turns) if turn["role"] == "API"]
    for k, position in enumerate(api_positions):
        for sample_id, target in ((2 * k, position), (2 * k + 1, position + 1)):
            if target >= len(turns):
                raise UpstreamDataError(f"an API turn ends the dialogue (sample {sample_id})")
            role = turns[target]["role"]
            if role == "API":
                samples.append(DialogueSample(sample_id, "api", target))
            elif role == "AI":
                samples.append(DialogueSample(sample_id, "response", target))
    return samples


def _dialogue_api_names(turns: Iterable[Mapping[str, Any]]) -> list[str]:
    names: list[str] = []
    for turn in turns:
        if turn["role"] == "API" and turn["api_name"] not in names:
            names.append(turn["api_name"])
    return names


def _iter_dialogue_level(spec: LevelSpec, source: Source) -> Iterator[dict[str, Any]]:
    """The rows of a level of recorded dialogues (levels 1 and 2)."""
    upstream = {
        kind: {(record["file"], record["id"]): record for record in read_json(source, level12_test_file(spec.name, kind))}
        for kind in ("api", "response")
    }
    revision = manifest().commit
    rows: dict[str, list[dict[str, Any]]] = {"api": [], "response": []}
    seen: dict[str, set] = {"api": set(), "response": set()}
    for dialogue in iter_dialogues(spec.name, source):
        file, turns = dialogue.file, dialogue.turns
        used_names = _dialogue_api_names(turns)
        for sample in dialogue_samples(turns):
            key = (file, sample.sample_id)
            record = upstream[sample.kind].get(key)
            if record is None:
                raise SampleMismatch(f"{level12_test_file(spec.name, sample.kind)} lacks the sample {file}#{sample.sample_id}")
            seen[sample.kind].add(key)
            rows[sample.kind].append(_level12_row(spec, file, turns, used_names, sample, record, revision))
    for kind, records in upstream.items():
        extra = sorted(set(records) - seen[kind])
        if extra:
            raise SampleMismatch(f"{level12_test_file(spec.name, kind)} has samples no dialogue yields: {extra[:5]}")
    yield from rows["api"]
    yield from rows["response"]


def _level12_row(
    spec: LevelSpec,
    file: str,
    turns: list[Mapping[str, Any]],
    used_names: list[str],
    sample: DialogueSample,
    record: Mapping[str, Any],
    revision: str,
) -> dict[str, Any]:
    history = turns[: sample.target_position]
    target = turns[sample.target_position]
    row_id = f"{spec.name}/{file[: -len('.jsonl')]}#{sample.sample_id}"
    history_records = [dialogue_turn(turn) for turn in history]

    input_text = render_dialogue(history_records, spec.name) + LEVEL_12_TRAILER[sample.kind]
    if sample.kind == "api":
        expected = render_request(target["api_name"], target["param_dict"])
        gold = call_record(target["api_name"], target["param_dict"], target["result"])
    else:
        expected = target["text"]
        gold = None
    _check_same(record, "input", input_text, row_id)
    _check_same(record, "expected_output", expected, row_id)

    # Which tools are offered: the dialogue's own (API rows of a level whose tools are found by search:
    # ToolSearcher alone); their order follows the upstream instruction, so that `tools` and
    # `instruction` list them alike.
    listed = instruction_tools(record["instruction"])
    if sample.kind == "api" and spec.searches_tools:
        offered = [SEARCHER]
    else:
        offered = used_names
    listed_names = [name for name, _ in listed]
    if sorted(listed_names) != sorted(offered):
        raise SampleMismatch(f"{row_id}: instruction offers {listed_names}, the dialogue uses {offered}")

    reference = {
        "v": REFERENCE_VERSION,
        "id": row_id,
        "level": spec.number,
        "kind": sample.kind,
        "toolset": spec.toolset,
        "file": file,
        "sample_id": sample.sample_id,
        "api_id": -1,
        "turn": sample.target_position,
        "gold": gold,
        "gold_text": None if sample.kind == "api" else target["text"],
        "earlier_calls": [
            call_record(turn["api_name"], turn["param_dict"], turn["result"]) for turn in history if turn["role"] == "API"
        ],
        "revision": revision,
    }
    return {
        "id": row_id,
        "level": spec.number,
        "kind": sample.kind,
        "file": file,
        "sample_id": sample.sample_id,
        "api_id": -1,
        "history": history_records,
        "tools": offered_tools(spec.toolset, listed_names, dict(listed)),
        "target": dialogue_turn(target),
        "instruction": record["instruction"],
        "input": input_text,
        "expected_output": expected,
        "instruction_icl": "",
        "reference": json_text(reference),
    }


def _check_same(record: Mapping[str, Any], field: str, regenerated: str, row_id: str) -> None:
    if record[field] != regenerated:
        raise SampleMismatch(
            f"{row_id}: regenerated {field} differs from upstream test-data:\n"
            f"  upstream:    {record[field]!r}\n  regenerated: {regenerated!r}"
        )


# ---------------------------------------------------------------------------------------- level 3
def _iter_requirements(spec: LevelSpec, source: Source) -> Iterator[dict[str, Any]]:
    """The rows of a level built from a requirements file (level 3)."""
    dialogues = level3_dialogues(source)
    steps = {
        kind: {(r["sample_id"], r["api_id"]): r for r in read_json(source, path)}
        for kind, path in LEVEL_3_STEP_FILES.items()
    }
    revision = manifest().commit
    tool_searcher = level3_offered_tools()
    expected_api_keys = {(s, a) for s, d in enumerate(dialogues) for a in range(len(d["apis"]))}
    expected_response_keys = {(s, len(d["apis"]) - 1) for s, d in enumerate(dialogues)}
    for kind, keys in (("api", expected_api_keys), ("icl", expected_api_keys), ("response", expected_response_keys)):
        if set(steps[kind]) != keys:
            raise SampleMismatch(f"{LEVEL_3_STEP_FILES[kind]} does not hold one record per expected step")

    responses = []
    for sample_id, dialogue in enumerate(dialogues):
        calls = dialogue["apis"]
        requirement = turn_record("User", text=dialogue["requirement"].strip())
        for api_id, call in enumerate(calls):
            yield _level3_row(
                spec, sample_id, api_id, "api", dialogue, requirement, tool_searcher,
                steps["api"][(sample_id, api_id)], steps["icl"][(sample_id, api_id)]["instruction"], revision,
            )
        last = len(calls) - 1
        responses.append(
            _level3_row(spec, sample_id, last, "response", dialogue, requirement, tool_searcher,
                        steps["response"][(sample_id, last)], "", revision)
        )
    yield from responses


def _level3_row(
    spec: LevelSpec,
    sample_id: int,
    api_id: int,
    kind: str,
    dialogue: Mapping[str, Any],
    requirement: dict[str, str],
    tools: list[dict[str, str]],
    record: Mapping[str, Any],
    instruction_icl: str,
    revision: str,
) -> dict[str, Any]:
    calls = dialogue["apis"]
    earlier = calls[:api_id] if kind == "api" else calls
    row_id = f"{spec.name}/{sample_id}#{api_id if kind == 'api' else 'response'}"
    history = [requirement] + [
        turn_record("API", api_name=c["api_name"], arguments=c["input"], result=c["output"]) for c in earlier
    ]
    input_text = render_requirement_input(spec.name, history, kind)
    if kind == "api":
        call = calls[api_id]
        expected = render_request(call["api_name"], call["input"])
        target = turn_record("API", api_name=call["api_name"], arguments=call["input"], result=call["output"])
        gold = call_record(call["api_name"], call["input"], call["output"])
    else:
        expected = dialogue["response"]
        target = turn_record("AI", text=expected)
        gold = None
    _check_same(record, "input", input_text, row_id)
    _check_same({"expected_output": record["output"]}, "expected_output", expected, row_id)

    reference = {
        "v": REFERENCE_VERSION,
        "id": row_id,
        "level": spec.number,
        "kind": kind,
        "toolset": spec.toolset,
        "file": "level-3.json",
        "sample_id": sample_id,
        "api_id": api_id,
        # API rows: the gold call's index; response rows: the position after the last call.
        "turn": api_id if kind == "api" else len(calls),
        "gold": gold,
        "gold_text": None if kind == "api" else expected,
        "earlier_calls": [call_record(c["api_name"], c["input"], c["output"]) for c in earlier],
        "revision": revision,
    }
    return {
        "id": row_id,
        "level": spec.number,
        "kind": kind,
        "file": "level-3.json",
        "sample_id": sample_id,
        "api_id": api_id,
        "history": history,
        "tools": tools,
        "target": target,
        "instruction": record["instruction"],
        "input": input_text,
        "expected_output": expected,
        "instruction_icl": instruction_icl,
        "reference": json_text(reference),
    }


# ---------------------------------------------------------------------------------------- training
def _iter_training(levels: Iterable[int] | None, source: Source) -> Iterator[dict[str, Any]]:
    for level in training_levels(levels):
        for path in training_files(level):
            file = path.rsplit("/", 1)[-1]
            kind = "api" if "-api-" in file else "response"
            for index, record in enumerate(read_json(source, path)):
                yield {
                    "id": f"training/{file[: -len('.json')]}#{index}",
                    "level": level,
                    "kind": kind,
                    "file": file,
                    "index": index,
                    "instruction": record["instruction"],
                    "input": record["input"],
                    "expected_output": record["output"] if "output" in record else record["expected_output"],
                }


# ---------------------------------------------------------------------------------------- entry point
def iter_rows(
    config: str,
    data_dir: str | os.PathLike[str] | None = None,
    *,
    levels: Iterable[int] | None = None,
    source: Source | None = None,
) -> Iterator[dict[str, Any]]:
    """The rows of ``config`` ("level-1", "level-2", "level-3" or "training").

    Files come from ``source`` when given, else from ``data_dir`` / ``$APIBANK_DATA_DIR`` / the
    verified download cache. ``levels`` restricts the training config (default: 1, 2 and 3). A
    local copy that lacks a needed file gives one error naming every missing file and its address.
    """
    paths = required_files(config, levels)
    if source is None:
        missing = missing_local_files(paths, data_dir)
        if missing:
            raise UpstreamDataError(missing_files_message(missing, str(resolve_data_dir(data_dir))))
        source = local_source(data_dir)
    spec = LEVEL_SPECS.get(config)
    if spec is None:
        yield from _iter_training(levels, source)
    elif spec.from_requirements:
        yield from _iter_requirements(spec, source)
    else:
        yield from _iter_dialogue_level(spec, source)
