"""95% intervals for API-Bank scores: a percentile bootstrap that resamples whole dialogues.

Why this method. The rows of one dialogue are not independent draws: a level-1 dialogue yields
several API-call rows that share the user, the tools and the history, so a model that misreads the
dialogue tends to miss all of them. A binomial or per-row bootstrap interval treats 399 correlated
rows as 399 independent ones and comes out too narrow. The unit that was sampled when the
benchmark was built is the dialogue, so the interval resamples dialogues: each bootstrap replicate
draws as many dialogues as the level has, with replacement, keeps every row of each drawn dialogue,
and recomputes the score as a ratio (correct rows over rows, or the sum of ROUGE-L over responses).
The 2.5th and 97.5th percentiles of the replicates bound the interval. Overall scores resample
within each level (levels are fixed strata, not a random draw of dialogues) and pool the levels.

Properties that follow from the method:

* it needs no assumption about the correlation inside a dialogue, and rows sharing a dialogue with
  a correct row are counted as one draw, not as independent evidence;
* a score with no variation in the run (every row correct, or every row wrong) gives a zero-width
  interval: no resample can differ. It says "no error observed", not "no uncertainty";
* a score over one dialogue has no interval (``ci95`` is None and ``ci95_reason`` says why): every
  resample of one cluster is that cluster, so its interval would have zero width however its rows
  vary. The same holds for an overall score when any level has one dialogue (levels are resampled
  apart), for paired comparisons and for agentic figures over one episode;
* with few dialogues (level 2 and 3 have 50) a percentile bootstrap covers slightly less than its
  nominal level; ``tests/judge/test_intervals.py`` measures coverage on simulated clustered data of
  this benchmark's shape.

Reproducible: the resampling weights come from numpy's PCG64 generator seeded with :data:`SEED` and
the level's name, so a run scored twice gets the same intervals, and two runs over the same rows get
the same resamples (which the paired comparison in :mod:`apibank.report.compare` relies on). All
replicates of a level are one matrix product, so every interval of a full run takes milliseconds.
"""

from __future__ import annotations

import copy
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

CONFIDENCE = 0.95
RESAMPLES = 2000
SEED = 20230417  # fixed: intervals are part of the reproducible output
INTERVAL_NOTE = (
    "Brackets: 95% interval by a percentile bootstrap over dialogues (2,000 resamples, fixed seed): rows of "
    "one dialogue are not independent, so whole dialogues are resampled. A score with no variation (e.g. "
    "100%) has a zero-width interval."
)


def no_interval_reason(clusters: int, unit: str = "dialogue") -> str | None:
    """Why a bootstrap over ``clusters`` clusters gives no interval; None when it gives one (two or more)."""
    if clusters >= 2:
        return None
    return f"one {unit}: no interval" if clusters == 1 else f"no {unit}: no interval"


def bracket(bounds: Sequence[float] | None, reason: str | None, form: Callable[[float], str]) -> str:
    """``[low, high]`` with each bound written by ``form``, ``[reason]`` when there is no interval, else ''."""
    if bounds:
        return f"[{form(bounds[0])}, {form(bounds[1])}]"
    return f"[{reason}]" if reason else ""


def dialogue_of(sample_id: str) -> str:
    """The dialogue a row belongs to: its id without the ``#sample`` suffix (``level-1/Name-1#3`` -> ``level-1/Name-1``)."""
    return str(sample_id).split("#", 1)[0]


