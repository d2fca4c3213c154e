"""Time to build every test config from the local raw files, and to reload it from the datasets cache.

For each config, in one run:

* rows:   ``iter_rows`` alone (read the dialogues, render and check against test-data), no Arrow;
* build:  a fresh cache, ``ApiBank(...).download_and_prepare()`` then ``as_dataset`` (verifies every
          source file's SHA-256, generates the rows, writes Arrow);
* reload: a new builder over the same cache, ``download_and_prepare()`` (finds the prepared data)
          then ``as_dataset`` (memory-maps the Arrow file).

Usage: python benchmarks/bench_dataset.py [--data-dir DIR] [--repeat N]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time
from pathlib import Path

import datasets

from apibank.benchmark import LEVELS
from apibank.data.rows import iter_rows
from apibank_dataset import ApiBank


def _seconds(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _prepared(config: str, data_dir: str, cache: str):
    builder = ApiBank(config_name=config, data_dir=data_dir, cache_dir=cache)
    builder.download_and_prepare()
    return builder.as_dataset(split="test")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_dir = Path(__file__).resolve().parents[2] / "shared" / "apibank-upstream"
    parser.add_argument("--data-dir", default=str(default_dir))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    datasets.disable_progress_bars()
    datasets.logging.set_verbosity(logging.ERROR)

    print(f"{'config':<10}{'rows':>6}{'iter_rows (s)':>15}{'build (s)':>11}{'reload (s)':>12}")
    for config in LEVELS:
        rows, build, reload = [], [], []
        count = 0
        for _ in range(args.repeat):
            rows.append(_seconds(lambda: list(iter_rows(config, args.data_dir))))
            with tempfile.TemporaryDirectory() as cache:
                build.append(_seconds(lambda: _prepared(config, args.data_dir, cache)))
                reload.append(_seconds(lambda: _prepared(config, args.data_dir, cache)))
                count = _prepared(config, args.data_dir, cache).num_rows
        print(
            f"{config:<10}{count:>6}{statistics.median(rows):>15.3f}"
            f"{statistics.median(build):>11.3f}{statistics.median(reload):>12.3f}"
        )


if __name__ == "__main__":
    main()
