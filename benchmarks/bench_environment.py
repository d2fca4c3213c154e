"""Cost of a pristine per-sample environment versus the original's full re-initialisation.

The original evaluator builds a new ToolManager for every judged call, reading every
``init_database/*.json`` file again. Here the pristine data is parsed once per process and a
session copies only the databases a call writes. This script times, side by side in one run:

* session: a new ``Session`` over the shared pristine data, then one call;
* naive:   re-read and parse every database file, then a new ``Session`` over that, then one call.

Usage: python benchmarks/bench_environment.py [--data-dir DIR] [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from apibank_tools import PristineData, Session, pristine_data

CALLS = [
    ("GetUserToken", {"username": "JohnDoe", "password": "pass123"}),
    ("AddAgenda", {"token": "a9s8d7f6g5h4j3k2l1", "content": "meeting", "time": "2023-03-20 10:00:00", "location": "office"}),
    ("QueryBalance", {"token": "a9s8d7f6g5h4j3k2l1"}),
    ("ImageCaption", {"url": "http://l.yimg.com/g/images/spaceball.gif"}),
]


def _time(fn, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_dir = Path(__file__).resolve().parents[2] / "shared" / "apibank-upstream"
    parser.add_argument("--data-dir", default=str(default_dir))
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()

    shared = pristine_data(args.data_dir).preload()

    print(f"{'call':<16}{'session (ms)':>14}{'naive (ms)':>12}{'ratio':>8}")
    for name, arguments in CALLS:
        def with_session() -> None:
            Session("level-1-2", shared).call(name, arguments)

        def naive() -> None:
            fresh = PristineData(args.data_dir).preload()
            Session("level-1-2", fresh).call(name, arguments)

        fast = _time(with_session, args.repeat)
        slow = _time(naive, max(3, args.repeat // 5))
        print(f"{name:<16}{fast * 1e3:>14.3f}{slow * 1e3:>12.3f}{slow / fast:>7.0f}x")

    creation = _time(lambda: Session("level-1-2", shared), args.repeat * 10)
    reload = _time(lambda: PristineData(args.data_dir).preload(), max(3, args.repeat // 5))
    print(f"{'env creation':<16}{creation * 1e3:>14.4f}{reload * 1e3:>12.3f}{reload / creation:>7.0f}x")


if __name__ == "__main__":
    main()
