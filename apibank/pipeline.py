"""From a model to scores, files and a report: the functions behind ``apibank evaluate`` and ``apibank score``.

Output folder layout (``evaluate``):

* ``predictions.jsonl``: one line per row (id, prediction, exact prompt, raw output, format, decoding, model,
  and usage: prompt_tokens, generated_tokens, seconds);
* ``details.jsonl``: the metric's per-sample verdicts (both protocols);
* ``results.json``: scores (each with its 95% interval ``ci95``, ``n`` and ``clusters``, each level with the
  paper's ``error_types``: :mod:`apibank.report.annotate`), counts, revisions, protocol descriptions, model,
  backend, dtype, batch size, decoding settings, ``subset`` (a ``--limit`` run or a partial file), ``usage``
  (prompt_tokens, generated_tokens, seconds, samples/s, cost with a price), ``versions`` (apibank,
  transformers, torch, vLLM), the chat template's SHA-256 under ``model``;
* ``report.md`` with PNG plots;
* ``leaderboard/``: ``dataset/eval.yaml``; with a ``dataset_id`` and complete levels also
  ``model/README.md`` (model-index) and ``model/.eval_results/<variant>.yaml``, one per protocol
  (:mod:`apibank.hub.leaderboard`).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from apibank.files import atomic_write_text, atomic_writer, dumps_strict, json_line, json_safe
from apibank.generate.backends import Backend, make_backend
from apibank.generate.predictions import read_predictions, write_predictions
from apibank.generate.runner import generate_predictions, sized_settings
from apibank.report.annotate import annotate_scores
from apibank.report.table import LEVELS, format_table

PREDICTIONS_FILE = "predictions.jsonl"
DETAILS_FILE = "details.jsonl"
RESULTS_FILE = "results.json"
REPORT_FILE = "report.md"
LEADERBOARD_DIR = "leaderboard"
PROTOCOLS = ("paper", "corrected")


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("apibank")
    except PackageNotFoundError:
        return "unknown"


def normalise_levels(levels: Iterable[str | int] | None) -> list[str]:
    if not levels:
        return list(LEVELS)
    out = []
    for level in levels:
        name = f"level-{level}" if str(level).isdigit() else str(level)
        if name not in LEVELS:
            raise ValueError(f"unknown level {level!r}; expected one of {LEVELS} (or 1, 2, 3)")
        if name not in out:
            out.append(name)
    return out


def load_rows(
    levels: Iterable[str | int] | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """The test rows of ``levels``; with ``limit``, the first ``limit`` API-call rows and the first
    ``limit`` response rows of each level."""
    from apibank.data.rows import iter_rows

    rows: list[dict[str, Any]] = []
    for level in normalise_levels(levels):
        rows += iter_rows(level, data_dir)
    return limit_rows(rows, limit)


def limit_rows(rows: Iterable[Mapping[str, Any]], limit: int | None) -> list[Any]:
    """The first ``limit`` API-call rows and the first ``limit`` response rows of each level (all with None)."""
    taken: Counter = Counter()
    kept = []
    for row in rows:
        key = (row["level"], row["kind"])
        if limit is not None and taken[key] >= limit:
            continue
        taken[key] += 1
        kept.append(row)
    return kept


def level_of(row_id: str) -> str:
    match = re.match(r"(level-[123])/", row_id)
    if not match:
        raise ValueError(f"not an API-Bank row id: {row_id!r}")
    return match.group(1)


def counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for row in rows:
        cell = out.setdefault(f"level-{row['level']}", {"api": 0, "response": 0})
        cell[row["kind"]] += 1
    return out


def score_records(
    records: Sequence[Mapping[str, Any]],
    rows: Sequence[Mapping[str, Any]],
    *,
    protocols: Sequence[str] = PROTOCOLS,
    data_dir: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Join predictions to rows on ``id`` and run the metric (rows without a prediction score as empty)."""
    from apibank.judge.scoring import score

    by_id = {record["id"]: record["prediction"] for record in records}
    unknown = set(by_id) - {row["id"] for row in rows}
    if unknown:
        raise ValueError(f"{len(unknown)} predictions have ids that are not dataset rows, e.g. {sorted(unknown)[:3]}")
    predictions = [by_id.get(row["id"], "") for row in rows]
    references = [row["reference"] for row in rows]
    return score(predictions, references, protocols=tuple(protocols), return_details=True, data_dir=data_dir)


