"""Judging an episode by what the model achieved in its environment, not by its text.

The reference is the gold trajectory replayed in a fresh session seeded like the model's:

- **state**: every table of the final state (each written database, the in-memory records tools
  declare as ``state_records``, and the calls of tools declaring an ``external_effect``) must equal
  the gold replay's, table by table;
- **information**: for every gold call that reads (it changed no table) and succeeded, some call of
  the model must have obtained the same result (same tool, equal ``output``), in any order.

An episode succeeds when both hold. ROUGE-L of the answers against the recorded AI replies is
reported beside it, never inside it. No tool is named here: the judge reads what the tools declare.

What cannot be reproduced, and how it is handled (each case counted per episode, never silently):

- random values (tools declaring ``generates_random_values``: appointment ids, user tokens): the
  gold replay substitutes the value its own session generated for the recorded one in every later
  gold call; both sessions use the same seed, and before comparison each random value a session
  generated is replaced by a placeholder naming the tool and its rank (``<Tool#0>``), so the
  comparison does not depend on which value the generator drew;
- parameters renamed since the annotation (a tool's ``renamed_parameters``): gold calls are
  replayed with today's names;
- gold calls the environment refuses even so, and gold reads whose replayed result is an exception
  (a failed read yields nothing to obtain; scene names capitalised since are one case): not
  required, listed under ``excluded``;
- ToolSearcher calls are discovery, not information: never required (the retrieval model drifted
  since annotation); the calls that use what was found are judged instead;
- gold reads whose replayed result differs from the recorded one (data drift) are required with the
  replayed result (what the environment gives today) and counted as ``drifted``.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any, Iterable

from apibank_tools.base import CallRejected, CallTimeout
from apibank_tools.environment import PristineData, Session
from apibank_tools.registry import ToolSet

from apibank.agent.environment import SESSION_SEED, CallRecord
from apibank.benchmark import SEARCHER
from apibank.data.episodes import Episode, GoldCall
from apibank.judge.rouge import EmptyText, rouge_l


# ------------------------------------------------------------------------------------ random values
def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def random_substitutions(recorded: Any, executed: Any) -> dict[str, str]:
    """Recorded -> executed string pairs where the two outputs differ at the same place."""
    pairs: dict[str, str] = {}
    if isinstance(recorded, str) and isinstance(executed, str):
        if recorded != executed:
            pairs[recorded] = executed
    elif isinstance(recorded, dict) and isinstance(executed, dict):
        for key in recorded.keys() & executed.keys():
            pairs.update(random_substitutions(recorded[key], executed[key]))
    return pairs


def substitute(value: Any, mapping: dict[str, str]) -> Any:
    """``value`` with every string (or dict key) equal to a mapped one replaced."""
    if not mapping:
        return value
    if isinstance(value, str):
        return mapping.get(value, value)
    if isinstance(value, dict):
        return {mapping.get(k, k) if isinstance(k, str) else k: substitute(v, mapping) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, mapping) for v in value]
    return value


def placeholders(trace: Iterable[tuple[str, dict[str, Any] | None]], session: Session) -> dict[str, str]:
    """Each random value a session's calls generated -> ``<Tool#rank>``."""
    mapping: dict[str, str] = {}
    ranks: dict[str, int] = {}
    for name, result in trace:
        if result is None or result.get("exception") is not None or name not in session.toolset:
            continue
        if not session.toolset.get(name).generates_random_values:
            continue
        for text in _strings(result.get("output")):
            if text not in mapping and text not in ("success", "failed"):
                mapping[text] = f"<{name}#{ranks.setdefault(name, 0)}>"
                ranks[name] += 1
    return mapping


# ------------------------------------------------------------------------------------------- state
def _acts_outside(tools: ToolSet, name: str) -> bool:
    """Whether a successful call of ``name`` is an effect outside the environment (no table records it)."""
    return name in tools and tools.get(name).external_effect


def effect_tables(tools: ToolSet, calls: Iterable[tuple[str, dict[str, Any] | None]],
                  mapping: dict[str, str]) -> dict[str, list[str]]:
    """The effects outside the environment: one more table per tool, its successful calls' inputs, order-free."""
    tables: dict[str, list[str]] = {}
    for name, result in calls:
        if _acts_outside(tools, name) and result is not None and result.get("exception") is None:
            tables.setdefault(f"effects:{name}", []).append(json.dumps(substitute(result.get("input"), mapping), sort_keys=True, default=str))
    return {key: sorted(values) for key, values in tables.items()}


def state_tables(session: Session) -> dict[str, Any]:
    """Every table a session holds: written databases and the state records its tools declare."""
    tables: dict[str, Any] = {f"db:{name}": store for name, store in session.written_stores().items()}
    for tool_name, instance in session.tool_instances().items():
        for attr in type(instance).state_records:
            tables[f"{tool_name}.{attr}"] = getattr(instance, attr)
    return tables


