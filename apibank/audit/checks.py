"""The audit's machine checks: each a named function over all test rows that returns the rows it flags.

A flag is ``{"check": name, "result": short verdict, "detail": evidence}``; a row no check flags is
verified without review, a flagged row needs a hand-written decision (:mod:`apibank.audit.decisions`).

* ``untraced_argument`` -- a gold argument value that neither the dialogue, an earlier tool result,
  the offered tools' documentation nor a stated derivation gives (:mod:`apibank.audit.tracing`);
* ``tool_intent`` -- a gold call whose action (Add, Delete, Cancel, Modify, Query, from the tool's name)
  the user never asks for: the user asks to set a reminder, the gold deletes one;
* ``response_untraced_number`` -- a gold response stating a number (an id, a balance) that no tool
  returned and nobody said;
* ``wording_sensitive`` -- a free-text argument, not given verbatim, whose meaning-preserving
  rewording (case, a final full stop, articles) flips the corrected verdict of the gold call;
* ``not_reproduced`` -- the gold call's recorded result is not what a fresh execution gives, neither
  from fresh state nor after the dialogue's earlier calls (``apibank.judge.replay``'s rule); the
  detail says whether the corrected check still accepts the fresh result (``verdict_depends``);
* ``duplicate`` -- a row whose history and target repeat an earlier row's (exactly, or with 90% of
  its word trigrams shared and the same target), within or across levels;
* ``training_overlap`` -- a row whose dialogue text is found in the training data (exactly, or half
  of its word 8-grams), of the training files that exist: the pinned upstream folder holds level 3's only
  (``training-data/lv3-*.json``), so every level is compared against those.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from apibank.audit.tracing import (
    ISO_DATE, NUMBER, argument_leaves, normalised, row_context, stated_numbers, trace_value,
)
from apibank.benchmark import SEARCHER
from apibank.data.renames import renamed_record
from apibank.notation import render_request

Flag = dict[str, Any]


@dataclass
class AuditRow:
    """One test row as the checks read it."""

    row: dict[str, Any]
    reference: dict[str, Any]

    @property
    def id(self) -> str:
        return self.row["id"]

    @property
    def gold(self) -> dict[str, Any] | None:
        return self.reference["gold"]

    def dialogue_text(self) -> str:
        """What the user and the assistant say (level 3: the requirement), lower-cased."""
        return normalised(" ".join(t["text"] for t in self.row["history"] if t["role"] != "API"))

    def signature(self) -> str:
        """The row's whole content (kind, history, target), normalised: equal for duplicated rows."""
        turns = [(t["role"], t["text"], t["api_name"], t["arguments"]) for t in self.row["history"]]
        target = self.row["target"]
        return normalised(json.dumps([self.row["kind"], turns, target["api_name"], target["arguments"], target["text"]]))


def audit_rows(rows: Iterable[Mapping[str, Any]]) -> list[AuditRow]:
    return [AuditRow(dict(row), json.loads(row["reference"])) for row in rows]


@dataclass
class Environment:
    """What the checks execute against: a judge over the pristine databases, the data folder, and the
    training inputs that exist."""

    judge: Any
    data_dir: Any
    training_texts: list[str]


def _flag(check: str, result: str, detail: Any) -> Flag:
    return {"check": check, "result": result, "detail": detail}


# --------------------------------------------------------------------------------- tracing
def untraced_argument(rows: list[AuditRow], env: Environment | None = None) -> dict[str, Flag]:
    """Gold argument values nothing before the target gives. ToolSearcher's keywords are the model's own
    choice (judged by the tool they retrieve) and are not traced."""
    flags = {}
    for item in rows:
        if item.gold is None or item.gold["api_name"] == SEARCHER:
            continue
        context = row_context(item.row)
        missing = [f"{name}={leaf!r}" for name, value in item.gold["arguments"].items()
                   for leaf in argument_leaves(value) if trace_value(leaf, context) is None]
        if missing:
            flags[item.id] = _flag("untraced_argument", "untraced", missing)
    return flags


