"""A harness's logged samples as this package's predictions records (``apibank import-harness``).

Two harnesses: lm-evaluation-harness (:func:`lm_eval_predictions`) and lighteval
(:func:`lighteval_predictions`); :func:`harness_predictions` tells them apart by their files.

An lm-evaluation-harness ``--output_path`` folder written with ``--log_samples`` holds, per model, a
``results_<time>.json`` (the run's configuration, lm-eval's version) and a ``samples_<task>_<time>.jsonl``
per task (each document, its context and generation settings, the generation after lm-eval's stop
cut). Each sample of an API-Bank task becomes one predictions record: the row id, the generation cut by
the package's stop rule as ``prediction`` (as ``apibank evaluate`` cuts its completions) and the
generation itself as ``raw_output``. Scoring the records (``apibank score``'s pipeline) then gives the
same verdicts as ``apibank score`` on those generations, because it is ``apibank score``.

A lighteval ``--output-dir`` folder written with ``--save-details`` holds
``details/<model>/<time>/details_<task>|<shots>_<time>.parquet``: each row a document (``doc``, whose
``specific`` carries the row id and reference that :mod:`apibank.evals.lighteval` put there), the
model's response (``model_response.text``) and the sample's metrics.

Needs no harness installed: the files are read as JSON and Parquet. Anything that is not an API-Bank run of a
supported lm-eval is a :class:`apibank.errors.InputFileError` saying what was found.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Mapping

from apibank.errors import InputFileError
from apibank.evals.lm_eval import SUPPORTED, TASK_NAMES
from apibank.evals.samples import prediction_text, sent_as_plain_text

LIGHTEVAL_DETAILS_FILE = re.compile(r"^details_(?P<task>[^|]+)\|(?P<shots>\d+)_(?P<time>.+)\.parquet$")
SAMPLES_FILE = re.compile(r"^samples_(?P<task>.+)_(?P<time>\d{4}-\d{2}-\d{2}T[\d.:-]+)\.jsonl$")
RESULTS_FILE = re.compile(r"^results_(?P<time>\d{4}-\d{2}-\d{2}T[\d.:-]+)\.json$")
HARNESS = "lm-eval"


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise InputFileError(f"{path}: not a JSON file ({type(error).__name__})") from None


def _check_version(results: Mapping[str, Any], path: Path) -> str:
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    found = results.get("lm_eval_version")
    try:
        supported = isinstance(found, str) and Version(found) in SpecifierSet(",".join(SUPPORTED), prereleases=True)
    except InvalidVersion:
        supported = False
    if not supported:
        raise InputFileError(f"{path}: written by lm-eval {found or '(version not recorded)'}; "
                             f"import-harness reads lm-eval {','.join(SUPPORTED)} outputs")
    return str(found)


def _one_run(path: Path, glob: str, name: re.Pattern[str], missing: str, several: str) -> tuple[Path, list[Path]]:
    """The one folder under ``path`` holding a harness run's files (``glob`` matched by ``name``), and those
    files; ``missing`` and ``several`` say what to do when there are none, or several runs' worth."""
    if not path.is_dir():
        raise InputFileError(f"{path}: not a folder; {missing}")
    files = sorted(p for p in path.rglob(glob) if name.match(p.name))
    folders = sorted({p.parent for p in files})
    if not folders:
        raise InputFileError(f"{path}: {missing}")
    if len(folders) > 1:
        raise InputFileError(f"{path}: {several} of {len(folders)} runs ({', '.join(str(f) for f in folders[:3])}); "
                             "give one run's folder")
    return folders[0], files


def _run_folder(path: Path) -> tuple[Path, list[Path]]:
    """The one folder of ``path`` that holds the samples files (lm-eval writes them one folder down,
    per model), and those files."""
    return _one_run(path, "samples_*.jsonl", SAMPLES_FILE,
                    "no lm-eval samples_<task>_<time>.jsonl files; run lm_eval with --log_samples --output_path "
                    "and give that folder", "samples")


def _sample_record(sample: Mapping[str, Any], task: str, model: str, versions: str, path: Path,
                   line: int) -> dict[str, Any]:
    doc = sample.get("doc")
    if not isinstance(doc, dict) or not isinstance(doc.get("id"), str) or "reference" not in doc:
        raise InputFileError(f"{path}:{line}: a sample without an API-Bank document (id, reference); "
                             "was it written by the apibank tasks?")
    responses = sample.get("resps") or [[None]]
    raw = responses[0][0] if isinstance(responses[0], list) and responses[0] else None
    if not isinstance(raw, str):
        raise InputFileError(f"{path}:{line}: sample {doc['id']!r} has no generated text in `resps`")
    arguments = sample.get("arguments") or {}
    first = arguments.get("gen_args_0", {}) if isinstance(arguments, dict) else {}
    generation = first.get("arg_1") if isinstance(first.get("arg_1"), dict) else {}
    prompt = first.get("arg_0")
    return {
        "id": doc["id"],
        "prediction": prediction_text(raw),
        "raw_output": raw,
        "prompt": prompt if isinstance(prompt, str) else json.dumps(prompt, ensure_ascii=False),
        "format": "paper",
        "decoding": {"do_sample": bool(generation.get("do_sample", False)),
                     "max_new_tokens": generation.get("max_gen_toks"), "stop": generation.get("until")},
        "model": model,
        "engine": {"backend": f"{HARNESS}:{task}", "harness": versions},
        "level": doc.get("level"),
        "kind": doc.get("kind"),
    }


