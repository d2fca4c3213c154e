"""Classic runs, from a model to scores, files and a report: ``apibank evaluate`` and ``apibank score``.

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

import json
import os
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from apibank.data.audits import check_rows, load_audit, subset_rows
from apibank.errors import InputFileError, OutputError
from apibank.files import (
    DETAILS_FILE,
    LEADERBOARD_DIR,
    PREDICTIONS_FILE,
    PROMPTS_FILE,
    RESULTS_FILE,
    atomic_writer,
    json_line,
    json_safe,
    write_json,
)
from apibank.generate.backends import Backend, make_backend
from apibank.generate.predictions import read_predictions, write_predictions
from apibank.generate.runner import generate_predictions, sized_settings, thinking_of, thinking_plan
from apibank.generate.toolcalls.markup import holds_call_markup
from apibank.benchmark import DEFAULT_PROTOCOL, MODEL_FORMAT, PROTOCOLS
from apibank.pipeline.results import build_results, parse_price, record_unread_calls, recorded, usage_totals
from apibank.pipeline.rows import level_of, limit_rows, load_rows


def score_records(
    records: Sequence[Mapping[str, Any]],
    rows: Sequence[Mapping[str, Any]],
    *,
    protocols: Sequence[str] = PROTOCOLS,
    data_dir: str | os.PathLike[str] | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Join predictions to rows on ``id`` and run the metric (rows without a prediction score as empty);
    ``progress`` shows a bar of the judging steps on stderr."""
    from apibank.judge.scoring import score

    by_id = {record["id"]: record["prediction"] for record in records}
    unknown = set(by_id) - {row["id"] for row in rows}
    if unknown:
        raise InputFileError(f"{len(unknown)} predictions have ids that are not dataset rows, e.g. {sorted(unknown)[:3]}")
    predictions = [by_id.get(row["id"], "") for row in rows]
    references = [row["reference"] for row in rows]
    from tqdm.auto import tqdm

    with tqdm(desc="score", unit="step", disable=not progress, dynamic_ncols=True, mininterval=0.5, leave=False) as bar:
        def advance(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        return score(predictions, references, protocols=tuple(protocols), return_details=True, data_dir=data_dir,
                     progress=advance if progress else None)


def write_outputs(
    results: dict[str, Any],
    details: Sequence[Mapping[str, Any]],
    rows: Sequence[Mapping[str, Any]],
    output_dir: Path,
    *,
    dataset_id: str | None,
    leaderboard_protocol: str = DEFAULT_PROTOCOL,
    dataset_revision: str | None = None,
    source: Any = None,
) -> dict[str, Path]:
    from apibank.hub.leaderboard import write_leaderboard_files
    from apibank.report.html import write_report_html
    from apibank.report.markdown import write_report

    output_dir.mkdir(parents=True, exist_ok=True)
    write_json(output_dir / RESULTS_FILE, results)
    with atomic_writer(output_dir / DETAILS_FILE) as handle:
        for entry in details:
            handle.write(json_line(json_safe(entry)) + "\n")
    paths = {
        "results": output_dir / RESULTS_FILE,
        "details": output_dir / DETAILS_FILE,
        "report": write_report(results, rows, output_dir, protocol=leaderboard_protocol),
        "report_html": write_report_html(output_dir, rows),
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
    fmt: str = MODEL_FORMAT,
    backend: str | Backend = "transformers",
    backend_choice: str | None = None,
    limit: int | None = None,
    kinds: Sequence[str] | None = None,
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
    leaderboard_protocol: str = DEFAULT_PROTOCOL,
    overwrite: bool = False,
    progress: bool = True,
    rows: Sequence[Mapping[str, Any]] | None = None,
    thinking_budget: int | None = None,
    subset: str | None = None,
) -> dict[str, Any]:
    """Generate predictions for ``model`` (a Hub id, a local folder or ``.gguf`` file, an endpoint model name
    or ``oracle``), score them and write every output file; returns the results dictionary.

    ``max_new_tokens`` caps every answer; below it, each level's API calls and responses get a budget
    sized from that level's gold answers (all rows of the level, so a ``limit`` subset decodes as the
    full run does). ``kinds`` (``"api"``, ``"response"``) keeps only those rows: a subset, like ``limit``.
    ``price_per_mtok`` (``"IN,OUT"``) adds a cost to the usage totals. ``backend_choice`` (why
    ``--backend auto`` chose ``backend``) is recorded with the model. A model whose chat template makes it
    think first gets ``thinking_budget`` more tokens per answer (None: :func:`~apibank.generate.runner.sized_settings`'s
    default); the budget and why are recorded under ``thinking``. ``subset`` (``"verified"``) runs only the
    rows of that status in the row audit (:mod:`apibank.data.audits`), before ``limit``: a subset, labelled
    as one everywhere; every run reports its verified rows' scores beside the full ones."""
    import time

    price = parse_price(price_per_mtok) if isinstance(price_per_mtok, str) else price_per_mtok
    output_dir = Path(output_dir)
    audit = load_audit(data_dir)
    level_rows = list(rows) if rows is not None else load_rows(levels, data_dir)
    check_rows(audit, level_rows)
    rows = limit_rows(subset_rows(audit, level_rows, subset) if subset else level_rows, limit, kinds)
    predictions_path = output_dir / PREDICTIONS_FILE
    engine = backend if isinstance(backend, Backend) else make_backend(model, backend, **dict(backend_options or {}))
    output_dir.mkdir(parents=True, exist_ok=True)  # only once the model loaded: no empty folder after a failure
    if overwrite and predictions_path.exists():
        predictions_path.unlink()
    try:
        if fmt == "tools" and hasattr(engine, "check_calls_read"):  # else every API row might silently score 0
            engine.check_calls_read()
        settings = sized_settings(engine, level_rows, fmt, max_new_tokens=max_new_tokens, stop=stop,
                                  thinking_budget=thinking_budget)
        thinking = thinking_plan(thinking_of(engine, fmt), thinking_budget)
        # the predictions a resume keeps (a torn last line is dropped): their time is reported apart
        kept = {record["id"] for record in read_predictions(predictions_path, allow_torn_tail=True)}
        started = time.perf_counter()
        records = generate_predictions(
            rows, engine, fmt=fmt, settings=settings, batch_size=batch_size, output_path=predictions_path,
            icl=icl, progress=progress,
        )
        wall = time.perf_counter() - started
        info = engine.info()
        if backend_choice:
            info["backend_choice"] = backend_choice
        template = engine.template_info() if hasattr(engine, "template_info") else None
    finally:
        engine.close()
    scores = score_records(records, rows, protocols=protocols, data_dir=data_dir, progress=progress)
    results = build_results(
        scores, rows, model_info=info, fmt=fmt, decoding=settings.as_dict(), batch_size=batch_size, limit=limit,
        kinds=kinds, icl=icl, dataset_id=dataset_id, subset=len(rows) < len(level_rows), audit=audit,
        audit_subset=subset,
        usage=usage_totals([record for record in records if record["id"] not in kept],
                           earlier=[record for record in records if record["id"] in kept], price_per_mtok=price,
                           wall_seconds=wall, compile_seconds=info.get("compile_seconds")),
    )
    if template is not None:  # the chat template used and each adaptation it needed
        results["chat_template"] = template
    if fmt == "tools":
        record_unread_calls(results, unread_calls(records, rows))
    results["thinking"] = thinking
    write_outputs(results, scores.get("details", []), rows, output_dir, dataset_id=dataset_id,
                  leaderboard_protocol=leaderboard_protocol, dataset_revision=dataset_revision)
    return results


def unread_calls(records: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]]) -> int:
    """How many tools-format outputs hold call-like markup (:mod:`apibank.generate.toolcalls.markup`) but
    gave no native call: a reader that does not know the model's format."""
    tools = {row["id"]: row.get("tools") for row in rows}
    return sum(1 for record in records if "tool_call" not in record
               and holds_call_markup(str(record.get("raw_output") or ""), tools.get(record["id"])))