def resample_weights(clusters: int, stratum: str, resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """How often each of ``clusters`` clusters is drawn in each replicate: a (resamples, clusters) count matrix."""
    if clusters == 0:
        return np.zeros((resamples, 0), dtype=np.int64)
    rng = np.random.default_rng([seed, zlib.crc32(stratum.encode("utf-8"))])
    drawn = rng.integers(0, clusters, size=(resamples, clusters))  # each replicate: `clusters` draws with replacement
    flat = drawn + (np.arange(resamples) * clusters)[:, None]
    return np.bincount(flat.ravel(), minlength=resamples * clusters).reshape(resamples, clusters)


@dataclass(frozen=True)
class Grouped:
    """Per-cluster sums and row counts of one metric, aligned on a fixed cluster order."""

    sums: np.ndarray
    sizes: np.ndarray

    @property
    def n(self) -> int:
        return int(self.sizes.sum())


def group(values: Iterable[tuple[str, float]], clusters: Sequence[str]) -> Grouped:
    """Sum ``(cluster, value)`` pairs per cluster, in the order of ``clusters``."""
    index = {name: position for position, name in enumerate(clusters)}
    sums = np.zeros(len(clusters))
    sizes = np.zeros(len(clusters))
    for name, value in values:
        position = index[name]
        sums[position] += value
        sizes[position] += 1
    return Grouped(sums, sizes)


def replicates(weights: np.ndarray, grouped: Grouped) -> np.ndarray:
    """The ratio sum/size in every bootstrap replicate (NaN where a replicate drew no row of the metric)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return (weights @ grouped.sums) / (weights @ grouped.sizes)


def percentile_interval(values: np.ndarray, confidence: float = CONFIDENCE) -> list[float] | None:
    values = values[~np.isnan(values)]
    if values.size == 0:
        return None
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(values, [tail, 100 - tail])
    # rounded so that summation noise (0.9999999949999999 for 0.999999995) does not show
    return [round(float(low), 12), round(float(high), 12)]


# ------------------------------------------------------------------------------------ classic runs
def _level_samples(details: Sequence[Mapping[str, Any]], protocol: str) -> dict[str, dict[str, list]]:
    """Per level: the (dialogue, value) pairs of API verdicts, responses and level-3 dialogue verdicts."""
    out: dict[str, dict[str, list]] = {}
    for entry in details:
        if entry.get("protocol") != protocol:
            continue
        level = f"level-{entry['level']}"
        cell = out.setdefault(level, {"api": [], "response": [], "dialogues": {}})
        dialogue = dialogue_of(entry["id"])
        if entry.get("kind") == "api":
            correct = bool(entry.get("verdict"))
            cell["api"].append((dialogue, float(correct)))
            cell["dialogues"][dialogue] = cell["dialogues"].get(dialogue, True) and correct
        elif entry.get("kind") == "response" and entry.get("score") is not None:
            cell["response"].append((dialogue, float(entry["score"])))
    for cell in out.values():
        cell["dialogues"] = [(name, float(ok)) for name, ok in cell["dialogues"].items()]
    return out


def _annotate(block: dict[str, Any] | None, reps: np.ndarray, grouped: Grouped, reason: str | None = None) -> None:
    """Give ``block`` its interval, rows and clusters; ``reason`` (or a lone cluster) leaves it without interval."""
    if not isinstance(block, dict):
        return
    clusters = int((grouped.sizes > 0).sum())
    reason = (reason or no_interval_reason(clusters)) if grouped.n else None
    block["ci95"] = percentile_interval(reps) if grouped.n and reason is None else None
    block["n"] = grouped.n
    block["clusters"] = clusters
    if reason is not None:
        block["ci95_reason"] = reason


def score_intervals(
    scores: Mapping[str, Any],
    details: Sequence[Mapping[str, Any]],
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> dict[str, Any]:
    """A copy of ``scores`` (the metric's per-protocol blocks) where every API accuracy, level-3 dialogue
    accuracy and ROUGE-L mean gains ``ci95`` ([low, high], the units of the score), ``n`` (rows) and
    ``clusters`` (dialogues), computed from the per-sample ``details``; where there is no interval over
    its rows (one dialogue), ``ci95`` is None and ``ci95_reason`` says why."""
    out = copy.deepcopy(dict(scores))
    drawn: dict[tuple[int, str], np.ndarray] = {}  # protocols share a level's resamples (same seed, same draw)
    for protocol, blocks in out.items():
        if not isinstance(blocks, dict) or not any(str(key).startswith("level-") for key in blocks):
            continue
        samples = _level_samples(details, protocol)
        pooled: dict[str, list[tuple[np.ndarray, Grouped, str]]] = {"api": [], "response": []}
        for level, cell in sorted(samples.items()):
            clusters = sorted({name for kind in ("api", "response") for name, _ in cell[kind]})
            if (len(clusters), level) not in drawn:
                drawn[(len(clusters), level)] = resample_weights(len(clusters), level, resamples, seed)
            weights = drawn[(len(clusters), level)]
            block = blocks.get(level) or {}
            for kind in ("api", "response", "dialogues"):
                grouped = group(cell[kind], clusters)
                _annotate(block.get(kind), replicates(weights, grouped), grouped)
                if kind in pooled:
                    pooled[kind].append((weights, grouped, level))
        overall = blocks.get("overall") or {}
        for kind, parts in pooled.items():
            if not parts:
                continue
            sums = sum(weights @ grouped.sums for weights, grouped, _ in parts)
            sizes = sum(weights @ grouped.sizes for weights, grouped, _ in parts)
            total = Grouped(np.concatenate([g.sums for _, g, _ in parts]), np.concatenate([g.sizes for _, g, _ in parts]))
            # levels are resampled apart: one with a lone dialogue would count as certain
            lone = [level for _, grouped, level in parts if grouped.n and no_interval_reason(int((grouped.sizes > 0).sum()))]
            several = int((total.sizes > 0).sum()) > 1
            reason = f"one dialogue in {', '.join(lone)}: no interval" if lone and several else None
            with np.errstate(invalid="ignore", divide="ignore"):
                _annotate(overall.get(kind), sums / sizes, total, reason)
    return out


# ------------------------------------------------------------------------------------ episodes
def episode_intervals(
    per_episode: Mapping[str, Mapping[str, float]],
    stratum: str,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> dict[str, list[float] | None]:
    """Intervals over episodes for agentic figures. ``per_episode`` maps each episode to
    ``{figure: value}`` where the figure's score is the mean of the values over episodes (pass^k,
    pass@k) or, for a ratio, ``{figure: numerator, figure + "/": denominator}`` (success over trials).
    Over one episode every figure has no interval (None)."""
    episodes = sorted(per_episode)
    weights = resample_weights(len(episodes), stratum, resamples, seed)
    figures = sorted({name for values in per_episode.values() for name in values if not name.endswith("/")})
    out: dict[str, list[float] | None] = {}
    for name in figures:
        present = [e for e in episodes if per_episode[e].get(name) is not None]
        if not present or no_interval_reason(len(episodes), "episode"):
            out[name] = None
            continue
        sums = np.array([float(per_episode[e].get(name) or 0.0) for e in episodes])
        sizes = np.array([float(per_episode[e].get(name + "/", 1.0)) if per_episode[e].get(name) is not None else 0.0
                          for e in episodes])
        out[name] = percentile_interval(replicates(weights, Grouped(sums, sizes)))
    return out

