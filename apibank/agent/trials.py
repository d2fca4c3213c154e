"""pass^k and pass@k from repeated trials of the same episodes.

With ``n`` trials of an episode of which ``c`` succeeded, the unbiased estimators are
``pass@k = 1 - C(n-c, k) / C(n, k)`` (at least one of k sampled trials succeeds; Chen et al. 2021)
and ``pass^k = C(c, k) / C(n, k)`` (all k succeed; tau-bench), averaged over episodes.
"""

from __future__ import annotations

from math import comb
from typing import Iterable, Sequence


def pass_at_k(n: int, c: int, k: int) -> float:
    _check(n, c, k)
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    _check(n, c, k)
    return comb(c, k) / comb(n, k)


def _check(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= successes ({c}) <= trials ({n}) and 1 <= k ({k}) <= trials")


def mean_over_episodes(outcomes: Iterable[Sequence[bool]], k: int, estimator) -> float | None:
    values = [estimator(len(trials), sum(trials), k) for trials in outcomes]
    return sum(values) / len(values) if values else None