def write_prompts(
    model: str,
    *,
    levels: Iterable[str | int] | None = None,
    fmt: str = MODEL_FORMAT,
    backend: str = "transformers",
    limit: int | None = None,
    kinds: Sequence[str] | None = None,
    output_dir: str | os.PathLike[str] = "apibank-results",
    data_dir: str | os.PathLike[str] | None = None,
    icl: bool = False,
    backend_options: Mapping[str, Any] | None = None,
    subset: str | None = None,
    renderer: Any = None,
) -> dict[str, Any]:
    """``apibank evaluate --prompts-only``: every row's prompt, as the backend would send it, written to
    ``output_dir/prompts.jsonl`` without generating (and, where the backend renders with a tokenizer,
    without loading the model's weights). One object per row: ``id``, ``prompt`` (the exact text, or for
    an endpoint the messages and tools of the request), ``messages`` (the conversation before rendering),
    ``tools``, ``adaptations`` (the names of the rewrites its template needed). A row that the template
    refuses or renders with a piece missing raises :class:`~apibank.generate.templates.TemplateRefusal`.
    In the tools format, the calls the template writes are read back with the run's reader first
    (:class:`~apibank.generate.templates.readback.CallsUnread` if they do not come back). ``renderer``: one
    already made (the CLI's, from its checks). Returns a summary: the file, the row count, the template's
    adaptations and thinking."""
    from apibank.generate.backends import BACKEND_REGISTRY
    from apibank.generate.conversation import build_conversation

    rows = load_rows(levels, data_dir)
    if subset:
        rows = subset_rows(load_audit(data_dir), rows, subset)
    rows = limit_rows(rows, limit, kinds)
    if renderer is None:
        renderer = BACKEND_REGISTRY.get(backend).prompt_renderer(model, **dict(backend_options or {}))
    if fmt == "tools" and hasattr(renderer, "check_calls_read"):
        renderer.check_calls_read()
    path = Path(output_dir) / PROMPTS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_writer(path) as handle:
        for row in rows:
            conversation = build_conversation(row, fmt, icl=icl)
            prompt: Any = renderer.render(conversation)
            if getattr(renderer, "renders_requests", False):  # an endpoint's request: its messages and tools
                prompt = json.loads(prompt)
            record = {"id": row["id"], "prompt": prompt, "messages": conversation.messages,
                      "tools": conversation.tools, "adaptations": list(getattr(renderer, "last_adaptations", ()))}
            handle.write(json_line(json_safe(record)) + "\n")
    template = renderer.template_info() if hasattr(renderer, "template_info") else {}
    return {"path": str(path), "rows": len(rows), "format": fmt, **template, "thinking": thinking_of(renderer, fmt)}


