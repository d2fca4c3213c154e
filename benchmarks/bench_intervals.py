"""Coverage of the dialogue-cluster bootstrap interval on simulated clustered data, and its speed.

Each simulated run keeps the real dialogue sizes of a level (rows per dialogue, read from the
upstream data) and draws correlated verdicts: every dialogue gets its own success probability from
a Beta distribution with mean ``p`` and intra-dialogue correlation ``icc``, and its rows are
Bernoulli draws with that probability. The true accuracy is ``p``; coverage is the share of
simulated runs whose 95% interval contains it. The same runs are also given a row-level bootstrap
(every row its own cluster), the interval one gets by ignoring the dialogues.

    python benchmarks/bench_intervals.py [--runs 2000] [--data-dir ../shared/apibank-upstream]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from typing import Sequence

import numpy as np

from apibank.benchmark import LEVELS
from apibank.judge.intervals import Grouped, percentile_interval, replicates, resample_weights


def dialogue_sizes(level: str, data_dir: str | None) -> list[int]:
    """API-call rows per dialogue of ``level`` in the real test data."""
    from apibank.data.rows import iter_rows
    from apibank.judge.intervals import dialogue_of

    counts = Counter(dialogue_of(row["id"]) for row in iter_rows(level, data_dir) if row["kind"] == "api")
    return [counts[name] for name in sorted(counts)]


def simulate_coverage(
    sizes: Sequence[int], p: float, icc: float, runs: int, *, resamples: int = 1000, seed: int = 0
) -> dict[str, float]:
    """Coverage of the cluster and the row-level bootstrap intervals for the true accuracy ``p``."""
    rng = np.random.default_rng(seed)
    sizes = np.asarray(sizes, dtype=float)
    concentration = (1 - icc) / icc  # Beta(a, b) with a + b = this has intra-class correlation icc
    cluster_weights = resample_weights(len(sizes), "simulation", resamples)
    row_weights = resample_weights(int(sizes.sum()), "simulation-rows", resamples)
    covered = {"cluster": 0, "rows": 0}
    widths = {"cluster": 0.0, "rows": 0.0}
    for _ in range(runs):
        rates = rng.beta(p * concentration, (1 - p) * concentration, size=len(sizes))
        correct = rng.binomial(sizes.astype(int), rates).astype(float)
        rows = np.concatenate([np.r_[np.ones(int(c)), np.zeros(int(n - c))] for c, n in zip(correct, sizes)])
        for name, weights, grouped in (
            ("cluster", cluster_weights, Grouped(correct, sizes)),
            ("rows", row_weights, Grouped(rows, np.ones_like(rows))),
        ):
            low, high = percentile_interval(replicates(weights, grouped))
            covered[name] += low <= p <= high
            widths[name] += high - low
    return {**{f"coverage_{k}": v / runs for k, v in covered.items()},
            **{f"width_{k}": v / runs for k, v in widths.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()
    print("| level | dialogues | rows | p | ICC | cluster bootstrap coverage | width | row bootstrap coverage | width |")
    print("|---|---|---|---|---|---|---|---|---|")
    for level in LEVELS:
        sizes = dialogue_sizes(level, args.data_dir)
        for p, icc in ((0.5, 0.3), (0.8, 0.3), (0.8, 0.1), (0.95, 0.3)):
            result = simulate_coverage(sizes, p, icc, args.runs)
            print(f"| {level} | {len(sizes)} | {sum(sizes)} | {p} | {icc} | {100 * result['coverage_cluster']:.1f}% | "
                  f"{100 * result['width_cluster']:.1f} | {100 * result['coverage_rows']:.1f}% | "
                  f"{100 * result['width_rows']:.1f} |")
    sizes = np.asarray(dialogue_sizes("level-1", args.data_dir), dtype=float)
    started = time.perf_counter()
    weights = resample_weights(len(sizes), "level-1")
    percentile_interval(replicates(weights, Grouped(np.round(0.8 * sizes), sizes)))
    print(f"\none level-1 interval at 2,000 resamples: {1000 * (time.perf_counter() - started):.1f} ms")


if __name__ == "__main__":
    main()