def _table(session: Session, key: str) -> Any:
    if key.startswith("db:"):
        name = key[3:]
        written = session.written_stores()
        return written[name] if name in written else session.data.store(name)
    tool_name, attr = key.split(".", 1)
    return getattr(session.tool(tool_name), attr)


def _describe_difference(gold: Any, model: Any) -> dict[str, Any]:
    if isinstance(gold, dict) and isinstance(model, dict):
        return {
            "missing": sorted(map(str, gold.keys() - model.keys())),
            "unexpected": sorted(map(str, model.keys() - gold.keys())),
            "changed": sorted(str(k) for k in gold.keys() & model.keys() if gold[k] != model[k]),
        }
    if isinstance(gold, list) and isinstance(model, list):
        return {"gold_length": len(gold), "model_length": len(model),
                "first_difference": next((i for i, (a, b) in enumerate(zip(gold, model)) if a != b), min(len(gold), len(model)))}
    return {"gold": gold, "model": model}


def state_diff(gold: Session, gold_map: dict[str, str], model: Session, model_map: dict[str, str],
               gold_effects: dict[str, list[str]], model_effects: dict[str, list[str]]) -> dict[str, Any]:
    """Tables whose normalised content differs, with what differs."""
    keys = sorted(set(state_tables(gold)) | set(state_tables(model)))
    diff: dict[str, Any] = {}
    for key in sorted(gold_effects.keys() | model_effects.keys()):
        gold_calls, model_calls = gold_effects.get(key, []), model_effects.get(key, [])
        if gold_calls != model_calls:
            diff[key] = {"missing": [c for c in gold_calls if c not in model_calls],
                         "unexpected": [c for c in model_calls if c not in gold_calls]}
    for key in keys:
        gold_value = substitute(_table(gold, key), gold_map)
        model_value = substitute(_table(model, key), model_map)
        if gold_value != model_value:
            diff[key] = _describe_difference(gold_value, model_value)
    return diff


# -------------------------------------------------------------------------------------- gold replay
@dataclass
class GoldStep:
    call: GoldCall
    turn: int
    index: int  # position within its turn's calls
    arguments: dict[str, Any]  # as replayed (random values substituted)
    result: dict[str, Any] | None
    rejected: str | None
    writes: bool

    @property
    def required_read(self) -> bool:
        return (self.call.name != SEARCHER and self.result is not None and not self.writes
                and self.result.get("exception") is None)


@dataclass
class GoldReference:
    session: Session
    steps: list[GoldStep]
    placeholders: dict[str, str]

    @property
    def excluded(self) -> list[dict[str, Any]]:
        out = []
        for step in self.steps:
            if step.call.name == SEARCHER:
                continue
            if step.rejected is not None:
                out.append({"turn": step.turn, "name": step.call.name, "why": f"refused on replay: {step.rejected}"})
            elif not step.writes and step.result is not None and step.result.get("exception") is not None:
                out.append({"turn": step.turn, "name": step.call.name, "why": f"fails on replay and changes nothing: {step.result['exception']}"})
        return out

    @property
    def requires_nothing(self) -> bool:
        """No gold call changes anything or yields information: an episode that needs no call."""
        return not any(
            s.required_read or (s.writes and s.result is not None and s.result.get("exception") is None)
            for s in self.steps
        )

    @property
    def drifted(self) -> int:
        return sum(
            1 for s in self.steps
            if s.required_read and s.call.recorded is not None
            and (s.result.get("output") != s.call.recorded.get("output"))
        )


def _execute(session: Session, name: str, arguments: dict[str, Any], coercion: str) -> tuple[dict[str, Any] | None, str | None]:
    try:
        return session.call(name, arguments, coercion=coercion), None
    except CallRejected as rejected:
        return None, f"{rejected.kind}: {rejected}"
    except CallTimeout as timeout:
        return None, str(timeout)


def replay_gold(episode: Episode, data: PristineData, *, retriever: Any = None, timeout: float | None = 10.0) -> GoldReference:
    session = Session(episode.toolset, data, seed=SESSION_SEED, retriever=retriever, timeout=timeout)
    mapping: dict[str, str] = {}
    steps: list[GoldStep] = []
    for turn_index, turn in enumerate(episode.turns):
        for call_index, call in enumerate(turn.calls):
            arguments = substitute(call.arguments, mapping)
            if call.name in session.toolset:
                session.tool(call.name)  # instance state exists before the snapshot
            before = copy.deepcopy(state_tables(session))
            result, rejected = _execute(session, call.name, arguments, "none")
            after = state_tables(session)
            writes = _acts_outside(session.toolset, call.name) or any(
                after[key] != (before[key] if key in before else _table_pristine(session, key))
                for key in after
            )
            if result is not None and call.recorded is not None and result.get("exception") is None and session.toolset.get(call.name).generates_random_values:
                mapping.update(random_substitutions(call.recorded.get("output"), result.get("output")))
            steps.append(GoldStep(call, turn_index, call_index, arguments, result, rejected, writes))
    marks = placeholders(((s.call.name, s.result) for s in steps), session)
    return GoldReference(session, steps, marks)


