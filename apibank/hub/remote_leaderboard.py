"""A Hub dataset's leaderboard as reference rows for ``apibank leaderboard --from-hub DATASET_ID``.

The ranking comes from ``huggingface_hub``'s own client, ``HfApi.get_dataset_leaderboard`` (``GET
/api/datasets/<id>/leaderboard``, a list of ``DatasetLeaderboardEntry``: rank, model id, value, the
result file's name, verified, source). Each entry's result file (``.eval_results/<variant>.yaml`` in the
model repository) is downloaded and parsed with ``parse_eval_result_entries``; every entry of it for
this dataset becomes a cell of a reference row at its task's level and protocol (classic: the protocol
of the file's variant, :func:`apibank.hub.leaderboard.variant_file`; agentic: the task's setting).

What can be recomputed here: the result files hold the headline value only, so no interval and no
paired test; a result whose ``source`` names its per-sample details (``apibank score --push-to-hub``
publishes them, :mod:`apibank.hub.details`) can be rescored after downloading those, which the row says.
Nothing is dropped: an entry whose file cannot be read or names no API-Bank task still gets a row,
saying why it shows no figure.
"""

from __future__ import annotations

from typing import Any

from apibank.benchmark import FORMATS, PROTOCOLS, SETTINGS
from apibank.errors import UserError
from apibank.hub.agentic import agentic_variant_file
from apibank.hub.ids import check_repo_id
from apibank.hub.leaderboard import variant_file
from apibank.hub.tasks import AGENTIC_TASKS, TASKS

STATUS = "Hub leaderboard, not run here"
VALUE_ONLY = "value only: no interval or paired test (the result file holds no per-sample verdicts)"
CELL_KEYS = {"api": "api", "dialogues": "dialogue", "response": "response", "episodes": "pass_k"}


def _variants() -> dict[str, tuple[str, str]]:
    """Result file name -> (kind, protocol or setting)."""
    names = {variant_file(protocol, fmt): ("classic", protocol)
             for protocol in PROTOCOLS for fmt in [*FORMATS, *(f"{f}-icl" for f in FORMATS)]}
    names.update({agentic_variant_file(setting): ("agentic", setting) for setting in SETTINGS})
    return names


def _cell(task_kind: str, value: float) -> dict[str, Any]:
    """A Hub value in the leaderboard's units: accuracies are published in percent, ROUGE-L in 0-1."""
    return {"value": float(value) / 100 if task_kind != "response" else float(value), "ci95": None,
            "ci95_reason": "Hub value: no interval"}


def _read_file(api: Any, model_id: str, filename: str) -> list[Any]:
    import yaml
    from huggingface_hub import hf_hub_download, parse_eval_result_entries

    path = hf_hub_download(model_id, filename, endpoint=api.endpoint, token=api.token)
    with open(path, encoding="utf-8") as handle:
        data = yaml.safe_load(handle)
    if not isinstance(data, list):
        raise ValueError(f"{filename} is not a list of results")
    return parse_eval_result_entries(data)


def hub_references(dataset_id: str, api: Any = None) -> list[dict[str, Any]]:
    """Reference rows for every entry of ``dataset_id``'s Hub leaderboard, in the Hub's rank order."""
    from huggingface_hub import HfApi

    check_repo_id(dataset_id, "--from-hub")
    api = api or HfApi()
    variants = _variants()
    rows: list[dict[str, Any]] = []
    try:
        entries = api.get_dataset_leaderboard(dataset_id)
    except Exception as error:  # no such dataset, no leaderboard, no network: the user's to fix, said in one line
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise UserError(f"--from-hub {dataset_id}: the Hub gave no leaderboard ({first}); check the dataset id, "
                        "the network and your token") from None
    for entry in entries:
        source = (entry.source or {}).get("url")
        base = {"model": entry.model_id, "status": STATUS,
                "source": f"{dataset_id} leaderboard, rank {entry.rank}" + (", verified" if entry.verified else ""),
                "hub": {"rank": entry.rank, "value": entry.value, "filename": entry.filename, "verified": entry.verified}}
        kind, protocol = variants.get(entry.filename, (None, None))
        try:
            results = _read_file(api, entry.model_id, entry.filename)
        except Exception as error:  # a file that cannot be read still gets its row, saying why
            rows.append({**base, "kind": "classic", "protocol": protocol or "unknown", "level": "unknown",
                         "cells": {}, "recompute": f"result file {entry.filename} unreadable: {error}"})
            continue
        by_place: dict[tuple[str, str, str], dict[str, Any]] = {}
        for result in results:
            if result.dataset_id != dataset_id:
                continue
            task = TASKS.get(result.task_id) or AGENTIC_TASKS.get(result.task_id)
            if task is None or kind is None:
                reason = f"task {result.task_id!r}" if task is None else f"file name {entry.filename!r}"
                place = ("classic", protocol or "unknown", "unknown")
                by_place.setdefault(place, {**base, "kind": place[0], "protocol": place[1], "level": place[2],
                                                  "cells": {}, "recompute": f"not an API-Bank result ({reason})"})
                continue
            place = (kind, task.setting or protocol, task.config)
            row = by_place.setdefault(place, {**base, "kind": kind, "protocol": place[1], "level": place[2],
                                              "cells": {}, "recompute": None})
            row["cells"][CELL_KEYS[task.kind]] = _cell(task.kind, result.value)
            details = result.source_url or source
            if row["recompute"] is None:
                row["recompute"] = (f"rescorable: per-sample details at {details}" if details else VALUE_ONLY)
        if not by_place:
            by_place[("classic", protocol or "unknown", "unknown")] = {
                **base, "kind": "classic", "protocol": protocol or "unknown", "level": "unknown", "cells": {},
                "recompute": f"{entry.filename} holds no result for {dataset_id}"}
        rows.extend(by_place.values())
    return rows
