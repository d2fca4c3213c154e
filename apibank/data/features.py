"""The Hugging Face side of the API-Bank rows: config table, Arrow features, verified file access.

``apibank_dataset.py`` (the ``GeneratorBasedBuilder``) and ``apibank export-dataset`` (the
script-free repository) both read their configs from :data:`CONFIGS`, one table, and their rows
from :mod:`apibank.data.rows`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import datasets

from apibank.data.configs import missing_files_message, missing_local_files, required_files
from apibank.data.upstream import (
    BASE_URL_ENV,
    UpstreamDataError,
    manifest,
    resolve_data_dir,
    verify,
)

# A dialogue turn. An API turn's call arguments and recorded result are JSON values (datasets'
# ``Json()`` feature, made for tool-calling data); other turns have none (null).
_TURN = {
    "role": datasets.Value("string"),
    "text": datasets.Value("string"),
    "api_name": datasets.Value("string"),
    "arguments": datasets.Json(),
    "result": datasets.Json(),
}
STRUCTURED_TURN_FIELDS = ("arguments", "result")

TEST_FEATURES = datasets.Features(
    {
        "id": datasets.Value("string"),
        "level": datasets.Value("int32"),
        "kind": datasets.Value("string"),
        "file": datasets.Value("string"),
        "sample_id": datasets.Value("int32"),
        "api_id": datasets.Value("int32"),
        "history": datasets.List(_TURN),
        "tools": datasets.List({"name": datasets.Value("string"), "description": datasets.Value("string")}),
        "target": _TURN,
        "instruction": datasets.Value("string"),
        "input": datasets.Value("string"),
        "expected_output": datasets.Value("string"),
        "instruction_icl": datasets.Value("string"),
        # The metric's reference, kept as the JSON text ``evaluate``'s metric takes.
        "reference": datasets.Value("string"),
        # The shipped row audit's status (apibank.data.audits): "verified" or why not.
        "audit_status": datasets.Value("string"),
    }
)

TRAINING_FEATURES = datasets.Features(
    {
        "id": datasets.Value("string"),
        "level": datasets.Value("int32"),
        "kind": datasets.Value("string"),
        "file": datasets.Value("string"),
        "index": datasets.Value("int32"),
        "instruction": datasets.Value("string"),
        "input": datasets.Value("string"),
        "expected_output": datasets.Value("string"),
    }
)

FEATURES = {"test-rows": TEST_FEATURES, "training-rows": TRAINING_FEATURES}


def json_text(value: Any) -> str | None:
    """A value for a ``Json()`` column, as exact JSON text.

    ``Json()`` keeps valid JSON text as it is but serialises Python objects with pandas' ujson,
    which rounds floats to 10 significant digits (a recorded Calculator result 77.33333333333333
    would come back as 77.3333333333); the standard library's text is exact."""
    if value is None:
        return None
    if isinstance(value, str):
        json.loads(value)  # already JSON text: must parse
        return value
    return json.dumps(value, ensure_ascii=False)


def _structured_turn(turn: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(turn)
    for name in STRUCTURED_TURN_FIELDS:
        value = turn.get(name)
        out[name] = None if value in ("", None) else json_text(value)
    return out


def arrow_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row of :func:`apibank.data.rows.iter_rows` as the Arrow features take it: the turns' call
    arguments and results as JSON values (read back as objects; null for turns without a call);
    everything else, the ``reference`` text included, unchanged. Training rows pass through."""
    if "history" not in row:
        return dict(row)
    out = dict(row)
    out["history"] = [_structured_turn(turn) for turn in row["history"]]
    out["target"] = _structured_turn(row["target"])
    return out


@dataclass(frozen=True)
class ConfigSpec:
    name: str
    split: str
    row_schema: str
    description: str


CONFIGS: tuple[ConfigSpec, ...] = (
    ConfigSpec(
        "level-1", "test", "test-rows",
        "Level 1 (Call): the tools are described in the prompt; 399 API-call and 375 response samples "
        "from 214 annotated dialogues.",
    ),
    ConfigSpec(
        "level-2", "test", "test-rows",
        "Level 2 (Retrieve+Call): only ToolSearcher is described for API calls; the model must find "
        "the tool first; 135 API-call and 103 response samples from 50 dialogues.",
    ),
    ConfigSpec(
        "level-3", "test", "test-rows",
        "Level 3 (Plan+Retrieve+Call): one requirement sentence, a sequence of teacher-forced calls; "
        "245 API steps and 50 responses from 50 dialogues.",
    ),
    ConfigSpec(
        "training", "train", "training-rows",
        "Training set: the level-1, level-2 and level-3 API and response training files "
        "(lv<n>-train.json is their concatenation and is not read again).",
    ),
)
CONFIGS_BY_NAME = {spec.name: spec for spec in CONFIGS}


# ---------------------------------------------------------------------------------------- files
Downloader = Callable[[dict[str, str]], dict[str, str]]


def resolve_files(
    config: str,
    *,
    data_dir: str | os.PathLike[str] | None,
    download: Downloader,
    levels: Iterable[int] | None = None,
) -> dict[str, Path]:
    """{upstream path: verified local file} for every file ``config`` needs.

    A local copy (``data_dir`` or ``$APIBANK_DATA_DIR``) is read in place and verified; a missing file
    there is an error naming every missing file and its address. Without a local copy the files are
    fetched with ``download`` (the builder's download manager) from the pinned commit, or from
    ``$APIBANK_UPSTREAM_URL``, and a download that fails verification is deleted from the cache.
    """
    paths = required_files(config, levels)
    local = resolve_data_dir(data_dir)
    if local is not None:
        missing = missing_local_files(paths, local)
        if missing:
            raise UpstreamDataError(missing_files_message(missing, str(local)))
        files = {path: local / path for path in paths}
        for path, file in files.items():
            verify(manifest().entry(path), file.read_bytes(), str(file))
        return files

    base_url = os.environ.get(BASE_URL_ENV)
    urls = {path: manifest().url(path, base_url) for path in paths}
    try:
        downloaded = download(urls)
    except OSError as error:  # includes ConnectionError, FileNotFoundError and HF offline mode
        raise UpstreamDataError(
            f"could not download the API-Bank files of {config!r}: {error}\n"
            "Pass data_dir= (a local copy of upstream api-bank/) or allow the download."
        ) from error
    for path, cached in downloaded.items():
        data = Path(cached).read_bytes()
        try:
            verify(manifest().entry(path), data, urls[path])
        except UpstreamDataError:
            forget_cached(Path(cached))
            raise
    return {path: Path(cached) for path, cached in downloaded.items()}


def forget_cached(cached: Path) -> None:
    """Remove a downloaded file and the metadata ``datasets`` keeps beside it."""
    for leftover in (cached, cached.with_name(cached.name + ".json"), cached.with_name(cached.name + ".lock")):
        leftover.unlink(missing_ok=True)


def mapping_of(files: Mapping[str, Path]) -> dict[str, str]:
    return {path: str(file) for path, file in files.items()}
