"""Write API-Bank as a script-free dataset repository (Parquet + README with ``configs:``).

datasets 4+ refuses loading scripts. The exported folder needs none:
``datasets.load_dataset(OUT, "level-1", split="test")`` reads it locally, and the same folder pushed
to the Hub gives ``load_dataset("<namespace>/apibank", "level-1")``.

Layout: ``<config>/<split>-00000-of-00001.parquet`` for every config of
:data:`apibank.data.features.CONFIGS` (call arguments and results as ``Json()`` values, the metric's
``reference`` as text); ``README.md`` = ``dataset_card.md`` whose YAML header gets the exported
``configs`` and ``dataset_info`` (features, row counts, sizes); ``eval.yaml``, which registers the
repository as a Hub benchmark (:func:`apibank.hub.tasks.write_eval_yaml`); and ``LICENSE``, the
upstream data's Apache-2.0 license (verified like every upstream file).

Trainer formats: ``training-chat`` and ``training-prompt-completion`` hold the same training levels
converted by :mod:`apibank.train` (``training-unconverted.json`` lists the samples left out).

Training levels: by default the training config holds every level whose files are available. A
local copy without the level-1/2 training files (the usual case: they are large) therefore exports
the level-3 training set only; the export says so on stderr and in the README. Ask for explicit
levels to make their absence an error instead.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from apibank.data.features import CONFIGS
from apibank.data.configs import (
    TRAINING_CONFIG,
    TRAINING_LEVELS,
    missing_files_message,
    missing_local_files,
    present_training_levels,
    training_files,
)
from apibank.data.upstream import UpstreamDataError, fetch, manifest, resolve_data_dir
from apibank.train.export import TRAINER_SPLIT, trainer_datasets, write_unconverted
from apibank.files import atomic_copy, atomic_path, atomic_write_text
from apibank.hub.tasks import EVAL_YAML_FILE, write_eval_yaml

PARQUET_NAME = "{split}-00000-of-00001.parquet"
LICENSE_FILE = "LICENSE"


@dataclass
class ExportReport:
    out: Path
    rows: dict[str, int] = field(default_factory=dict)
    training_levels: tuple[int, ...] = TRAINING_LEVELS
    notes: list[str] = field(default_factory=list)


def default_card_path() -> Path:
    """The dataset card: the repository's ``dataset_card.md``, which installs as package data too."""
    return Path(__file__).with_name("dataset_card.md")


def choose_training_levels(
    data_dir: str | os.PathLike[str] | None, requested: Iterable[int] | None
) -> tuple[tuple[int, ...], list[str]]:
    """The training levels to export and the notes explaining any level left out."""
    if requested is not None:
        chosen = tuple(sorted(set(requested)))
        missing = missing_local_files([p for level in chosen for p in training_files(level)], data_dir)
        if missing:
            raise UpstreamDataError(missing_files_message(missing, str(resolve_data_dir(data_dir))))
        return chosen, []
    present = present_training_levels(data_dir)
    absent = [level for level in TRAINING_LEVELS if level not in present]
    if not absent:
        return present, []
    where = resolve_data_dir(data_dir)
    missing = [path for level in absent for path in training_files(level)]
    note = (
        f"The `training` config of this export holds levels {', '.join(map(str, present))} only: "
        f"the local copy {where} lacks "
        + ", ".join(f"`{path}` ({manifest().url(path)})" for path in missing)
        + ". Export again with those files in place to include them."
    )
    return present, [note]


