"""The trainer-format configs of the exported dataset repository, as Arrow datasets.

``training-chat`` rows: ``id``, ``level``, ``kind``, ``messages`` (each message a JSON object, so a
message keeps exactly its own keys: ``tool_calls`` only on calls, ``tool_call_id``/``name`` only
on tool results) and ``tools`` (JSON schemas). ``training-prompt-completion`` rows: ``id``,
``level``, ``kind``, ``prompt``, ``completion``. Both are ``train`` splits of the same converted
samples; the samples that cannot be converted are written to :data:`UNCONVERTED_FILE` with their
cause and named in the card.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from apibank.files import atomic_write_text
from apibank.train.formats import TRAINER_CONFIGS, Conversion, convert_training

TRAINER_SPLIT = "train"
UNCONVERTED_FILE = "training-unconverted.json"


def _features(fmt: str) -> Any:
    import datasets

    common = {"id": datasets.Value("string"), "level": datasets.Value("int32"), "kind": datasets.Value("string")}
    if fmt == "chat":
        return datasets.Features({**common, "messages": datasets.List(datasets.Json()),
                                  "tools": datasets.List(datasets.Json())})
    return datasets.Features({**common, "prompt": datasets.Value("string"), "completion": datasets.Value("string")})


def _arrow_example(example: dict[str, Any]) -> dict[str, Any]:
    # Json() columns take JSON text: given objects, datasets would round floats (pandas' ujson).
    out = dict(example)
    for column in ("messages", "tools"):
        if column in out:
            out[column] = [json.dumps(item, ensure_ascii=False) for item in out[column]]
    return out


@dataclass
class TrainerExport:
    datasets: dict[str, Any]  # config name -> datasets.Dataset
    conversion: Conversion

    def note(self) -> str:
        return (
            f"Trainer-format configs ({', '.join(f'`{name}`' for name in self.datasets)}): "
            f"{self.conversion.summary()}; every sample left out is listed with its cause in "
            f"`{UNCONVERTED_FILE}`."
        )


def trainer_datasets(
    data_dir: str | os.PathLike[str] | None, levels: Iterable[int] | None, wanted: Iterable[str] | None = None
) -> TrainerExport:
    """The trainer-format configs (all, or those in ``wanted``) of the chosen training levels."""
    import datasets

    names = [name for name in TRAINER_CONFIGS if wanted is None or name in set(wanted)]
    conversion = convert_training(data_dir, levels) if names else Conversion()
    built = {
        name: datasets.Dataset.from_list(
            [_arrow_example(example) for example in conversion.examples[TRAINER_CONFIGS[name]]],
            features=_features(TRAINER_CONFIGS[name]),
            split=datasets.Split.TRAIN,
        )
        for name in names
    }
    return TrainerExport(built, conversion)


def write_unconverted(out: Path, conversion: Conversion) -> Path:
    path = out / UNCONVERTED_FILE
    listing = {
        "samples": conversion.seen,
        "converted": len(conversion.examples["chat"]),
        "not_converted_by_cause": conversion.by_cause(),
        "not_converted": [failure.as_dict() for failure in conversion.failures],
    }
    atomic_write_text(path, json.dumps(listing, ensure_ascii=False, indent=1) + "\n")
    return path
