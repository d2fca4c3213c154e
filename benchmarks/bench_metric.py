"""Scoring speed: every test sample of every level, gold answers as predictions, both protocols.

Side by side in one run:

* metric:   ``apibank.judge.scoring.score`` over all rows (API and response, levels 1-3), with the
            pristine databases parsed once per process and a fresh session per judged call;
* baseline: the same judging, but re-initialising the tool environment for every API sample as the
            original evaluator does (a new pristine-data object that re-reads and parses every
            ``init_database/*.json`` file).

The ToolSearcher model is loaded and both catalogues embedded before timing (a one-time cost per
process, reported separately). "metric (cold)" is the first scoring run, which still embeds each
distinct keyword once; "metric (warm)" repeats it with the per-process retrieval cache filled, as in
any run after the first or with repeated keywords. The baseline runs with a warm retrieval cache too,
so the ratio isolates the environment cost.

Usage: python benchmarks/bench_metric.py [--data-dir DIR] [--repeat N] [--baseline-limit N]
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import time

from apibank_tools.environment import PristineData, pristine_data
from apibank_tools.registry import LEVEL_1_2, LEVEL_3
from apibank_tools.retrieval import catalogue

from apibank.benchmark import LEVELS, PROTOCOLS
from apibank.data.rows import iter_rows
from apibank.data.upstream import resolve_data_dir
from apibank.judge.judging import Judge
from apibank.judge.retriever import CachedRetriever
from apibank.judge.scoring import response_scores, score


def _baseline(predictions: list[str], references: list[dict], data_dir, retriever: CachedRetriever) -> None:
    """The original's per-sample re-initialisation: every database file read and parsed again."""
    for prediction, reference in zip(predictions, references):
        if reference["kind"] == "response":
            response_scores(prediction, reference)
            continue
        judge = Judge(PristineData(data_dir).preload(), retriever)
        judge.paper(prediction, reference, copy.deepcopy(reference["gold"]["result"]))
        judge.corrected(prediction, reference)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", help="local copy of upstream api-bank/ (default: $APIBANK_DATA_DIR)")
    parser.add_argument("--repeat", type=int, default=3, help="timed repetitions of the metric run")
    parser.add_argument("--baseline-limit", type=int, default=0,
                        help="run the baseline on the first N rows only (0: all); rates stay comparable")
    args = parser.parse_args()
    data_dir = resolve_data_dir(args.data_dir)

    rows = [row for config in LEVELS for row in iter_rows(config, data_dir)]
    predictions = [row["expected_output"] for row in rows]
    references = [row["reference"] for row in rows]
    api_rows = sum(row["kind"] == "api" for row in rows)
    print(f"{len(rows)} rows ({api_rows} API-call, {len(rows) - api_rows} response), levels 1-3, both protocols")

    start = time.perf_counter()
    retriever = CachedRetriever()
    for tools in (LEVEL_1_2, LEVEL_3):
        retriever.inner.document_embeddings([text for _, text in catalogue(tools)])
    pristine_data(data_dir).preload()
    print(f"one-time setup (ToolSearcher model, catalogue embeddings, databases): {time.perf_counter() - start:.2f} s")

    start = time.perf_counter()
    result = score(predictions, references, data_dir=data_dir, retriever=retriever)
    cold = time.perf_counter() - start
    warm_times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        score(predictions, references, data_dir=data_dir, retriever=retriever)
        warm_times.append(time.perf_counter() - start)
    warm = statistics.median(warm_times)

    limit = args.baseline_limit or len(rows)
    parsed = [json.loads(r) for r in references[:limit]]
    start = time.perf_counter()
    _baseline(predictions[:limit], parsed, data_dir, retriever)
    baseline = time.perf_counter() - start

    rate_cold, rate_warm, rate_base = len(rows) / cold, len(rows) / warm, limit / baseline
    print(f"metric (cold): {cold:7.3f} s  {rate_cold:9.0f} samples/s")
    print(f"metric (warm): {warm:7.3f} s  {rate_warm:9.0f} samples/s  (median of {args.repeat})")
    print(f"baseline:      {baseline:7.3f} s  {rate_base:9.0f} samples/s  ({limit} rows, environment re-read per API sample)")
    print(f"speed-up over the baseline: {rate_warm / rate_base:.1f}x warm, {rate_cold / rate_base:.1f}x cold")
    for protocol in PROTOCOLS:
        figures = ", ".join(
            f"{level} {block['api']['correct']}/{block['api']['total']}"
            for level, block in result[protocol].items()
            if level != "overall"
        )
        print(f"{protocol}: {figures}")


if __name__ == "__main__":
    main()