def export_repository(
    out: str | os.PathLike[str],
    *,
    data_dir: str | os.PathLike[str] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    training_levels: Iterable[int] | None = None,
    card_path: str | os.PathLike[str] | None = None,
    configs: Iterable[str] | None = None,
) -> ExportReport:
    import datasets
    from datasets.info import DatasetInfosDict
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCard

    from apibank.data.builder import ApiBank

    levels, notes = choose_training_levels(data_dir, training_levels)
    if not levels:
        raise ValueError("no training level is available to export")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    report = ExportReport(out=out, training_levels=levels, notes=notes)
    wanted = set(configs) if configs is not None else {spec.name for spec in CONFIGS}

    metadata_configs = MetadataConfigs()
    infos = DatasetInfosDict()

    def write_config(name: str, split: str, dataset: Any) -> None:
        relative = f"{name}/{PARQUET_NAME.format(split=split)}"
        (out / name).mkdir(exist_ok=True)
        with atomic_path(out / relative) as parquet:
            parquet_bytes = dataset.to_parquet(parquet)
        report.rows[name] = dataset.num_rows

        metadata_configs[name] = {
            "data_files": [{"split": split, "path": f"{name}/{split}-*.parquet"}],
            **({"default": True} if name == ApiBank.DEFAULT_CONFIG_NAME else {}),
        }
        arrow_bytes = dataset.data.nbytes
        split_info = datasets.SplitInfo(name=split, num_bytes=arrow_bytes, num_examples=dataset.num_rows)
        infos[name] = datasets.DatasetInfo(
            features=dataset.features,
            splits=datasets.SplitDict({split: split_info}),
            download_size=parquet_bytes,
            dataset_size=arrow_bytes,
        )

    for spec in CONFIGS:
        if spec.name not in wanted:
            continue
        extra = {"levels": levels} if spec.name == TRAINING_CONFIG else {}
        builder = ApiBank(config_name=spec.name, data_dir=data_dir, cache_dir=cache_dir, **extra)
        builder.download_and_prepare()
        write_config(spec.name, spec.split, builder.as_dataset(split=spec.split))

    # Trainer formats (apibank.train): the same training levels as chat-with-tools conversations
    # and prompt/completion pairs; samples that cannot be converted are listed beside them.
    trainer = trainer_datasets(data_dir, levels, None if configs is None else wanted)
    for name, dataset in trainer.datasets.items():
        write_config(name, TRAINER_SPLIT, dataset)
    if trainer.datasets:
        write_unconverted(out, trainer.conversion)
        notes.append(trainer.note())

    card_file = Path(card_path) if card_path else default_card_path()
    if not card_file.is_file():
        raise FileNotFoundError(f"dataset card {card_file} not found; pass its path (--card)")
    card = DatasetCard(card_file.read_text("utf-8"))
    card.data.pop("configs", None)
    card.data.pop("dataset_info", None)
    metadata_configs.to_dataset_card_data(card.data)
    infos.to_dataset_card_data(card.data)
    if notes:
        card.text = "\n".join(f"> **Export note.** {note}\n" for note in notes) + "\n" + card.text
    atomic_write_text(out / "README.md", str(card))
    write_eval_yaml(out)
    atomic_copy(fetch(LICENSE_FILE, data_dir), out / LICENSE_FILE)
    return report


def push_repository(out: str | os.PathLike[str], repo_id: str, *, private: bool = False, api: Any = None) -> str:
    """Upload an exported folder as the Hub dataset ``repo_id``; returns the commit URL."""
    from huggingface_hub import HfApi

    from apibank.hub.ids import check_repo_id

    check_repo_id(repo_id, "the dataset repository")
    missing = [name for name in ("README.md", EVAL_YAML_FILE, LICENSE_FILE) if not (Path(out) / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{out} is not an exported repository: it lacks {', '.join(missing)}")
    api = api or HfApi()
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    commit = api.upload_folder(folder_path=str(out), repo_id=repo_id, repo_type="dataset",
                               commit_message="Upload API-Bank (apibank export-dataset)")
    return str(commit.commit_url if hasattr(commit, "commit_url") else commit)


def print_report(report: ExportReport, stream=sys.stdout) -> None:
    for name, count in report.rows.items():
        print(f"{name}: {count} rows", file=stream)
    print(f"wrote {report.out}", file=stream)
