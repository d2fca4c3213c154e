"""lighteval's command line beside ``apibank evaluate``: the same rows of one level, the same model, offline.

    HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 python benchmarks/lighteval_beside_evaluate.py \
        --model MODEL_FOLDER --data-dir ../shared/apibank-upstream [--level 1] [--samples 8] [--work DIR]

Steps (each skipped when its output is already there, so an interrupted run is continued by the same
command):
1. ``python -m apibank.evals.lighteval accelerate "model_name=MODEL,dtype=float32,batch_size=1"
   "apibank_levelN|0" --max-samples K --save-details --output-dir WORK/lighteval``: lighteval's transformers
   backend, greedy, on the K rows lighteval draws (its own shuffle of the level, seed 42), timed, with the
   load average of ``uptime`` before and after (the machine may be shared);
2. ``apibank import-harness WORK/lighteval --output WORK/lighteval-run`` (``apibank score`` on lighteval's
   generations), and each sample's ``paper``/``corrected`` logged in lighteval's details compared with
   ``apibank score``'s verdict there;
3. ``apibank evaluate``'s pipeline (:func:`apibank.pipeline.evaluate`: paper format, transformers, batch size
   1) on the same K rows, timed (the command's ``--limit`` takes the first rows of each kind, not lighteval's
   draw; given rows, each kind's token budget is sized from their gold answers), into ``WORK/evaluate``,
   then ``apibank score`` on its predictions (given rows are a whole level to ``evaluate``; scored, they are
   the subset of the level they are, as the imported run is, and the two share their samples);
4. ``apibank leaderboard WORK/lighteval-run WORK/evaluate``.

``WORK/summary.json`` holds the counts, times and load averages. lighteval keeps each model's generations
in its own cache (``cache_dir`` of the model arguments, ``~/.cache/huggingface/lighteval`` by default),
so step 1 generates again only with a fresh ``--lighteval-cache``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from apibank.benchmark import DATA_DIR_ENV, LEVEL_NUMBERS

APIBANK = [sys.executable, "-m", "apibank.cli.main"]


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, as ``uptime`` prints them."""
    return " ".join(Path("/proc/loadavg").read_text(encoding="utf-8").split()[:3])


def timed(command: list[str], env: dict[str, str] | None = None) -> dict[str, object]:
    before = load_average()
    started = time.perf_counter()
    subprocess.run(command, check=True, env=env)
    return {"seconds": round(time.perf_counter() - started, 1), "load_before": before, "load_after": load_average()}


def save(path: Path, summary: dict[str, object]) -> None:
    path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")


def details_metrics(folder: Path) -> dict[str, dict[str, float]]:
    import pyarrow.parquet as pq

    (path,) = folder.rglob("details_*.parquet")
    return {row["doc"]["specific"]["id"]: row["metric"] for row in pq.read_table(path).to_pylist()}


def scored(run: Path) -> dict[tuple[str, str], float]:
    values = {}
    for line in (run / "details.jsonl").read_text(encoding="utf-8").splitlines():
        detail = json.loads(line)
        value = (1.0 if detail["verdict"] else 0.0) if detail["kind"] == "api" else float(detail["score"] or 0.0)
        values[(detail["id"], detail["protocol"])] = value
    return values


def predictions(run: Path) -> dict[str, str]:
    lines = (run / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    return {record["id"]: record["prediction"] for record in map(json.loads, lines)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="a transformers model folder")
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--level", type=int, default=1, choices=LEVEL_NUMBERS)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--work", type=Path, default=Path("lighteval-beside-evaluate"))
    parser.add_argument("--lighteval-cache", help="lighteval's cache of generations (model argument cache_dir)")
    args = parser.parse_args(argv)
    work: Path = args.work
    work.mkdir(parents=True, exist_ok=True)
    summary_path = work / "summary.json"
    summary = json.loads(summary_path.read_text(encoding="utf-8")) if summary_path.exists() else {}
    env = {**os.environ, DATA_DIR_ENV: str(Path(args.data_dir).resolve())}

    model_args = f"model_name={args.model},dtype=float32,batch_size=1"
    if args.lighteval_cache:
        model_args += f",cache_dir={args.lighteval_cache}"
    if not list((work / "lighteval").rglob("details_*.parquet")):
        summary["lighteval"] = timed([sys.executable, "-m", "apibank.evals.lighteval", "accelerate", model_args,
                                      f"apibank_level{args.level}|0", "--custom-tasks", "apibank.evals.lighteval",
                                      "--max-samples", str(args.samples), "--save-details",
                                      "--output-dir", str(work / "lighteval")], env)
        save(summary_path, summary)
    if not (work / "lighteval-run" / "results.json").exists():
        summary["import_harness"] = timed([*APIBANK, "import-harness", str(work / "lighteval"), "--data-dir",
                                           args.data_dir, "--output", str(work / "lighteval-run"), "--quiet"])
    logged, verdicts = details_metrics(work / "lighteval"), scored(work / "lighteval-run")
    equal = [logged[row_id][protocol] == value for (row_id, protocol), value in verdicts.items()]
    summary["verdicts"] = {"compared": len(equal), "equal": sum(equal), "samples": len(logged)}

    if not (work / "evaluate" / "results.json").exists():
        from apibank.pipeline import evaluate, load_rows

        rows = [row for row in load_rows([args.level], args.data_dir) if row["id"] in logged]
        before, started = load_average(), time.perf_counter()
        evaluate(args.model, levels=[args.level], fmt="paper", backend="transformers", rows=rows,
                 output_dir=work / "evaluate", data_dir=args.data_dir, batch_size=1, progress=False)
        summary["evaluate"] = {"seconds": round(time.perf_counter() - started, 1), "load_before": before,
                               "load_after": load_average(), "rows": len(rows)}
        # given rows, evaluate takes them for the whole level; `apibank score` on its predictions scores them
        # as the subset of the level they are (as import-harness does), keeping the run's configuration
        subprocess.run([*APIBANK, "score", str(work / "evaluate" / "predictions.jsonl"), "--data-dir",
                        args.data_dir, "--overwrite", "--quiet"], check=True)
    results = json.loads((work / "evaluate" / "results.json").read_text(encoding="utf-8"))
    summary.setdefault("evaluate", {})["usage"] = results.get("usage")
    save(summary_path, summary)
    harness, own = predictions(work / "lighteval-run"), predictions(work / "evaluate")
    summary["predictions"] = {"rows": len(own), "identical": sum(harness.get(k) == v for k, v in own.items())}

    board = subprocess.run([*APIBANK, "leaderboard", str(work / "lighteval-run"), str(work / "evaluate"),
                            "--no-published", "--output", str(work / "leaderboard")], capture_output=True, text=True,
                           check=False)
    summary["leaderboard"] = {"returncode": board.returncode}
    print(board.stdout)
    save(summary_path, summary)
    print(json.dumps(summary, indent=2))
    return 0 if summary["verdicts"]["equal"] == summary["verdicts"]["compared"] and board.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
