"""Gold replay: execute every recorded gold call and compare with its recorded result.

Each call is executed from its structured recorded form (the result record's ``input``, already
coerced), first on a fresh session ("fresh"); if that does not reproduce the recorded record
exactly, again on a session where the dialogue's earlier gold calls were executed first
("after_replay"); otherwise it is "not_reproducible", with the reason.

It checks, tool by tool, that our implementations reproduce the results recorded in the
dialogues (how many gold calls match exactly, and why the others differ).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Iterator

from apibank_tools.base import CallRejected, Record
from apibank_tools.environment import PristineData, Session, pristine_data
from apibank_tools.text import space_before_capitals

from apibank.benchmark import SEARCHER, TOOLSETS
from apibank.data.dialogues import DIALOGUE_FOLDERS, iter_dialogues, level3_dialogues
from apibank.data.upstream import upstream_source


@dataclass(frozen=True)
class GoldCall:
    """One recorded call: where it is, what was called and what was recorded."""

    file: str
    position: int  # line index in a dialogue file, or index into a level-3 dialogue's ``apis``
    api_name: str
    arguments: dict[str, Any]
    recorded: Record
    earlier: tuple[tuple[str, dict[str, Any], Record], ...]


@dataclass
class ToolSetReport:
    total: int = 0
    fresh: int = 0
    after_replay: int = 0
    not_reproducible: int = 0
    failures: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "fresh": self.fresh,
            "after_replay": self.after_replay,
            "not_reproducible": self.not_reproducible,
            "failures": self.failures,
            **self.extra,
        }


def level12_gold_calls(data_dir: str | os.PathLike[str] | None = None) -> Iterator[GoldCall]:
    for level in DIALOGUE_FOLDERS:
        for dialogue in iter_dialogues(level, data_dir):
            earlier: list[tuple[str, dict[str, Any], Record]] = []
            for position, turn in enumerate(dialogue.turns):
                if turn.get("role") != "API":
                    continue
                result = turn["result"]
                yield GoldCall(dialogue.file, position, turn["api_name"], dict(result["input"] or {}), result, tuple(earlier))
                earlier.append((turn["api_name"], dict(result["input"] or {}), result))


def level3_gold_calls(data_dir: str | os.PathLike[str] | None = None) -> Iterator[GoldCall]:
    for sample_id, dialogue in enumerate(level3_dialogues(data_dir)):
        earlier: list[tuple[str, dict[str, Any], Record]] = []
        for api_id, call in enumerate(dialogue["apis"]):
            recorded = call["output"]
            yield GoldCall(f"level-3.json#{sample_id}", api_id, call["api_name"], dict(recorded["input"]), recorded, tuple(earlier))
            earlier.append((call["api_name"], dict(recorded["input"]), recorded))


def _execute(session: Session, call: GoldCall) -> tuple[Record | None, str | None]:
    try:
        return session.call(call.api_name, call.arguments, coercion="none"), None
    except CallRejected as rejected:
        return None, f"rejected before the tool ran: {rejected}"


def _difference(executed: Record, recorded: Record) -> str:
    if executed.get("exception") and not recorded.get("exception"):
        return f"tool failed: {executed['exception']}"
    keys = [k for k in ("api_name", "input", "output", "exception") if executed.get(k) != recorded.get(k)]
    return "differs in " + ", ".join(keys)


def replay_toolset(
    name: str,
    calls: list[GoldCall],
    data: PristineData,
    retriever: Any = None,
    *,
    position: str = "turn",
) -> ToolSetReport:
    """How the gold ``calls`` on tool set ``name`` reproduce their recorded results; a failure names
    the call's place by ``position`` (its turn in a dialogue file, or its index in a requirement's calls)."""
    report = ToolSetReport()
    for call in calls:
        report.total += 1
        executed, rejected = _execute(Session(name, data, retriever=retriever), call)
        if executed == call.recorded:
            report.fresh += 1
            continue
        session = Session(name, data, retriever=retriever)
        session.replay(call.earlier, adopt=False)
        replayed, rejected_after = _execute(session, call)
        if replayed == call.recorded:
            report.after_replay += 1
            continue
        report.not_reproducible += 1
        reason = rejected or (_difference(executed, call.recorded) if executed is not None else rejected_after)
        adopted = Session(name, data, retriever=retriever)
        adopted.replay(call.earlier, adopt=True)
        if _execute(adopted, call)[0] == call.recorded:
            reason += "; reproduces when the recorded random ids of earlier calls are adopted"
        failure: dict[str, Any] = {"file": call.file, "api": call.api_name, "reason": reason}
        failure[position] = call.position
        report.failures.append(failure)
    return report


def _searcher_figures(calls: list[GoldCall], retriever: Any) -> dict[str, Any]:
    from apibank_tools.retrieval import retrieve

    searches = [c for c in calls if c.api_name == SEARCHER]

    def recorded_tool(call: GoldCall) -> str:
        output = call.recorded["output"]
        return (output[-1] if isinstance(output, list) else output)["name"]

    as_recorded = sum(retrieve(TOOLSETS["level-3"], c.arguments["keywords"], retriever) == recorded_tool(c) for c in searches)
    split = sum(
        retrieve(TOOLSETS["level-3"], space_before_capitals(c.arguments["keywords"]), retriever) == recorded_tool(c)
        for c in searches
    )
    return {"tool_searcher": {"total": len(searches), "retrieves_recorded_tool": as_recorded, "retrieves_recorded_tool_camel_split": split}}


def run_replay(data_dir: str | os.PathLike[str] | None = None, retriever: Any = None) -> dict[str, dict[str, Any]]:
    data = pristine_data(upstream_source(data_dir))
    level12_tools, level3_tools = TOOLSETS["level-1"], TOOLSETS["level-3"]
    level12 = replay_toolset(level12_tools, list(level12_gold_calls(data_dir)), data, retriever)
    level3_calls = list(level3_gold_calls(data_dir))
    level3 = replay_toolset(level3_tools, level3_calls, data, retriever, position="index")
    level3.extra.update(_searcher_figures(level3_calls, retriever))
    return {level12_tools: level12.as_dict(), level3_tools: level3.as_dict()}


def format_table(results: dict[str, dict[str, Any]]) -> str:
    lines = []
    for name, report in results.items():
        lines.append(f"{name}: {report['total']} gold calls")
        lines.append(f"  reproduced from fresh state   {report['fresh']:>4}")
        lines.append(f"  reproduced only after replay  {report['after_replay']:>4}")
        lines.append(f"  not reproducible              {report['not_reproducible']:>4}")
        if "tool_searcher" in report:
            ts = report["tool_searcher"]
            lines.append(
                f"  ToolSearcher retrieves the recorded tool: {ts['retrieves_recorded_tool']}/{ts['total']} "
                f"(keywords as recorded), {ts['retrieves_recorded_tool_camel_split']}/{ts['total']} (CamelCase-split)"
            )
        for failure in report["failures"]:
            where = failure.get("turn", failure.get("index"))
            lines.append(f"    {failure['file']} @{where} {failure['api']}: {failure['reason']}")
    return "\n".join(lines)
