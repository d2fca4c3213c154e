"""API-Bank evaluation and training rows, derived from the raw upstream dialogues.

This module is the single source of the rows that ``apibank_dataset.py`` turns into Arrow datasets
and that the metric and generation code read (schema: ``CONTRACTS.md`` §1 and §2). It needs no
``datasets`` import.

How the rows are made (spec ``protocol.md`` §1 and §2):

* levels 1 and 2 come from the dialogues ``lv1-lv2-samples/<folder>/*.jsonl``: every API turn at
  position i gives sample 2k (target: turn i) and sample 2k+1 (target: turn i+1); samples whose
  target is a User turn are dropped. ``input`` and ``expected_output`` are rendered from the
  dialogue and checked byte for byte against upstream ``test-data``; ``instruction`` is copied from
  test-data because its description order came from an unordered set in the original.
* level 3 comes from ``test-data/level-3.json``: one API row per gold call (teacher forced: the
  history holds the earlier gold calls) and one response row per dialogue, checked against the
  ``level-3-batch-inf*.json`` files.

Files are read through a *source*: a callable mapping an upstream path (relative to ``api-bank/``)
to a local file. :func:`local_source` resolves through :func:`apibank.data.upstream.fetch`;
the dataset builder passes the files its download manager fetched.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from apibank_tools.base import CallRejected

from apibank.data.upstream import UpstreamDataError, fetch, manifest, resolve_data_dir

Source = Callable[[str], Path]

TEST_CONFIGS = ("level-1", "level-2", "level-3")
TRAINING_CONFIG = "training"
TRAINING_LEVELS = (1, 2, 3)
REFERENCE_VERSION = 1

API_PROMPT_END = "API descriptions:\n"
LEVEL_12_TRAILER = {"api": "Generate API Request:\n", "response": "Generate AI Response:\n"}
LEVEL_3_TRAILER = {"api": "Generate API Request: \n", "response": "Generate AI Response: \n"}
# The ToolSearcher description that heads every level-3 input (protocol §2.2), in upstream's
# apiCode/parameters/response key style.
LEVEL_3_HEADER = (
    '{"apiCode": "ToolSearcher", "description": "Searches for relevant tools in library based on '
    'the keywords.", "parameters": {"keywords": {"type": "str", "description": "The keyword to '
    'search for."}}, "response": {"best_matchs": {"type": "Union[List[dict], dict]", '
    '"description": "The best match tool(s)."}}}'
)
# The same tool as a prompt description line (protocol §1.5); used while the registry lacks it.
TOOL_SEARCHER_LINE = (
    '{"name": "ToolSearcher", "description": "Searches for relevant tools in library based on the '
    'keywords.", "input_parameters": {"keywords": {"type": "str", "description": "The keyword to '
    'search for."}}, "output_parameters": {"best_matchs": {"type": "Union[List[dict], dict]", '
    '"description": "The best match tool(s)."}}}'
)


class SampleMismatch(UpstreamDataError):
    """A row regenerated from the dialogues disagrees with upstream test-data."""


@dataclass(frozen=True)
class DialogueLevel:
    """Where one of levels 1 and 2 lives upstream, and how its tools are offered."""

    level: int
    folder: str
    toolset: str
    # Level 2 offers only ToolSearcher for API-call samples (protocol §1.5).
    api_rows_offer_only_tool_searcher: bool

    @property
    def config(self) -> str:
        return f"level-{self.level}"

    def test_file(self, kind: str) -> str:
        return f"test-data/level-{self.level}-{kind}.json"


DIALOGUE_LEVELS = {
    "level-1": DialogueLevel(1, "lv1-lv2-samples/level-1-given-desc", "level-1-2", False),
    "level-2": DialogueLevel(2, "lv1-lv2-samples/level-2-toolsearcher", "level-1-2", True),
}
LEVEL_3_DIALOGUES = "test-data/level-3.json"
LEVEL_3_STEP_FILES = {
    "api": "test-data/level-3-batch-inf.json",
    "icl": "test-data/level-3-batch-inf-icl.json",
    "response": "test-data/level-3-batch-inf-response.json",
}


def training_files(level: int) -> list[str]:
    """The training files of one level: API then response.

    ``lv<n>-train.json`` is not read: it is the API file followed by the response file (verified for
    level 3: 907 + 338 records), so reading it too would duplicate every record.
    """
    return [f"training-data/lv{level}-api-train.json", f"training-data/lv{level}-response-train.json"]


# ---------------------------------------------------------------------------------------- sources
def local_source(data_dir: str | os.PathLike[str] | None = None) -> Source:
    """Resolve upstream paths with :func:`apibank.data.upstream.fetch` (local copy or cache)."""
    return lambda path: fetch(path, data_dir)


def mapping_source(files: Mapping[str, str | os.PathLike[str]]) -> Source:
    """Resolve upstream paths from an explicit {upstream path: local file} mapping."""

    def resolve(path: str) -> Path:
        try:
            return Path(files[path])
        except KeyError:
            raise UpstreamDataError(f"file {path} was not provided") from None

    return resolve


def _load_json(source: Source, path: str) -> Any:
    return json.loads(source(path).read_text("utf-8"))


def _load_dialogue(source: Source, path: str) -> list[dict[str, Any]]:
    text = source(path).read_text("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


# ---------------------------------------------------------------------------------------- files
def required_files(config: str, levels: Iterable[int] | None = None) -> list[str]:
    """Every upstream path that building ``config`` reads."""
    if levels is not None and config != TRAINING_CONFIG:
        raise ValueError(f"levels apply to the {TRAINING_CONFIG!r} config only, not {config!r}")
    if config in DIALOGUE_LEVELS:
        spec = DIALOGUE_LEVELS[config]
        return manifest().under(spec.folder, ".jsonl") + [spec.test_file("api"), spec.test_file("response")]
    if config == "level-3":
        return [LEVEL_3_DIALOGUES, *LEVEL_3_STEP_FILES.values()]
    if config == TRAINING_CONFIG:
        return [path for level in _training_levels(levels) for path in training_files(level)]
    raise ValueError(f"unknown config {config!r}; expected one of {[*TEST_CONFIGS, TRAINING_CONFIG]}")


def missing_local_files(paths: Iterable[str], data_dir: str | os.PathLike[str] | None) -> list[str]:
    """The paths a local copy lacks (empty when there is no local copy to consult)."""
    local = resolve_data_dir(data_dir)
    if local is None:
        return []
    return [path for path in paths if not (local / path).is_file()]


def missing_files_message(missing: Iterable[str], where: str) -> str:
    """What is missing and what to do on the first line (all a console shows), then every file."""
    lines = [f"  {path} (source: {manifest().url(path)})" for path in missing]
    return (
        f"the API-Bank data at {where} lacks {len(lines)} files; download them into that folder, or ask only "
        "for the levels present (e.g. levels=(3,) for the training config):\n" + "\n".join(lines)
    )


def present_training_levels(data_dir: str | os.PathLike[str] | None) -> tuple[int, ...]:
    """The training levels whose files a local copy holds (all levels when reading from the cache)."""
    return tuple(
        level for level in TRAINING_LEVELS if not missing_local_files(training_files(level), data_dir)
    )


def _training_levels(levels: Iterable[int] | None) -> tuple[int, ...]:
    chosen = tuple(sorted(set(levels))) if levels is not None else TRAINING_LEVELS
    unknown = [level for level in chosen if level not in TRAINING_LEVELS]
    if unknown or not chosen:
        raise ValueError(f"training levels must be a non-empty subset of {TRAINING_LEVELS}, got {levels!r}")
    return chosen


# ---------------------------------------------------------------------------------------- rendering
def render_parameters(arguments: Mapping[str, Any]) -> str:
    """``key='value'`` pairs in stored order; values str-rendered and never escaped (upstream)."""
    return ", ".join(f"{key}='{value}'" for key, value in arguments.items())


def render_request(api_name: str, arguments: Mapping[str, Any]) -> str:
    return f"API-Request: [{api_name}({render_parameters(arguments)})]"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _turn(role: str, text: str = "", api_name: str = "", arguments: Any = None, result: Any = None) -> dict[str, str]:
    return {
        "role": role,
        "text": text,
        "api_name": api_name,
        "arguments": "" if arguments is None else _json(arguments),
        "result": "" if result is None else _json(result),
    }


def _dialogue_turn(turn: Mapping[str, Any]) -> dict[str, str]:
    if turn["role"] == "API":
        return _turn("API", api_name=turn["api_name"], arguments=turn["param_dict"], result=turn["result"])
    return _turn(turn["role"], text=turn["text"])


def _call(api_name: str, arguments: Any, result: Any) -> dict[str, Any]:
    return {"api_name": api_name, "arguments": arguments, "result": result}


def _render_level12_history(turns: Iterable[Mapping[str, Any]]) -> str:
    lines = []
    for turn in turns:
        if turn["role"] == "API":
            lines.append(f"{render_request(turn['api_name'], turn['param_dict'])}->{turn['result']['output']}\n")
        else:
            lines.append(f"{turn['role']}: {turn['text']}\n")
    return "".join(lines)


# ---------------------------------------------------------------------------------------- tools
def describe(toolset: str, name: str, fallback: str | None = None) -> str:
    """The registry's description line for ``name``, or ``fallback`` while the tool is not registered."""
    from apibank_tools.registry import toolset as get_toolset

    tools = get_toolset(toolset)
    try:
        return tools.describe(name)
    except CallRejected:
        if fallback is None:
            raise
        return fallback