def _table_pristine(session: Session, key: str) -> Any:
    return session.data.store(key[3:]) if key.startswith("db:") else None


# ------------------------------------------------------------------------------------------ verdict
@dataclass
class EpisodeVerdict:
    success: bool
    state_ok: bool
    information_ok: bool
    state_diff: dict[str, Any]
    missing: list[dict[str, Any]]
    excluded: list[dict[str, Any]]
    drifted: int
    rouge_l: float | None
    gold_calls: int
    model_calls: int
    matched_calls: int
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def precision(self) -> float | None:
        return self.matched_calls / self.model_calls if self.model_calls else None

    @property
    def recall(self) -> float | None:
        return self.matched_calls / self.gold_calls if self.gold_calls else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "success": self.success, "state_ok": self.state_ok, "information_ok": self.information_ok,
            "state_diff": self.state_diff, "missing": self.missing, "excluded": self.excluded,
            "drifted": self.drifted, "rouge_l": self.rouge_l, "gold_calls": self.gold_calls,
            "model_calls": self.model_calls, "matched_calls": self.matched_calls, **self.extra,
        }


def _match_calls(gold: GoldReference, gold_map: dict[str, str], trace: list[CallRecord], model_map: dict[str, str]) -> int:
    """One-to-one matches between model calls and gold calls (ToolSearcher excluded from both)."""
    wanted = [s for s in gold.steps if s.call.name != SEARCHER and s.result is not None]
    used = [False] * len(wanted)
    matched = 0
    for record in trace:
        if record.name == SEARCHER or record.result is None:
            continue
        model_input = substitute(record.result.get("input"), model_map)
        model_output = substitute(record.result.get("output"), model_map)
        for i, step in enumerate(wanted):
            if used[i] or step.call.name != record.name:
                continue
            same_input = substitute(step.result.get("input"), gold_map) == model_input
            same_read = (step.required_read and record.result.get("exception") is None
                         and substitute(step.result.get("output"), gold_map) == model_output)
            if same_input or same_read:
                used[i] = True
                matched += 1
                break
    return matched


def _rouge(answers: list[str | None], episode: Episode) -> float | None:
    scores = []
    for turn, answer in zip(episode.turns, answers + [None] * (len(episode.turns) - len(answers))):
        if turn.answer is None or not turn.answer.strip():
            continue
        try:
            scores.append(rouge_l(answer or "", turn.answer))
        except EmptyText:
            scores.append(0.0)
    return sum(scores) / len(scores) if scores else None


def judge_episode(episode: Episode, gold: GoldReference, model_session: Session, trace: list[CallRecord], answers: list[str | None]) -> EpisodeVerdict:
    model_map = placeholders(((r.name, r.result) for r in trace), model_session)
    gold_effects = effect_tables(gold.session.toolset, ((s.call.name, s.result) for s in gold.steps), gold.placeholders)
    model_effects = effect_tables(model_session.toolset, ((r.name, r.result) for r in trace), model_map)
    diff = state_diff(gold.session, gold.placeholders, model_session, model_map, gold_effects, model_effects)
    obtained: dict[str, list[Any]] = {}
    for record in trace:
        if record.result is not None and record.result.get("exception") is None:
            obtained.setdefault(record.name, []).append(substitute(record.result.get("output"), model_map))
    missing = []
    for step in gold.steps:
        if not step.required_read:
            continue
        expected = substitute(step.result.get("output"), gold.placeholders)
        if expected not in obtained.get(step.call.name, []):
            missing.append({"turn": step.turn, "name": step.call.name, "arguments": step.arguments, "output": step.result.get("output")})
    model_calls = sum(1 for r in trace if r.name != SEARCHER)
    gold_calls = sum(1 for s in gold.steps if s.call.name != SEARCHER and s.result is not None)
    return EpisodeVerdict(
        success=not diff and not missing,
        state_ok=not diff,
        information_ok=not missing,
        state_diff=diff,
        missing=missing,
        excluded=gold.excluded,
        drifted=gold.drifted,
        rouge_l=_rouge(answers, episode),
        gold_calls=gold_calls,
        model_calls=model_calls,
        matched_calls=_match_calls(gold, gold.placeholders, trace, model_map),
        extra={"needs_no_call": gold.requires_nothing},
    )
