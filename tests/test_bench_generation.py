"""benchmarks/bench_generation.py's engines run (``--engines``), without vLLM: the tiny model through the
transformers backend and the package's openai backend against a local stand-in server, in one run; the
``engines:`` line just before the ``ratio:`` line, which stays last; bad ``--engines`` refused in one
line before any work. (The vLLM engine and its raw ``LLM.generate`` comparison run only in vLLM's own
environment: measured by hand, benchmarks/README.md.)"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.local_endpoint import ChatCompletions

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "bench_generation.py"
REPLY = "API-Request: [ToolSearcher(keywords='alarm')]\nmore text after the stop"


def _bench(*argv: str, data_dir: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, str(SCRIPT), "--data-dir", str(data_dir), *argv], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900, check=False)


def test_engines_line_comes_before_the_ratio_line(data_dir):
    """4 rows at batch 2 through transformers (tiny model) and the stand-in server: each engine gets every
    row (plus 2 warm-up rows) with its own budget, and the last two lines are ``engines:`` and ``ratio:``."""
    with ChatCompletions(lambda body: {"role": "assistant", "content": REPLY},
                         usage={"prompt_tokens": 50, "completion_tokens": 7, "total_tokens": 57}) as server:
        done = _bench("--model", "tiny", "--rows", "4", "--batch-sizes", "1", "2", "--no-generate",
                      "--engines", "transformers", f"openai={server.base_url}", data_dir=data_dir)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert re.fullmatch(r"ratio: b1=\d+\.\d\dx b2=\d+\.\d\dx", lines[-1]), lines[-1]
    assert re.fullmatch(r"engines: transformers=\d+\.\d\ds openai=\d+\.\d\ds", lines[-2]), lines[-2]
    table = {line.split(" | ")[0]: line.split(" | ") for line in lines if line.startswith(("transformers |", "openai |"))}
    assert table["openai"][5] == str(4 * 7) and table["openai"][7] == "0/4"  # the server's usage; other outputs
    assert table["transformers"][7] == "4/4"
    assert len(server.requests) == 2 + 4  # the warm-up rows, then every row once
    budgets = {request["max_tokens"] for request in server.requests}
    assert budgets and all(0 < budget < 600 for budget in budgets)  # each row's own budget, not one cap
    assert f"openai = {server.base_url}" in done.stdout


@pytest.mark.parametrize("engines, message", [
    (["llamacpp"], r"--engines llamacpp: unknown engine; give transformers, vllm or openai=URL"),
    (["openai"], r"--engines openai: give the server's API root"),
    (["transformers", "transformers"], r"--engines transformers: named twice"),
    (["openai=http://127.0.0.1:9/v1"], r"--engines openai=http://127.0.0.1:9/v1: no server answers"),
    (["vllm"], (r"--engines vllm: vLLM is not installed in this Python \(.*\); run the script with the Python "
                r"of vLLM's environment .*or drop vllm from --engines")),
])
def test_bad_engines_are_refused_in_one_line_before_any_work(engines, message, data_dir):
    if engines == ["vllm"] and importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed in this Python")
    done = _bench("--model", "tiny", "--engines", *engines, data_dir=data_dir)
    assert done.returncode == 2
    assert done.stdout == ""  # nothing loaded, nothing measured
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and re.fullmatch(r"bench_generation.py: error: " + message + ".*", lines[0]), lines