def instruction_tools(instruction: str) -> list[tuple[str, str]]:
    """(name, description line) for each description line of an upstream instruction, in order."""
    start = instruction.find(API_PROMPT_END)
    if start < 0:
        return []
    listed = instruction[start + len(API_PROMPT_END):]
    return [(json.loads(line)["name"], line) for line in listed.split("\n") if line]


def _offered_tools(toolset: str, names: Iterable[str], lines: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"name": name, "description": describe(toolset, name, lines.get(name))} for name in names]


# ---------------------------------------------------------------------------------------- levels 1, 2
@dataclass(frozen=True)
class DialogueSample:
    sample_id: int
    kind: str
    target_position: int


def dialogue_samples(turns: list[Mapping[str, Any]]) -> list[DialogueSample]:
    """The samples of one dialogue (protocol §1.2), by ascending id; User targets are dropped."""
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


def _iter_dialogue_level(spec: DialogueLevel, source: Source) -> Iterator[dict[str, Any]]:
    upstream = {
        kind: {(record["file"], record["id"]): record for record in _load_json(source, spec.test_file(kind))}
        for kind in ("api", "response")
    }
    revision = manifest().commit
    rows: dict[str, list[dict[str, Any]]] = {"api": [], "response": []}
    seen: dict[str, set] = {"api": set(), "response": set()}
    for path in manifest().under(spec.folder, ".jsonl"):
        file = path.rsplit("/", 1)[-1]
        turns = _load_dialogue(source, path)
        used_names = _dialogue_api_names(turns)
        for sample in dialogue_samples(turns):
            key = (file, sample.sample_id)
            record = upstream[sample.kind].get(key)
            if record is None:
                raise SampleMismatch(f"{spec.test_file(sample.kind)} lacks the sample {file}#{sample.sample_id}")
            seen[sample.kind].add(key)
            rows[sample.kind].append(_level12_row(spec, file, turns, used_names, sample, record, revision))
    for kind, records in upstream.items():
        extra = sorted(set(records) - seen[kind])
        if extra:
            raise SampleMismatch(f"{spec.test_file(kind)} has samples no dialogue yields: {extra[:5]}")
    yield from rows["api"]
    yield from rows["response"]