# ------------------------------------------------------------------------------ responses
def response_untraced_number(rows: list[AuditRow], env: Environment | None = None) -> dict[str, Flag]:
    """Gold responses that state a number nothing before them gives: an id, a balance, a count the
    tools never returned. Integers up to 12 are left out (list numbering, clock hours, small counts), a
    percentage is traced by its fraction (50% by 0.5) and a rounded figure by what it rounds."""
    flags = {}
    for item in rows:
        if item.row["kind"] != "response":
            continue
        stated = stated_numbers(row_context(item.row).everything)
        missing = []
        for match in NUMBER.finditer(item.row["target"]["text"]):
            text = match.group().replace(",", "")
            value = float(text)
            places = len(text.partition(".")[2])
            if (value.is_integer() and abs(value) <= 12) or value / 100 in stated or any(
                    round(number, places) == value for number in stated):
                continue
            missing.append(match.group())
        if missing:
            flags[item.id] = _flag("response_untraced_number", "untraced", missing)
    return flags


# ------------------------------------------------------------------------------ tool intent
# The action a tool's name begins with, and the words a user asks for that action with.
ACTIONS = {
    "Add": r"\b(add|set|create|book|schedule|make|register|remind me|record|new|reserv\w*|put)\b",
    "Delete": r"\b(delete|remove|cancel|clear)\b",
    "Cancel": r"\b(cancel|delete|remove)\b",
    "Modify": r"\b(modify|change|update|reschedule|move|edit|switch)\b",
    "Query": r"\b(give me|list|any|have|check|query|tell me|what|show|find|look up|get|see if|retrieve|view|know|"
             r"confirm|details)\b",
}


def tool_intent(rows: list[AuditRow], env: Environment | None = None) -> dict[str, Flag]:
    """Gold calls whose action (Add, Delete, Cancel, Modify, Query: the start of the tool's name) the user
    never asks for in any words of that action."""
    flags = {}
    for item in rows:
        if item.gold is None:
            continue
        action = re.match("|".join(ACTIONS), item.gold["api_name"])
        if action is None:
            continue
        said = normalised(" ".join(t["text"] for t in item.row["history"] if t["role"] == "User"))
        if not re.search(ACTIONS[action.group()], said):
            flags[item.id] = _flag("tool_intent", "action never asked for",
                                   {"tool": item.gold["api_name"], "action": action.group()})
    return flags


# ------------------------------------------------------------------------------ sensitivity
_ARTICLES = re.compile(r"\b(the|a|an)\s+", re.IGNORECASE)


def rewordings(text: str) -> list[str]:
    """Meaning-preserving rewordings of a free-text value (each differs from ``text``)."""
    candidates = [text.lower(), text[:1].upper() + text[1:], text.rstrip(".") if text.endswith(".") else text + ".",
                  _ARTICLES.sub("", text).strip()]
    return [c for c in dict.fromkeys(candidates) if c and c != text]


def is_free_text(value: Any) -> bool:
    """A string of words (not a date, an address, a number or a list)."""
    if not isinstance(value, str) or len(value.split()) < 2 or ISO_DATE.match(value.strip()):
        return False
    return value.strip()[:1] not in "[{" and "@" not in value and re.search(r"[a-zA-Z]{2}", value) is not None


def wording_sensitive(rows: list[AuditRow], env: Environment) -> dict[str, Flag]:
    """Free-text gold arguments, not given verbatim, whose rewording flips the corrected verdict."""
    flags = {}
    for item in rows:
        gold = item.gold
        if gold is None or gold["api_name"] == SEARCHER:
            continue
        context = row_context(item.row)
        flipped = []
        for name, value in gold["arguments"].items():
            if not is_free_text(value) or (trace_value(value, context) or "").startswith("verbatim"):
                continue
            for reworded in rewordings(value):
                prediction = render_request(gold["api_name"], {**gold["arguments"], name: reworded})
                if not env.judge.corrected(prediction, item.reference).correct:
                    flipped.append(f"{name}: {value!r} -> {reworded!r} judged wrong")
        if flipped:
            flags[item.id] = _flag("wording_sensitive", "verdict flips", flipped)
    return flags