def score_file(
    predictions: str | os.PathLike[str],
    *,
    data_dir: str | os.PathLike[str] | None = None,
    output_dir: str | os.PathLike[str] | None = None,
    protocols: Sequence[str] = PROTOCOLS,
    model: str | None = None,
    dataset_id: str | None = None,
    leaderboard_protocol: str = DEFAULT_PROTOCOL,
    progress: bool = False,
    subset: str | None = None,
) -> dict[str, Any]:
    """Score an existing predictions file against the rows of the levels its ids name.

    Only rows with a prediction are scored (so a ``--limit`` run scores its subset, marked ``subset``);
    outputs go to ``output_dir`` (default: the predictions file's folder). When the file sits in an
    ``apibank evaluate`` folder, that run's ``results.json`` supplies the metadata (backend, dtype, batch
    size, limit, decoding, ...), which is kept; scores, counts and usage are computed afresh. ``subset``
    (``"verified"``) scores only the predictions of that status's rows in the row audit, as a subset; every
    scoring reports its verified rows' scores beside the full ones (:mod:`apibank.report.verified`).
    """
    predictions = Path(predictions)
    records = read_predictions(predictions)
    if not records:
        raise InputFileError(f"{predictions}: no predictions")
    if output_dir is not None:
        _refuse_other_predictions(Path(output_dir), predictions, records)
    audit = load_audit(data_dir)
    levels = sorted({level_of(record["id"]) for record in records})
    wanted = {record["id"] for record in records}
    level_rows = load_rows(levels, data_dir)
    check_rows(audit, level_rows)
    rows = [row for row in level_rows if row["id"] in wanted]
    run = _evaluate_run(predictions)
    subset = subset or run.get("audit_subset")
    if subset:
        rows = subset_rows(audit, rows, subset)
        kept, known = {row["id"] for row in rows}, {row["id"] for row in level_rows}
        # ids that name no row stay, so that they are refused as in a full scoring
        records = [record for record in records if record["id"] in kept or record["id"] not in known]
        if not records:
            raise InputFileError(f"{predictions}: no prediction of a {subset} row (--subset {subset})")
    scores = score_records(records, rows, protocols=protocols, data_dir=data_dir, progress=progress)
    first = records[0]
    info = dict(run.get("model") or {})
    info = {"model_id": info.pop("id", None), "model_revision": info.pop("revision", None), **info}
    if model or not info.get("model_id"):
        info["model_id"] = model or first.get("model")
    info.setdefault("backend", None)
    previous_usage = run.get("usage") or {}
    price = previous_usage.get("price_per_mtok")
    results = build_results(
        scores, rows, model_info=info, fmt=run.get("format", recorded(records, "format")),
        decoding=run.get("decoding", first.get("decoding")), batch_size=run.get("batch_size"),
        limit=run.get("limit"), kinds=run.get("kinds"), icl=run.get("icl"), dataset_id=dataset_id,
        usage=usage_totals(records, price_per_mtok=(price["prompt"], price["generated"]) if price else None,
                           wall_seconds=previous_usage.get("wall_seconds")),
        subset=bool(run.get("subset")) or len(rows) < len(level_rows), audit=audit, audit_subset=subset,
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
        raise OutputError(
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