def _level12_row(
    spec: DialogueLevel,
    file: str,
    turns: list[Mapping[str, Any]],
    used_names: list[str],
    sample: DialogueSample,
    record: Mapping[str, Any],
    revision: str,
) -> dict[str, Any]:
    history = turns[: sample.target_position]
    target = turns[sample.target_position]
    row_id = f"{spec.config}/{file[: -len('.jsonl')]}#{sample.sample_id}"

    input_text = _render_level12_history(history) + LEVEL_12_TRAILER[sample.kind]
    if sample.kind == "api":
        expected = render_request(target["api_name"], target["param_dict"])
        gold = _call(target["api_name"], target["param_dict"], target["result"])
    else:
        expected = target["text"]
        gold = None
    _check_same(record, "input", input_text, row_id)
    _check_same(record, "expected_output", expected, row_id)

    # Which tools are offered follows protocol §1.5; their order follows the upstream instruction,
    # so that `tools` and `instruction` list them alike.
    listed = instruction_tools(record["instruction"])
    if sample.kind == "api" and spec.api_rows_offer_only_tool_searcher:
        offered = ["ToolSearcher"]
    else:
        offered = used_names
    listed_names = [name for name, _ in listed]
    if sorted(listed_names) != sorted(offered):
        raise SampleMismatch(f"{row_id}: instruction offers {listed_names}, the dialogue uses {offered}")

    reference = {
        "v": REFERENCE_VERSION,
        "id": row_id,
        "level": spec.level,
        "kind": sample.kind,
        "toolset": spec.toolset,
        "file": file,
        "sample_id": sample.sample_id,
        "api_id": -1,
        "turn": sample.target_position,
        "gold": gold,
        "gold_text": None if sample.kind == "api" else target["text"],
        "earlier_calls": [
            _call(turn["api_name"], turn["param_dict"], turn["result"]) for turn in history if turn["role"] == "API"
        ],
        "revision": revision,
    }
    return {
        "id": row_id,
        "level": spec.level,
        "kind": sample.kind,
        "file": file,
        "sample_id": sample.sample_id,
        "api_id": -1,
        "history": [_dialogue_turn(turn) for turn in history],
        "tools": _offered_tools(spec.toolset, listed_names, dict(listed)),
        "target": _dialogue_turn(target),
        "instruction": record["instruction"],
        "input": input_text,
        "expected_output": expected,
        "instruction_icl": "",
        "reference": _json(reference),
    }