# ---------------------------------------------------------------------------- reproducibility
def not_reproduced(rows: list[AuditRow], env: Environment) -> dict[str, Flag]:
    """Gold calls whose recorded result a fresh execution does not give (``apibank.judge.replay``)."""
    from apibank.benchmark import TOOLSETS
    from apibank.judge.replay import level3_gold_calls, level12_gold_calls, replay_toolset

    judge, data_dir = env.judge, env.data_dir
    failures: dict[tuple[str, int], str] = {}
    for toolset, calls, position in (
        (TOOLSETS["level-1"], list(level12_gold_calls(data_dir)), "turn"),
        (TOOLSETS["level-3"], list(level3_gold_calls(data_dir)), "index"),
    ):
        report = replay_toolset(toolset, calls, judge.data, judge.retriever, position=position)
        for failure in report.failures:
            failures[(failure["file"], failure[position])] = failure["reason"]
    flags = {}
    for item in rows:
        if item.gold is None:
            continue
        ref = item.reference
        key = (f"{ref['file']}#{ref['sample_id']}", ref["api_id"]) if ref["level"] == 3 else (ref["file"], ref["turn"])
        if key not in failures:
            continue
        executed = judge.execute_gold(ref)
        tool = judge_tool(ref)
        recorded = renamed_record(tool, ref["gold"]["result"])
        # The corrected judge accepts agreement with the record or with this fresh result: the verdict
        # rests on the record only where its own check tells the two apart.
        depends = executed is None or not tool.check_corrected(executed, recorded)
        flags[item.id] = _flag("not_reproduced", "recorded result not reproduced",
                               {"reason": failures[key], "verdict_depends": depends,
                                "executed_output": None if executed is None else executed.get("output"),
                                "recorded_output": ref["gold"]["result"].get("output")})
    return flags


def judge_tool(reference: Mapping[str, Any]) -> Any:
    from apibank_tools.registry import toolset

    return toolset(reference["toolset"]).get(reference["gold"]["api_name"])


# -------------------------------------------------------------------------------- duplicates
def _shingles(text: str, n: int) -> set[tuple[str, ...]]:
    words = text.split()
    return {tuple(words[i:i + n]) for i in range(max(1, len(words) - n + 1))}


NEAR_DUPLICATE = 0.9


def duplicate(rows: list[AuditRow], env: Environment | None = None) -> dict[str, Flag]:
    """Rows repeating an earlier row (in level order): the same content, or the same target with at
    least :data:`NEAR_DUPLICATE` of the dialogue's word trigrams shared (Jaccard)."""
    flags = {}
    first: dict[str, str] = {}
    by_target: dict[str, list[tuple[str, set]]] = {}
    for item in rows:
        signature = item.signature()
        if signature in first:
            flags[item.id] = _flag("duplicate", "exact", {"of": first[signature]})
            continue
        first[signature] = item.id
        target = normalised(json.dumps([item.row["kind"], item.row["target"]["api_name"],
                                        item.row["target"]["arguments"], item.row["target"]["text"]]))
        shingles = _shingles(item.dialogue_text() + " " + normalised(
            " ".join(t["arguments"] for t in item.row["history"])), 3)
        for other, other_shingles in by_target.get(target, []):
            similarity = len(shingles & other_shingles) / max(1, len(shingles | other_shingles))
            if similarity >= NEAR_DUPLICATE:
                flags[item.id] = _flag("duplicate", "near", {"of": other, "jaccard": round(similarity, 3)})
                break
        else:
            by_target.setdefault(target, []).append((item.id, shingles))
    return flags


# --------------------------------------------------------------------------------- training
NEAR_TRAINING = 0.5
TRAINING_NGRAM = 8


def training_overlap(rows: list[AuditRow], env: Environment) -> dict[str, Flag]:
    """Rows whose dialogue text appears in a training input exactly, or shares at least
    :data:`NEAR_TRAINING` of its word 8-grams with the training inputs."""
    corpus = [normalised(text) for text in env.training_texts]
    grams: set[tuple[str, ...]] = set()
    for text in corpus:
        grams |= _shingles(text, TRAINING_NGRAM)
    flags = {}
    for item in rows:
        text = item.dialogue_text()
        if not text:
            continue
        if any(text in training for training in corpus):
            flags[item.id] = _flag("training_overlap", "exact", {"text": text[:200]})
            continue
        own = _shingles(text, TRAINING_NGRAM)
        shared = len(own & grams) / len(own)
        if len(text.split()) >= TRAINING_NGRAM and shared >= NEAR_TRAINING:
            flags[item.id] = _flag("training_overlap", "near", {"shared_8grams": round(shared, 3)})
    return flags


CHECKS: dict[str, Callable[..., dict[str, Flag]]] = {
    "untraced_argument": untraced_argument,
    "tool_intent": tool_intent,
    "response_untraced_number": response_untraced_number,
    "wording_sensitive": wording_sensitive,
    "not_reproduced": not_reproduced,
    "duplicate": duplicate,
    "training_overlap": training_overlap,
}
