"""Agentic runs, from a model to judged episodes, files and a report: ``apibank agent``.

Output folder layout: ``trajectories.jsonl`` (written as the episodes end, by
:func:`apibank.agent.episode_runner.run_level`, and rewritten at the end in the order of a one-at-a-time run),
``results.json``, ``report.md``, ``report.html`` and ``leaderboard/`` (``dataset/eval.yaml``; with a
``dataset_id`` and every episode of each level run, ``model/.eval_results/api-bank-agentic-<setting>.yaml``:
:mod:`apibank.hub.agentic`)."""

from __future__ import annotations

import datetime as _dt
import os
import time
from pathlib import Path
from typing import Any, Callable, ContextManager, Mapping, Sequence

from apibank.data.audits import VERIFIED, Audit, load_audit
from apibank.errors import OutputError, UsageError
from apibank.files import (
    LEADERBOARD_DIR, REPORT_FILE, RESULTS_FILE, TRAJECTORIES_FILE, atomic_write_text, episode_key, read_trajectories,
    write_json,
    write_json_lines,
)
from apibank.hub.agentic import write_agentic_leaderboard_files
from apibank.report.agentic import report_markdown
from apibank.report.html import write_report_html
from apibank.report.verified import episode_statuses

# ``(total, description, initial)`` -> a progress bar (a context manager with ``update()``)
ProgressBar = Callable[[int, str, int], ContextManager[Any]]


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) while the episodes ran: the trajectories written so far stay in the output folder.
    ``cause`` is the interrupt itself (:class:`apibank.generate.interrupts.Terminated` for SIGTERM)."""

    def __init__(self, cause: KeyboardInterrupt) -> None:
        super().__init__()
        self.cause = cause


def previous_trajectories(output: Path, model: str, *, overwrite: bool) -> list[dict]:
    """The trajectories a resumed run keeps (none with ``overwrite``); a torn last line (a run killed while
    writing, or a full disk) is cut off the file, as a resumed ``evaluate`` does with its predictions."""
    trajectories = output / TRAJECTORIES_FILE
    if overwrite or not trajectories.exists():
        return []
    records = read_trajectories(trajectories, resume=True,
                                what_to_do="mend or delete that line to resume with the others, or give --overwrite "
                                "to discard every episode")
    for record in records:
        if record.get("agent") != model:
            raise OutputError(f"{trajectories} holds trajectories of {record.get('agent')!r}, not {model!r}; "
                              "use another --output, or --overwrite to discard them")
    return records


def agent_and_driver(model: str, backend: str, backend_options: Mapping[str, Any], *, tool_format: str,
                     max_new_tokens: int, thinking_budget: int | None = None):
    """``(agent factory, model driver or None)``: a scripted agent class, or handles on one loaded model."""
    from apibank.agent.agents import SCRIPTED_AGENTS

    if model in SCRIPTED_AGENTS:
        return SCRIPTED_AGENTS[model], None
    from apibank.agent.model_agent import AgentSetupError, ModelAgent, ModelDriver
    from apibank.generate.backends import make_backend

    loaded = make_backend(model, backend, **backend_options)
    try:
        driver = ModelDriver(loaded, tool_format=tool_format, max_new_tokens=max_new_tokens,
                             thinking_budget=thinking_budget, label=model)
    except AgentSetupError as error:
        loaded.close()
        raise UsageError(str(error)) from None
    return (lambda: ModelAgent(driver)), driver


def run_agentic(
    model: str,
    levels: Sequence[str],
    *,
    setting: str,
    backend: str,
    backend_options: Mapping[str, Any],
    backend_choice: str | None = None,
    tool_format: str,
    max_new_tokens: int,
    thinking_budget: int | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    output: Path | None = None,
    previous: Sequence[dict] = (),
    overwrite: bool = False,
    trials: int = 1,
    limit: int | None = None,
    max_steps: int | None = None,
    time_limit: float | None = None,
    batch_size: int = 8,
    price: Any = None,
    dataset_id: str | None = None,
    progress_bar: ProgressBar | None = None,
) -> dict[str, Any]:
    """Run every episode of ``levels`` ``trials`` times, judge them, write the output files into ``output``
    (with one) and return ``results.json``'s content. ``previous`` are the trajectories a resumed run keeps
    (:func:`previous_trajectories`). A model whose chat template makes it think first gets ``thinking_budget``
    more tokens per step (None: :func:`~apibank.generate.runner.thinking_plan`'s default), recorded under
    ``thinking`` as evaluate records it. Ctrl-C while the episodes run raises :class:`Interrupted`."""
    from contextlib import nullcontext

    from apibank.agent.episode_runner import DEFAULT_MAX_STEPS, DEFAULT_TIME_LIMIT, Limits, default_gold_cache, run_level, summarise
    from apibank.data.episodes import load_episodes
    from apibank.pipeline.results import library_versions, package_version, record_unread_calls, usage_totals

    done = {episode_key(record): record for record in previous}
    audit = load_audit(data_dir)
    sets = [load_episodes(level, data_dir) for level in levels]
    gold = default_gold_cache(data_dir)
    agent_factory, driver = agent_and_driver(model, backend, backend_options, tool_format=tool_format,
                                             max_new_tokens=max_new_tokens, thinking_budget=thinking_budget)
    limits = Limits(max_steps=max_steps or DEFAULT_MAX_STEPS, time_limit=time_limit or DEFAULT_TIME_LIMIT)
    trajectories = output / TRAJECTORIES_FILE if output is not None else None
    try:
        if output is not None:
            output.mkdir(parents=True, exist_ok=True)
            if overwrite and trajectories.exists():
                trajectories.unlink()
        summaries, records = {}, []
        started = time.perf_counter()
        for episodes in sets:
            if limit:
                episodes.episodes = episodes.episodes[:limit]
            keys = [(e.id, setting, trial) for trial in range(trials) for e in episodes.episodes]
            initial = sum(key in done for key in keys)
            bar_of = progress_bar(len(keys), f"agent {episodes.level}", initial) if progress_bar else nullcontext()
            with bar_of as bar:
                level_records = run_level(agent_factory, episodes, setting, gold, trials=trials, limits=limits,
                                          trajectories=trajectories, done=done, batch_size=batch_size,
                                          progress=(lambda line: bar.update()) if bar is not None else None)
            summaries[episodes.level] = summarise(episodes, level_records, trials)
            records += level_records
        wall = time.perf_counter() - started
        model_info = driver.info() if driver is not None else {"id": model, "backend": "scripted"}
        if backend_choice:
            model_info["backend_choice"] = backend_choice
        template = driver.backend.template_info() if driver is not None and hasattr(driver.backend, "template_info") else None
    except KeyboardInterrupt as interrupt:
        raise Interrupted(interrupt) from None
    finally:
        if driver is not None:
            driver.close()
    if trajectories is not None:  # written as the episodes ended: now in the order of a one-at-a-time run
        ran = {episode_key(record) for record in records}
        write_json_lines(trajectories, [*(r for r in previous if episode_key(r) not in ran), *records])
    this_run = [r for r in records if episode_key(r) not in done]

    def model_usage(among: list[dict]) -> list[dict]:
        return [{"prompt_tokens": r["usage"].get("prompt_tokens"), "generated_tokens": r["usage"].get("completion_tokens"),
                 "seconds": r.get("model_seconds")} for r in among]

    usage = usage_totals(model_usage(this_run), earlier=model_usage([r for r in records if episode_key(r) in done]),
                         price_per_mtok=price, wall_seconds=wall)
    usage["episodes_per_second"] = round(len(this_run) / wall, 4) if this_run and wall > 0 else None
    results = {
        "model": model_info,
        "setting": setting,
        "trials": trials,
        "limit": limit,
        "limits": {"max_steps": limits.max_steps, "time_limit": limits.time_limit, "call_timeout": limits.call_timeout},
        "batch_size": batch_size,
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "apibank_version": package_version(),
        "levels": summaries,
        "verified": verified_summaries(audit, sets, records, trials),
        "usage": usage,
        "versions": library_versions(),
    }
    if driver is not None:
        results["decoding"] = driver.settings.as_dict()
        results["thinking"] = driver.thinking
    if template is not None:  # the chat template used and each adaptation it needed
        results["chat_template"] = template
    if driver is not None:
        record_unread_calls(results, driver.unread_calls)
    if output is not None:
        write_agentic_outputs(results, output, dataset_id=dataset_id)
    return results


def verified_summaries(audit: Audit, sets: Sequence[Any], records: Sequence[Mapping[str, Any]],
                       trials: int) -> dict[str, Any]:
    """The per-level summaries of the episodes whose every test row the row audit marks verified (an episode
    is judged on all its calls and its answer), with the episodes left out and those no test row maps to
    (:func:`apibank.report.verified.episode_statuses`): reported beside the full summaries, never mixed."""
    from apibank.agent.episode_runner import summarise
    from apibank.data.episodes import EpisodeSet

    verified = episode_statuses(audit)
    levels = {}
    for episodes in sets:
        kept = [episode for episode in episodes.episodes if verified.get(episode.id)]
        levels[episodes.level] = {
            **summarise(EpisodeSet(episodes.level, kept, episodes.skipped), records, trials),
            "episodes_left_out": sum(verified.get(episode.id) is False for episode in episodes.episodes),
            "episodes_without_rows": sum(episode.id not in verified for episode in episodes.episodes),
        }
    return {"audit": audit.summary(), "status": VERIFIED, "levels": levels}


def write_agentic_outputs(
    results: Mapping[str, Any],
    output: Path,
    *,
    dataset_id: str | None = None,
    dataset_revision: str | None = None,
) -> dict[str, Path]:
    output.mkdir(parents=True, exist_ok=True)
    paths = {"results": output / RESULTS_FILE, "report": output / REPORT_FILE}
    write_json(paths["results"], results)
    atomic_write_text(paths["report"], report_markdown(results))
    leaderboard = write_agentic_leaderboard_files(
        results, output / LEADERBOARD_DIR, dataset_id=dataset_id, dataset_revision=dataset_revision
    )
    paths.update({key if key == "eval_yaml" else "eval_results": path for key, path in leaderboard.items()})
    paths["report_html"] = write_report_html(output)
    return paths