def _check_same(record: Mapping[str, Any], field: str, regenerated: str, row_id: str) -> None:
    if record[field] != regenerated:
        raise SampleMismatch(
            f"{row_id}: regenerated {field} differs from upstream test-data:\n"
            f"  upstream:    {record[field]!r}\n  regenerated: {regenerated!r}"
        )


# ---------------------------------------------------------------------------------------- level 3
def _render_level3_input(requirement: str, calls: Iterable[Mapping[str, Any]], kind: str) -> str:
    lines = [LEVEL_3_HEADER + "\n", f"User: {requirement.strip()}\n"]
    for call in calls:
        lines.append(f"{render_request(call['api_name'], call['input'])}->{call['output']}\n")
    lines.append(LEVEL_3_TRAILER[kind])
    return "".join(lines)


def _iter_level3(source: Source) -> Iterator[dict[str, Any]]:
    dialogues = _load_json(source, LEVEL_3_DIALOGUES)
    steps = {
        kind: {(r["sample_id"], r["api_id"]): r for r in _load_json(source, path)}
        for kind, path in LEVEL_3_STEP_FILES.items()
    }
    revision = manifest().commit
    # The level-3 prompts show ToolSearcher in the level-1/2 (``apis/``) wording; the level-3 tool's
    # own description differs ("keyword" for "keywords"), so the offered line comes from level 1/2.
    tool_searcher = [{"name": "ToolSearcher", "description": describe("level-1-2", "ToolSearcher", TOOL_SEARCHER_LINE)}]
    expected_api_keys = {(s, a) for s, d in enumerate(dialogues) for a in range(len(d["apis"]))}
    expected_response_keys = {(s, len(d["apis"]) - 1) for s, d in enumerate(dialogues)}
    for kind, keys in (("api", expected_api_keys), ("icl", expected_api_keys), ("response", expected_response_keys)):
        if set(steps[kind]) != keys:
            raise SampleMismatch(f"{LEVEL_3_STEP_FILES[kind]} does not hold one record per expected step")

    responses = []
    for sample_id, dialogue in enumerate(dialogues):
        calls = dialogue["apis"]
        requirement = _turn("User", text=dialogue["requirement"].strip())
        for api_id, call in enumerate(calls):
            yield _level3_row(
                sample_id, api_id, "api", dialogue, requirement, tool_searcher,
                steps["api"][(sample_id, api_id)], steps["icl"][(sample_id, api_id)]["instruction"], revision,
            )
        last = len(calls) - 1
        responses.append(
            _level3_row(sample_id, last, "response", dialogue, requirement, tool_searcher,
                        steps["response"][(sample_id, last)], "", revision)
        )
    yield from responses


def _level3_row(
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
    row_id = f"level-3/{sample_id}#{api_id if kind == 'api' else 'response'}"
    input_text = _render_level3_input(dialogue["requirement"], earlier, kind)
    if kind == "api":
        call = calls[api_id]
        expected = render_request(call["api_name"], call["input"])
        target = _turn("API", api_name=call["api_name"], arguments=call["input"], result=call["output"])
        gold = _call(call["api_name"], call["input"], call["output"])
    else:
        expected = dialogue["response"]
        target = _turn("AI", text=expected)
        gold = None
    _check_same(record, "input", input_text, row_id)
    _check_same({"expected_output": record["output"]}, "expected_output", expected, row_id)

    reference = {
        "v": REFERENCE_VERSION,
        "id": row_id,
        "level": 3,
        "kind": kind,
        "toolset": "level-3",
        "file": "level-3.json",
        "sample_id": sample_id,
        "api_id": api_id,
        # API rows: the gold call's index; response rows: the position after the last call.
        "turn": api_id if kind == "api" else len(calls),
        "gold": gold,
        "gold_text": None if kind == "api" else expected,
        "earlier_calls": [_call(c["api_name"], c["input"], c["output"]) for c in earlier],
        "revision": revision,
    }
    history = [requirement] + [
        _turn("API", api_name=c["api_name"], arguments=c["input"], result=c["output"]) for c in earlier
    ]
    return {
        "id": row_id,
        "level": 3,
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
        "reference": _json(reference),
    }


# ---------------------------------------------------------------------------------------- training
def _iter_training(levels: Iterable[int] | None, source: Source) -> Iterator[dict[str, Any]]:
    for level in _training_levels(levels):
        for path in training_files(level):
            file = path.rsplit("/", 1)[-1]
            kind = "api" if "-api-" in file else "response"
            for index, record in enumerate(_load_json(source, path)):
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
    if config in DIALOGUE_LEVELS:
        yield from _iter_dialogue_level(DIALOGUE_LEVELS[config], source)
    elif config == "level-3":
        yield from _iter_level3(source)
    else:
        yield from _iter_training(levels, source)
