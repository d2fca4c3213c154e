"""Worst hostile inputs of each kind: wall seconds and peak MB per sample, beside a gold sample.

Each case is one ``score()`` call (or one verified read / download) run twice: from the main thread
and from a worker thread. Printed per case: the verdict category (or the error raised), wall seconds,
and peak MB above the process's memory before the call, the larger of

* the calling process's growth (high-water RSS, reset before the case with ``/proc/self/clear_refs``;
  each case runs in a forked copy of this process so cases do not share a high-water mark), and
* the judging worker's growth for its sample (reported by the worker the same way).

The limits under test: ``timeout`` (default 2 s) per judged sample, ``memory_mb`` (768) per judging
worker, MAX_PREDICTION_CHARS for every prediction and hypothesis, the manifest size for every data
file, the download deadline. Target from the issue: under 3x the timeout and under 1 GB, any thread.

Usage: python benchmarks/bench_hostile.py [--data-dir DIR] [--timeout S]
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

from apibank.benchmark import JUDGE_MEMORY_MB, JUDGE_TIMEOUT_S, LEVELS, PROTOCOLS
from apibank.data import upstream
from apibank.data.rows import iter_rows
from apibank.judge.categories import MAX_PREDICTION_CHARS
from apibank.judge.process import reset_peak, status_kb
from apibank.judge.scoring import _score
from apibank.judge.worker import RunStats


def _kb(field: str) -> int:
    return status_kb(field) or 0


def _in_fork(case: Callable[[], tuple[str, float]], thread: bool) -> tuple[str, float, float]:
    """(outcome, wall seconds, peak MB) of ``case`` run in a forked copy of this process."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            baseline = reset_peak() or _kb("VmRSS")
            box: dict[str, Any] = {}

            def body() -> None:
                start = time.perf_counter()
                try:
                    outcome, worker_mb = case()
                except Exception as error:  # the documented errors are outcomes too
                    outcome, worker_mb = f"{type(error).__name__}: {str(error)[:60]}", 0.0
                box["result"] = (outcome, time.perf_counter() - start, worker_mb)

            if thread:
                runner = threading.Thread(target=body)
                runner.start()
                runner.join()
            else:
                body()
            outcome, wall, worker_mb = box["result"]
            own_mb = max(0, _kb("VmHWM") - baseline) / 1024
            os.write(write, json.dumps([outcome, wall, max(own_mb, worker_mb)]).encode())
        finally:
            os._exit(0)
    os.close(write)
    chunks = []
    while True:
        chunk = os.read(read, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    outcome, wall, peak = json.loads(b"".join(chunks) or b'["child died", 0, 0]')
    return outcome, wall, peak


PROTOCOL = {"name": "paper"}  # the protocol the next case runs under (one judged sample per call)


def _judged(prediction: str, reference: Any, data_dir: Path, timeout: float) -> Callable[[], tuple[str, float]]:
    def case() -> tuple[str, float]:
        stats = RunStats()
        result = _score([prediction], [reference], protocols=(PROTOCOL["name"],), return_details=True,
                        data_dir=data_dir, retriever=None, timeout=timeout, memory_mb=JUDGE_MEMORY_MB, stats=stats)
        categories = sorted({str(d["category"]) for d in result["details"]})
        return "/".join(categories), max((stats.peak_mb or {0: 0.0}).values(), default=0.0)

    return case


def _stuck_in_c(row: dict, data_dir: Path, timeout: float) -> Callable[[], tuple[str, float]]:
    """Calculator patched to run a regular expression that backtracks for hours inside the C engine."""
    judged = _judged(row["expected_output"], row["reference"], data_dir, timeout)

    def case() -> tuple[str, float]:
        import re

        from apibank_tools.registry import LEVEL_1_2

        def stuck(self: Any, formula: Any) -> Any:
            return re.match(r"(a+)+$", "a" * 64 + "!")

        LEVEL_1_2.get("Calculator").run = stuck  # only in this case's forked copy of the process
        return judged()

    return case


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", help="local copy of upstream api-bank/ (default: $APIBANK_DATA_DIR)")
    parser.add_argument("--timeout", type=float, default=JUDGE_TIMEOUT_S)
    args = parser.parse_args()
    data_dir = upstream.resolve_data_dir(args.data_dir)
    rows = {row["id"]: row for level in LEVELS for row in iter_rows(level, data_dir)}
    email = rows["level-1/SendEmail-level-1-1#0"]
    search = rows["level-2/AddAgenda-level-3-1#0"]
    search3 = rows["level-3/0#0"]
    response = next(row for row in rows.values() if row["kind"] == "response" and row["level"] == 1)
    calc = rows["level-1/Calculator-level-1-1#0"]
    under = MAX_PREDICTION_CHARS - 100
    # Warm the shared things (model, catalogues, databases) once, as any scoring run does first.
    _score([search["expected_output"]], [search["reference"]], protocols=PROTOCOLS,
           return_details=False, data_dir=data_dir, retriever=None, timeout=None, memory_mb=None)

    deep_reference = '{"v": 1, "id": ' + "[" * 400_000 + "]" * 400_000 + "}"
    fat_reference = json.loads(calc["reference"])
    fat_reference["gold"]["arguments"]["formula"] = "1+" * 450_000 + "1"
    cases: list[tuple[str, str, Callable[[], tuple[str, float]]]] = [
        ("prediction", "gold sample (SendEmail)", _judged(email["expected_output"], email["reference"], data_dir, args.timeout)),
        ("prediction", "gold sample (ToolSearcher)", _judged(search["expected_output"], search["reference"], data_dir, args.timeout)),
        ("prediction", "quadratic receiver regex, just under the cap",
         _judged("[SendEmail(receiver='" + "a" * (under - 80) + "!', subject='s', content='c')]",
                 email["reference"], data_dir, args.timeout)),
        ("prediction", "ToolSearcher keywords, just under the cap",
         _judged("[ToolSearcher(keywords='" + "QueryMeeting " * (under // 13 - 3) + "')]",
                 search3["reference"], data_dir, args.timeout)),
        ("prediction", "Calculator formula, just under the cap",
         _judged("[Calculator(formula='" + "(" * 5000 + "9**9**9" + ")" * 5000 + "')]", calc["reference"], data_dir,
                 args.timeout)),
        ("prediction", "a tool stuck in C (exponential regex)", _stuck_in_c(calc, data_dir, args.timeout)),
        ("prediction", "5,000 '[' then a call", _judged("[" * 5000 + "[Calculator(formula='1')]", calc["reference"],
                                                         data_dir, args.timeout)),
        ("prediction", "10 MB keywords (over the cap)",
         _judged("[ToolSearcher(keywords='" + "x" * 10_000_000 + "')]", search["reference"], data_dir, args.timeout)),
        ("hypothesis", "gold response", _judged(response["expected_output"], response["reference"], data_dir, args.timeout)),
        ("hypothesis", "one sentence just under the cap", _judged("a " * (under // 2), response["reference"], data_dir,
                                                                   args.timeout)),
        ("hypothesis", "sentences just under the cap", _judged("a. " * (under // 3), response["reference"], data_dir,
                                                                args.timeout)),
        ("hypothesis", "1M tokens (over the cap)", _judged("word " * 1_000_000, response["reference"], data_dir,
                                                            args.timeout)),
        ("reference", "400,000-deep JSON", _judged("x", deep_reference, data_dir, args.timeout)),
        ("reference", "0.9 MB gold formula", _judged(calc["expected_output"], json.dumps(fat_reference), data_dir,
                                                      args.timeout)),
    ]

    scratch = Path(tempfile.mkdtemp(prefix="apibank-bench-"))
    try:
        copy = scratch / "copy"
        shutil.copytree(data_dir / "init_database", copy / "init_database")
        big = copy / "init_database" / "Account.json"
        os.truncate(big, big.stat().st_size + 400_000_000)  # sparse: 400 MB of zero bytes appended
        source = upstream.upstream_source(copy)
        cases.append(("data copy", "Account.json + 400 MB", lambda: (_read(source, "init_database/Account.json"), 0.0)))
        server, url = _hostile_mirror()
        cases += [
            ("mirror", "endless body", lambda: (_download(url + "/endless", scratch / "c1"), 0.0)),
            ("mirror", "1 byte per 0.2 s", lambda: (_download(url + "/drip", scratch / "c2", deadline=3.0), 0.0)),
            ("mirror", "short body (IncompleteRead)", lambda: (_download(url + "/short", scratch / "c3"), 0.0)),
        ]
        print(f"timeout {args.timeout} s per sample, memory cap {JUDGE_MEMORY_MB} MB per judging worker, "
              f"MAX_PREDICTION_CHARS {MAX_PREDICTION_CHARS}")
        print("one judged sample per line (one row under one protocol); seconds include the fork of the judging worker")
        print(f"{'kind':<11} {'case':<44} {'protocol':<9} {'thread':<7} {'seconds':>8} {'peak MB':>8}  outcome")
        worst = {"seconds": 0.0, "mb": 0.0, "download": 0.0}
        for kind, name, case in cases:
            protocols = PROTOCOLS if kind in ("prediction", "reference") else ("-",)
            for protocol in protocols:
                PROTOCOL["name"] = "paper" if protocol == "-" else protocol
                for thread in (False, True):
                    outcome, wall, peak = _in_fork(case, thread)
                    key = "download" if kind == "mirror" else "seconds"
                    worst[key] = max(worst[key], wall)
                    worst["mb"] = max(worst["mb"], peak)
                    print(f"{kind:<11} {name:<44} {protocol:<9} {'worker' if thread else 'main':<7} {wall:8.2f} "
                          f"{peak:8.1f}  {outcome[:60]}")
        print(f"worst sample: {worst['seconds']:.2f} s ({worst['seconds'] / args.timeout:.2f}x the {args.timeout:g} s timeout); "
              f"worst download: {worst['download']:.2f} s (3 s deadline); peak {worst['mb']:.0f} MB")
        server.shutdown()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _read(source: Any, path: str) -> str:
    source.read_text(path)
    return "read"


def _download(url: str, cache: Path, deadline: float = 5.0) -> str:
    os.environ[upstream.BASE_URL_ENV] = url
    os.environ.pop(upstream.DATA_DIR_ENV, None)
    try:
        upstream.fetch("init_database/Account.json", cache_dir=cache, timeout=1.0, deadline=deadline)
    finally:
        os.environ.pop(upstream.BASE_URL_ENV, None)
    return "downloaded"


class _Hostile(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802
        mode = self.path.strip("/").split("/")[0]
        self.send_response(200)
        if mode == "short":
            self.send_header("Content-Length", "100000")
            self.end_headers()
            self.wfile.write(b"{" * 10)
            return
        self.end_headers()
        try:
            if mode == "endless":
                block = b"x" * 65536
                for _ in range(10_000):
                    self.wfile.write(block)
            elif mode == "drip":
                for _ in range(100):
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    time.sleep(0.2)
        except OSError:
            pass


def _hostile_mirror() -> tuple[http.server.ThreadingHTTPServer, str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


if __name__ == "__main__":
    main()
