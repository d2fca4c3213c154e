"""A finished run folder read back as per-sample outcomes, for comparing runs.

A classic run (``apibank evaluate`` / ``apibank score``) has ``results.json`` and ``details.jsonl``;
an agentic run (``apibank agent``) has ``results.json`` and ``trajectories.jsonl``. Either becomes a
:class:`Run`: for every (protocol, level, metric) the outcome of each sample, keyed by the sample's
id, with the dialogue it belongs to, the verdict category and the tool involved.

Metrics: ``api`` (API-call verdict, 0 or 1), ``dialogue`` (level 3: every call of the dialogue
correct), ``response`` (ROUGE-L); agentic runs: ``success`` (episode verdict) and ``response``
(answer ROUGE-L), with the setting in place of the protocol and ``episode#trial`` as the sample.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from apibank.benchmark import LEVEL_SPECS
from apibank.files import episode_key, read_json_lines
from apibank.judge.intervals import dialogue_of

BINARY_METRICS = ("api", "dialogue", "success")
# Classic settings a run may not know (None: not recorded), unlike e.g. an agentic run's episode limit,
# where None means "no limit".
RECORDED_IF_KNOWN = ("data revision", "prompt format", "in-context example")


class NotARun(ValueError):
    """The folder is not a finished run (no results.json, or neither details nor trajectories)."""


@dataclass(frozen=True)
class Sample:
    value: float
    cluster: str
    category: str | None = None
    tool: str | None = None
    row: str | None = None  # a failed dialogue's first wrong API-call row


@dataclass
class Run:
    path: Path
    kind: str  # "classic" or "agentic"
    results: dict[str, Any]
    samples: dict[tuple[str, str, str], dict[str, Sample]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        model = (self.results.get("model") or {}).get("id")
        return f"{self.path.name} ({model})" if model else self.path.name

    def identity(self) -> dict[str, Any]:
        """What must agree for two runs to be compared sample by sample."""
        results = self.results
        if self.kind == "agentic":
            return {"run kind": "agentic", "setting": results.get("setting"), "trials": results.get("trials"),
                    "episode limit": results.get("limit"), "step and time limits": results.get("limits")}
        return {
            "run kind": "classic",
            "data revision": (results.get("dataset") or {}).get("upstream_revision"),
            "protocols": sorted(results.get("protocols") or {}),
            "prompt format": results.get("format"),
            "in-context example": results.get("icl"),
            "subset": bool(results.get("subset")),
            # the row audit's subset a run was restricted to, and which audit chose its rows
            "row audit subset": (f"{results['audit_subset']} (row audit {(results.get('audit') or {}).get('version')})"
                                 if results.get("audit_subset") else None),
        }

    def unrecorded(self) -> set[str]:
        """The settings of :meth:`identity` this run did not record (``apibank score`` of a bare predictions
        file knows no prompt format or in-context example): unknown, so never a difference."""
        if self.kind != "classic":
            return set()
        return {key for key in RECORDED_IF_KNOWN if self.identity()[key] is None}


# ------------------------------------------------------------------------ the schema of run files
# What compare and leaderboard read from a run's files, with the JSON types each field may have. Every field
# is optional (older runs lack some); one that is present with another type is refused in one line naming the
# file and the field, before any figure is computed.
NUMBER = (int, float)


@dataclass(frozen=True)
class Maybe:
    """``schema``, or null."""
    schema: Any


@dataclass(frozen=True)
class Each:
    """An object whose every value follows ``schema`` (levels, protocols, figures)."""
    schema: Any


@dataclass(frozen=True)
class Items:
    """A list whose every item follows ``schema``."""
    schema: Any


INTERVAL = Maybe(Items(NUMBER))
SCORE_BLOCK = Maybe({"correct": Maybe(int), "total": Maybe(int), "count": Maybe(int), "accuracy": Maybe(NUMBER),
                     "rouge_l": Maybe(NUMBER), "ci95": INTERVAL, "n": Maybe(int), "ci95_reason": Maybe(str)})
RESULTS_SCHEMA = {
    "model": Maybe({"id": Maybe(str)}),
    "dataset": Maybe({"upstream_revision": Maybe(str)}),
    "protocols": Maybe((dict, list)),
    "format": Maybe(str),
    "icl": Maybe(bool),
    "setting": Maybe(str),
    "trials": Maybe(int),
    "limit": Maybe(int),
    "limits": Maybe(dict),
    "files": Maybe(Each(str)),
    "scores": Maybe(Each(Maybe(Each(Maybe({"api": SCORE_BLOCK, "dialogues": SCORE_BLOCK, "response": SCORE_BLOCK}))))),
    "usage": Maybe({"samples": Maybe(int), "wall_seconds": Maybe(NUMBER), "this_run": Maybe({"samples": Maybe(int)})}),
}
# an agentic run's levels (a classic run lists its levels)
AGENTIC_LEVEL = {"runs": Maybe(int), "succeeded": Maybe(int), "success_rate": Maybe(NUMBER), "pass_k": Maybe(NUMBER),
                 "response_rouge_l": Maybe(NUMBER), "ci95": Maybe(Each(INTERVAL)), "ci95_reason": Maybe(str)}
AGENTIC_RESULTS_SCHEMA = {
    "levels": Maybe(Each(AGENTIC_LEVEL)),
    # the summaries of the verified episodes (apibank.report.verified)
    "verified": Maybe({"levels": Maybe(Each(AGENTIC_LEVEL)), "audit": Maybe({"version": Maybe(str)})}),
}
DETAIL_SCHEMA = {"id": str, "protocol": str, "level": (int, str), "kind": str, "verdict": Maybe((bool, int)),
                 "score": Maybe(NUMBER), "category": Maybe(str), "name": Maybe(str), "seconds": Maybe(NUMBER)}
TRAJECTORY_SCHEMA = {"episode": str, "level": str, "setting": Maybe(str), "trial": int,
                     "verdict": {"success": Maybe(bool), "rouge_l": Maybe(NUMBER), "state_ok": Maybe(bool),
                                 "information_ok": Maybe(bool), "missing": Maybe(Items(dict)),
                                 "state_diff": Maybe(dict)},
                     "stopped": Maybe(str), "seconds": Maybe(NUMBER)}
_KINDS = {str: "a string", int: "an integer", float: "a number", bool: "true or false", dict: "an object",
          list: "a list", type(None): "null"}


def _kind(value: Any) -> str:
    return _KINDS.get(type(value), type(value).__name__)


def schema_problem(value: Any, schema: Any, where: str = "") -> str | None:
    """What in ``value`` does not follow ``schema`` (the field, its type and the type expected), None if all does."""
    field_name = f"`{where}`" if where else "the content"
    if isinstance(schema, Maybe):
        return None if value is None else schema_problem(value, schema.schema, where)
    if isinstance(schema, dict):
        if not isinstance(value, dict):
            return f"{field_name} is {_kind(value)}, expected an object"
        for key, inner in schema.items():
            if key in value:
                problem = schema_problem(value[key], inner, f"{where}.{key}" if where else key)
                if problem:
                    return problem
        return None
    if isinstance(schema, (Each, Items)):
        container = dict if isinstance(schema, Each) else list
        if not isinstance(value, container):
            return f"{field_name} is {_kind(value)}, expected {_KINDS[container]}"
        pairs = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in pairs:
            inner_where = f"{where}.{key}" if isinstance(value, dict) else f"{where}[{key}]"
            problem = schema_problem(item, schema.schema, inner_where)
            if problem:
                return problem
        return None
    kinds = schema if isinstance(schema, tuple) else (schema,)
    # JSON true is not a number
    if isinstance(value, kinds) and (bool in kinds or not isinstance(value, bool)):
        return None
    names = ["a number" if kind in NUMBER and int in kinds and float in kinds else _KINDS.get(kind, kind.__name__)
             for kind in kinds]
    return f"{field_name} is {_kind(value)}, expected {' or '.join(dict.fromkeys(names))}"


def _read_json_lines(path: Path, schema: dict[str, Any], **reading: Any) -> list[dict[str, Any]]:
    try:
        return read_json_lines(path, check=lambda record: schema_problem(record, schema), **reading)
    except ValueError as error:
        raise NotARun(f"{error}; give a run folder as apibank evaluate, score or agent wrote it") from None


def load_run(path: str | Path) -> Run:
    """Read a run folder; raises :class:`NotARun` with what is missing."""
    path = Path(path)
    if not path.is_dir():
        raise NotARun(f"{path}: no such folder; give a folder written by apibank evaluate, score or agent")
    try:
        results = json.loads((path / "results.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NotARun(f"{path}: no results.json; give a folder written by apibank evaluate, score or agent") from None
    except UnicodeDecodeError as error:
        raise NotARun(f"{path}/results.json: not UTF-8 text (byte offset {error.start}); give a run folder as "
                      "apibank evaluate, score or agent wrote it") from None
    except ValueError as error:
        raise NotARun(f"{path}/results.json: not JSON ({error})") from None
    if not isinstance(results, dict):
        raise NotARun(f"{path}/results.json: not a JSON object")
    agentic = not (path / "details.jsonl").is_file() and (path / "trajectories.jsonl").is_file()
    problem = schema_problem(results, RESULTS_SCHEMA) or (schema_problem(results, AGENTIC_RESULTS_SCHEMA) if agentic
                                                          else None)
    if problem:
        raise NotARun(f"{path}/results.json: {problem}; give a run folder as apibank evaluate, score or agent wrote it")
    if (path / "details.jsonl").is_file():
        run = Run(path, "classic", results)
        classic_samples(run, _read_json_lines(path / "details.jsonl", DETAIL_SCHEMA))
    elif (path / "trajectories.jsonl").is_file():
        run = Run(path, "agentic", results)
        _agentic_samples(run, _read_json_lines(path / "trajectories.jsonl", TRAJECTORY_SCHEMA,
                                               key=episode_key, duplicate_way_out="keep one line per episode and trial"))
    else:
        raise NotARun(f"{path}: neither details.jsonl (apibank evaluate/score) nor trajectories.jsonl "
                      "(apibank agent); the run did not finish")
    return run


def classic_samples(run: Run, details: list[Mapping[str, Any]]) -> None:
    dialogues: dict[tuple[str, str], dict[str, Sample]] = {}
    for entry in details:
        try:
            protocol, level, kind, sample_id = entry["protocol"], f"level-{entry['level']}", entry["kind"], entry["id"]
        except KeyError as error:
            raise NotARun(f"{run.path}/details.jsonl: an entry lacks {error}") from None
        cluster = dialogue_of(sample_id)
        if kind == "api":
            sample = Sample(float(bool(entry.get("verdict"))), cluster, entry.get("category"), entry.get("name"))
            run.samples.setdefault((protocol, level, "api"), {})[sample_id] = sample
            if level in LEVEL_SPECS and LEVEL_SPECS[level].dialogue_accuracy:
                per_dialogue = dialogues.setdefault((protocol, level), {})
                before = per_dialogue.get(cluster)
                if before is None or (before.value and not sample.value):
                    failed = not sample.value  # the dialogue's category and tool are its first wrong call's
                    per_dialogue[cluster] = Sample(sample.value, cluster, sample.category if failed else None,
                                                   sample.tool if failed else None, sample_id if failed else None)
        elif kind == "response" and entry.get("score") is not None:
            run.samples.setdefault((protocol, level, "response"), {})[sample_id] = Sample(float(entry["score"]), cluster)
    for (protocol, level), per_dialogue in dialogues.items():
        run.samples[(protocol, level, "dialogue")] = per_dialogue


def _episode_failure(verdict: Mapping[str, Any], stopped: str | None) -> tuple[str | None, str | None]:
    if verdict.get("success"):
        return None, None
    parts = [name for name, ok in (("state", verdict.get("state_ok")), ("information", verdict.get("information_ok")))
             if not ok]
    category = "+".join(parts) or "failed"
    if stopped:
        category += f" ({stopped.split(':')[0]})"
    missing = [str(item.get("name")) for item in verdict.get("missing") or [] if isinstance(item, dict)]
    tools = sorted(set(missing)) or sorted(map(str, (verdict.get("state_diff") or {})))
    return category, ",".join(tools) or None


def _agentic_samples(run: Run, records: list[Mapping[str, Any]]) -> None:
    levels = set(run.results.get("levels") or {})
    trials = run.results.get("trials") or 1
    setting = str(run.results.get("setting"))
    for record in records:
        try:
            level, episode, trial, verdict = record["level"], record["episode"], record["trial"], record["verdict"]
        except KeyError as error:
            raise NotARun(f"{run.path}/trajectories.jsonl: a record lacks {error}") from None
        if (levels and level not in levels) or trial >= trials or record.get("setting", setting) != setting:
            continue
        key = f"{episode}#{trial}"
        category, tool = _episode_failure(verdict, record.get("stopped"))
        run.samples.setdefault((setting, level, "success"), {})[key] = Sample(
            float(bool(verdict.get("success"))), str(episode), category, tool)
        if verdict.get("rouge_l") is not None:
            run.samples.setdefault((setting, level, "response"), {})[key] = Sample(float(verdict["rouge_l"]), str(episode))