def _revision(scores: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> str | None:
    if scores.get("revision"):
        return scores["revision"]
    for row in rows:
        return json.loads(row["reference"]).get("revision")
    return None


def library_versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    versions: dict[str, str | None] = {}
    for name in ("apibank", "transformers", "torch", "vllm", "tokenizers"):
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = None
    return versions


def parse_price(text: str | Sequence[float] | None) -> tuple[float, float] | None:
    """``"IN,OUT"`` (price per million prompt / generated tokens) as two floats."""
    if text is None:
        return None
    parts = text.split(",") if isinstance(text, str) else list(text)
    try:
        values = tuple(float(part) for part in parts)
    except ValueError:
        values = ()
    if len(values) != 2 or any(value < 0 or value != value for value in values):
        raise ValueError(f"--price-per-mtok {text!r}: expected IN,OUT, two non-negative numbers (price per "
                         "million prompt tokens, per million generated tokens)")
    return values  # type: ignore[return-value]


def usage_totals(
    records: Sequence[Mapping[str, Any]],
    *,
    price_per_mtok: tuple[float, float] | None = None,
    wall_seconds: float | None = None,
) -> dict[str, Any]:
    """Totals of the per-sample usage in ``records``: tokens, generation seconds, samples/s, cost.

    ``seconds`` adds up every sample's generation time (runs that resumed included); ``wall_seconds``
    is this invocation's generation wall time. Token totals are None when no sample reports them, and
    ``samples_with_token_counts`` says how many do.
    """
    def total(key: str):
        values = [record.get(key) for record in records if record.get(key) is not None]
        return (sum(values), len(values)) if values else (None, 0)

    prompt, counted = total("prompt_tokens")
    generated, _ = total("generated_tokens")
    seconds, _ = total("seconds")
    usage: dict[str, Any] = {
        "samples": len(records),
        "samples_with_token_counts": counted,
        "prompt_tokens": prompt,
        "generated_tokens": generated,
        "seconds": round(seconds, 3) if seconds is not None else None,
        "samples_per_second": round(len(records) / seconds, 4) if seconds else None,
        "generated_tokens_per_second": round(generated / seconds, 2) if seconds and generated is not None else None,
        "wall_seconds": round(wall_seconds, 3) if wall_seconds is not None else None,
    }
    if price_per_mtok is not None:
        price_in, price_out = price_per_mtok
        usage["price_per_mtok"] = {"prompt": price_in, "generated": price_out}
        usage["cost"] = (
            round((prompt or 0) / 1e6 * price_in + (generated or 0) / 1e6 * price_out, 6) if counted else None
        )
    return usage


def build_results(
    scores: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    *,
    model_info: Mapping[str, Any],
    fmt: str | None,
    decoding: Mapping[str, Any] | None,
    batch_size: int | None,
    limit: int | None,
    icl: bool = False,
    dataset_id: str | None = None,
    usage: Mapping[str, Any] | None = None,
    subset: bool | None = None,
) -> dict[str, Any]:
    return {
        "benchmark": "API-Bank",
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "apibank_version": package_version(),
        "model": {
            "id": model_info.get("model_id"),
            "revision": model_info.get("model_revision"),
            "backend": model_info.get("backend"),
            "dtype": model_info.get("dtype"),
            **{k: v for k, v in model_info.items() if k not in {"model_id", "model_revision", "backend", "dtype"}},
        },
        "format": fmt,
        "icl": icl,
        "decoding": dict(decoding or {}),
        "batch_size": batch_size,
        "limit": limit,
        "subset": bool(limit) if subset is None else subset,
        "levels": sorted({f"level-{row['level']}" for row in rows}),
        "counts": counts(rows),
        "dataset": {"id": dataset_id, "upstream_revision": _revision(scores, rows), "split": "test"},
        "protocols": scores.get("protocols", {}),
        "scores": annotate_scores(
            {key: value for key, value in scores.items() if key not in {"details", "protocols", "revision"}},
            scores.get("details") or [],
        ),
        "usage": dict(usage or {}),
        "versions": library_versions(),
        "files": {"predictions": PREDICTIONS_FILE, "details": DETAILS_FILE, "report": REPORT_FILE},
    }


def write_outputs(
    results: dict[str, Any],
    details: Sequence[Mapping[str, Any]],
    rows: Sequence[Mapping[str, Any]],
    output_dir: Path,
    *,
    dataset_id: str | None,
    leaderboard_protocol: str = "paper",
    dataset_revision: str | None = None,
    source: Any = None,
) -> dict[str, Path]:
    from apibank.hub.leaderboard import write_leaderboard_files
    from apibank.report.markdown import write_report

    output_dir.mkdir(parents=True, exist_ok=True)
    # Atomic, strict JSON (no NaN/Infinity; values from model output made JSON values), valid UTF-8.
    atomic_write_text(output_dir / RESULTS_FILE, dumps_strict(json_safe(results), indent=2, ensure_ascii=False) + "\n")
    with atomic_writer(output_dir / DETAILS_FILE) as handle:
        for entry in details:
            handle.write(json_line(json_safe(entry)) + "\n")
    paths = {
        "results": output_dir / RESULTS_FILE,
        "details": output_dir / DETAILS_FILE,
        "report": write_report(results, rows, output_dir, protocol=leaderboard_protocol),
    }
    paths.update(
        write_leaderboard_files(
            results, output_dir / LEADERBOARD_DIR, dataset_id=dataset_id, dataset_revision=dataset_revision,
            source=source,
        )
    )
    return paths


def evaluate(
    model: str,
    *,
    levels: Iterable[str | int] | None = None,
    fmt: str = "chat",
    backend: str | Backend = "transformers",
    limit: int | None = None,
    output_dir: str | os.PathLike[str] = "apibank-results",
    data_dir: str | os.PathLike[str] | None = None,
    batch_size: int = 8,
    max_new_tokens: int | None = None,
    stop: Sequence[str] | None = None,
    price_per_mtok: tuple[float, float] | str | None = None,
    icl: bool = False,
    protocols: Sequence[str] = PROTOCOLS,
    backend_options: Mapping[str, Any] | None = None,
    dataset_id: str | None = None,
    dataset_revision: str | None = None,
    leaderboard_protocol: str = "paper",
    overwrite: bool = False,
    progress: bool = True,
    rows: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Generate predictions for ``model`` (a Hub id, a local folder or ``.gguf`` file, an endpoint model name
    or ``oracle``), score them and write every output file; returns the results dictionary.

    ``max_new_tokens`` caps every answer; below it, each level's API calls and responses get a budget
    sized from that level's gold answers (all rows of the level, so a ``limit`` subset decodes as the
    full run does). ``price_per_mtok`` (``"IN,OUT"``) adds a cost to the usage totals."""
    import time

    price = parse_price(price_per_mtok) if isinstance(price_per_mtok, str) else price_per_mtok
    output_dir = Path(output_dir)
    level_rows = list(rows) if rows is not None else load_rows(levels, data_dir)
    rows = limit_rows(level_rows, limit)
    predictions_path = output_dir / PREDICTIONS_FILE
    engine = backend if isinstance(backend, Backend) else make_backend(model, backend, **dict(backend_options or {}))
    output_dir.mkdir(parents=True, exist_ok=True)  # only once the model loaded: no empty folder after a failure
    if overwrite and predictions_path.exists():
        predictions_path.unlink()
    try:
        settings = sized_settings(engine, level_rows, fmt, max_new_tokens=max_new_tokens, stop=stop)
        started = time.perf_counter()
        records = generate_predictions(
            rows, engine, fmt=fmt, settings=settings, batch_size=batch_size, output_path=predictions_path,
            icl=icl, progress=progress,
        )
        wall = time.perf_counter() - started
        info = engine.info()
        template = engine.template_info() if hasattr(engine, "template_info") else None
    finally:
        engine.close()
    scores = score_records(records, rows, protocols=protocols, data_dir=data_dir)
    results = build_results(
        scores, rows, model_info=info, fmt=fmt, decoding=settings.as_dict(), batch_size=batch_size, limit=limit,
        icl=icl, dataset_id=dataset_id, usage=usage_totals(records, price_per_mtok=price, wall_seconds=wall),
        subset=len(rows) < len(level_rows),
    )
    if template is not None:  # the chat template used and each adaptation it needed
        results["chat_template"] = template
    write_outputs(results, scores.get("details", []), rows, output_dir, dataset_id=dataset_id,
                  leaderboard_protocol=leaderboard_protocol, dataset_revision=dataset_revision)
    return results


def score_file(
    predictions: str | os.PathLike[str],
    *,
    data_dir: str | os.PathLike[str] | None = None,
    output_dir: str | os.PathLike[str] | None = None,
    protocols: Sequence[str] = PROTOCOLS,
    model: str | None = None,
    dataset_id: str | None = None,
    leaderboard_protocol: str = "paper",
) -> dict[str, Any]:
    """Score an existing predictions file against the rows of the levels its ids name.

    Only rows with a prediction are scored (so a ``--limit`` run scores its subset, marked ``subset``);
    outputs go to ``output_dir`` (default: the predictions file's folder). When the file sits in an
    ``apibank evaluate`` folder, that run's ``results.json`` supplies the metadata (backend, dtype, batch
    size, limit, decoding, ...), which is kept; scores, counts and usage are computed afresh.
    """
    predictions = Path(predictions)
    records = read_predictions(predictions)
    if not records:
        raise ValueError(f"{predictions}: no predictions")
    if output_dir is not None:
        _refuse_other_predictions(Path(output_dir), predictions, records)
    levels = sorted({level_of(record["id"]) for record in records})
    wanted = {record["id"] for record in records}
    level_rows = load_rows(levels, data_dir)
    rows = [row for row in level_rows if row["id"] in wanted]
    scores = score_records(records, rows, protocols=protocols, data_dir=data_dir)
    first = records[0]
    run = _evaluate_run(predictions)
    info = dict(run.get("model") or {})
    info = {"model_id": info.pop("id", None), "model_revision": info.pop("revision", None), **info}
    if model or not info.get("model_id"):
        info["model_id"] = model or first.get("model")
    info.setdefault("backend", None)
    previous_usage = run.get("usage") or {}
    price = previous_usage.get("price_per_mtok")
    results = build_results(
        scores, rows, model_info=info, fmt=run.get("format", first.get("format")),
        decoding=run.get("decoding", first.get("decoding")), batch_size=run.get("batch_size"),
        limit=run.get("limit"), icl=bool(run.get("icl", False)), dataset_id=dataset_id,
        usage=usage_totals(records, price_per_mtok=(price["prompt"], price["generated"]) if price else None,
                           wall_seconds=previous_usage.get("wall_seconds")),
        subset=bool(run.get("subset")) or len(rows) < len(level_rows),
    )
    if run.get("versions"):
        results["generated_with"] = run["versions"]
    output_dir = Path(output_dir) if output_dir is not None else predictions.parent
    if output_dir.resolve() != predictions.parent.resolve() or predictions.name != PREDICTIONS_FILE:
        output_dir.mkdir(parents=True, exist_ok=True)
        if not (output_dir / PREDICTIONS_FILE).exists():
            write_predictions(output_dir / PREDICTIONS_FILE, records)
    write_outputs(results, scores.get("details", []), rows, output_dir, dataset_id=dataset_id,
                  leaderboard_protocol=leaderboard_protocol)
    return results


def _refuse_other_predictions(output_dir: Path, predictions: Path, records: Sequence[Mapping[str, Any]]) -> None:
    """Refuse an output folder holding other predictions, whose results these would replace."""
    existing = output_dir / PREDICTIONS_FILE
    if not existing.is_file() or existing.resolve() == predictions.resolve():
        return
    theirs = read_predictions(existing)
    mine = {record["id"]: record["prediction"] for record in records}
    if {record["id"]: record["prediction"] for record in theirs} != mine:
        models = sorted({str(record.get("model")) for record in theirs})
        raise ValueError(
            f"{output_dir} holds other predictions ({existing}, model {', '.join(models)}); its results, "
            f"details and report belong to them: choose another --output"
        )


def _evaluate_run(predictions: Path) -> dict[str, Any]:
    """The ``results.json`` that ``apibank evaluate`` wrote next to ``predictions`` (empty if none, or if it
    describes another run: a different model or format)."""
    path = predictions.parent / RESULTS_FILE
    if predictions.name != PREDICTIONS_FILE or not path.is_file():
        return {}
    try:
        run = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(run, dict):
        return {}
    records = read_predictions(predictions)
    first = records[0] if records else {}
    if (run.get("model") or {}).get("id") != first.get("model") or run.get("format") != first.get("format"):
        return {}
    return run


def results_table(results: Mapping[str, Any]) -> str:
    model = results.get("model", {})
    title = (
        f"API-Bank: model={model.get('id')} format={results.get('format')} backend={model.get('backend')}"
        + (f" (subset: --limit {results['limit']})" if results.get("limit") else
           " (subset)" if results.get("subset") else "")
    )
    table = format_table(results["scores"], results.get("levels") or LEVELS, title=title)
    line = usage_line(results.get("usage") or {})
    return f"{table}\n{line}" if line else table


def usage_line(usage: Mapping[str, Any]) -> str:
    """One line of usage totals (empty when nothing was measured)."""
    if not usage or usage.get("seconds") is None:
        return ""
    parts = [f"{usage.get('samples')} samples in {usage['seconds']:.1f} s"]
    if usage.get("samples_per_second") is not None:
        parts.append(f"{usage['samples_per_second']:.3f} samples/s")
    if usage.get("prompt_tokens") is not None:
        parts.append(f"{usage['prompt_tokens']} prompt tokens")
    if usage.get("generated_tokens") is not None:
        parts.append(f"{usage['generated_tokens']} generated tokens")
    if usage.get("generated_tokens_per_second") is not None:
        parts.append(f"{usage['generated_tokens_per_second']:.1f} generated tokens/s")
    if usage.get("cost") is not None:
        parts.append(f"cost {usage['cost']:.6g}")
    return "usage: " + ", ".join(parts)