def lm_eval_predictions(path: str | Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The predictions records of an lm-eval run of the API-Bank tasks, and what the run records
    (``model``, ``harness`` version, ``tasks``, ``chat_template``)."""
    folder, samples = _run_folder(Path(path))
    results_files = sorted(p for p in folder.glob("results_*.json") if RESULTS_FILE.match(p.name))
    if not results_files:
        raise InputFileError(f"{folder}: samples without a results_<time>.json; give the whole --output_path folder")
    results = _json(results_files[-1])
    if not isinstance(results, dict):
        raise InputFileError(f"{results_files[-1]}: not an lm-eval results file")
    version = _check_version(results, results_files[-1])
    by_task: dict[str, Path] = {}
    for sample_path in samples:  # sorted by time within a task: the newest file of each task wins
        by_task[SAMPLES_FILE.match(sample_path.name)["task"]] = sample_path
    others = sorted(task for task in by_task if task not in TASK_NAMES)
    if others:
        raise InputFileError(f"{folder}: samples of {', '.join(others)}, not API-Bank tasks "
                             f"({', '.join(TASK_NAMES)}); give the folder of an apibank run")
    model = str(results.get("model_name") or results.get("model_name_sanitized") or folder.name)
    versions = f"lm-eval {version}"
    records: list[dict[str, Any]] = []
    seen: set[str] = set()
    for task, sample_path in sorted(by_task.items()):
        text = sample_path.read_text(encoding="utf-8")
        for number, line in enumerate(text.split("\n"), 1):
            if not line.strip():
                continue
            try:
                sample = json.loads(line)
            except (json.JSONDecodeError, RecursionError):
                raise InputFileError(f"{sample_path}:{number}: not a JSON line") from None
            if not isinstance(sample, dict):
                raise InputFileError(f"{sample_path}:{number}: not a JSON object")
            record = _sample_record(sample, task, model, versions, sample_path, number)
            if record["id"] in seen:  # repeats of a document (--repeats): the first is the prediction
                continue
            seen.add(record["id"])
            records.append(record)
    info = {"model": model, "harness": versions, "tasks": sorted(by_task),
            "chat_template": bool(results.get("chat_template")), "source": str(folder)}
    return records, info


def lighteval_predictions(path: str | Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The predictions records of a lighteval run of the API-Bank custom tasks (``--save-details``)."""
    import pyarrow.parquet as pq

    path = Path(path)
    folder, details = _one_run(path, "details_*.parquet", LIGHTEVAL_DETAILS_FILE,
                          "no lighteval details_<task>|<shots>_<time>.parquet files; run lighteval with "
                          "--save-details --output-dir and give that folder", "details")
    tasks = {LIGHTEVAL_DETAILS_FILE.match(p.name)["task"]: p for p in details}
    others = sorted(task for task in tasks if task not in TASK_NAMES)
    if others:
        raise InputFileError(f"{folder}: details of {', '.join(others)}, not API-Bank tasks "
                             f"({', '.join(TASK_NAMES)}); give the folder of an apibank run")
    model = folder.parent.name
    records: list[dict[str, Any]] = []
    seen: set[str] = set()
    for task, detail_path in sorted(tasks.items()):
        try:
            table = pq.read_table(detail_path).to_pylist()
        except Exception as error:  # pyarrow raises several types for a file that is not Parquet
            raise InputFileError(f"{detail_path}: not a Parquet file ({type(error).__name__})") from None
        for number, row in enumerate(table, 1):
            doc, response = row.get("doc") or {}, row.get("model_response") or {}
            specific = doc.get("specific") or {}
            if not isinstance(specific.get("id"), str) or "reference" not in specific:
                raise InputFileError(f"{detail_path}: row {number} has no API-Bank document (doc.specific id and "
                                     "reference); was it written by apibank.evals.lighteval?")
            texts = response.get("text") or []
            if not texts or not isinstance(texts[0], str):
                raise InputFileError(f"{detail_path}: row {number} ({specific['id']!r}) has no generated text")
            plain = sent_as_plain_text(response.get("input"), doc.get("query") or "")
            if specific["id"] in seen:
                continue
            seen.add(specific["id"])
            records.append({
                "id": specific["id"], "prediction": prediction_text(texts[0], plain_text=plain), "raw_output": texts[0],
                "prompt": response.get("input") if isinstance(response.get("input"), str) else doc.get("query"),
                "format": "paper", "model": model,
                "decoding": {"do_sample": False, "max_new_tokens": doc.get("generation_size"),
                             "stop": doc.get("stop_sequences")},
                "engine": {"backend": f"lighteval:{task}", "harness": "lighteval"},
                "level": specific.get("level"), "kind": specific.get("kind"),
            })
    info = {"model": model, "harness": "lighteval", "tasks": sorted(tasks), "source": str(folder)}
    return records, info


def harness_predictions(path: str | Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The predictions records of an lm-eval or lighteval output folder, told apart by their files."""
    path = Path(path)
    if not path.is_dir():
        raise InputFileError(f"{path}: not a folder; give lm-eval's --output_path folder (written with --log_samples) "
                             "or lighteval's --output-dir (written with --save-details)")
    if any(LIGHTEVAL_DETAILS_FILE.match(p.name) for p in path.rglob("details_*.parquet")):
        return lighteval_predictions(path)
    return lm_eval_predictions(path)
