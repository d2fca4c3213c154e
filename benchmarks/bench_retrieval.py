"""Cost of a ToolSearcher call: first call in a process versus later calls, and upstream's per-call reload.

Upstream loads the embedding model and re-embeds the whole catalogue on every call. Here the model is
loaded once per process and each catalogue embedded once per retriever. This script times, in one run:

* load:   building the default (ONNX) backend;
* first:  the first level-1/2 ToolSearcher call (embeds the catalogue);
* cached: later calls (the keywords only);
* reload: a new backend and a fresh catalogue embedding per call, as upstream does.

Usage: python benchmarks/bench_retrieval.py [--data-dir DIR] [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from apibank_tools.environment import new_session
from apibank_tools.registry import LEVEL_1_2
from apibank_tools.retrieval import OnnxMiniLMBackend, Retriever, catalogue

from apibank.benchmark import SEARCHER

KEYWORDS = ["add schedule", "check the weather", "book meeting", "translate text", "query stock price"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_dir = Path(__file__).resolve().parents[2] / "shared" / "apibank-upstream"
    parser.add_argument("--data-dir", default=str(default_dir))
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    LEVEL_1_2.names()  # import the tool modules outside the timings

    start = time.perf_counter()
    retriever = Retriever(OnnxMiniLMBackend())
    load = time.perf_counter() - start

    def call(keywords: str, searcher: Retriever) -> None:
        new_session("level-1-2", args.data_dir, retriever=searcher).call(SEARCHER, {"keywords": keywords})

    start = time.perf_counter()
    call(KEYWORDS[0], retriever)
    first = time.perf_counter() - start

    cached = []
    for i in range(args.repeat):
        start = time.perf_counter()
        call(KEYWORDS[i % len(KEYWORDS)], retriever)
        cached.append(time.perf_counter() - start)

    reload = []
    for i in range(max(1, args.repeat // 5)):
        start = time.perf_counter()
        call(KEYWORDS[i % len(KEYWORDS)], Retriever(OnnxMiniLMBackend()))
        reload.append(time.perf_counter() - start)

    entries = len(catalogue(LEVEL_1_2))
    print(f"catalogue entries: {entries}")
    print(f"load backend       {load * 1000:9.1f} ms")
    print(f"first call         {first * 1000:9.1f} ms  (embeds the catalogue)")
    print(f"cached call median {statistics.median(cached) * 1000:9.1f} ms")
    print(f"upstream-style     {statistics.median(reload) * 1000:9.1f} ms  (reload + re-embed per call)")


if __name__ == "__main__":
    main()
