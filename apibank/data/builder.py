"""The ``datasets`` builder of API-Bank (``apibank_dataset.ApiBank`` is its public face).

Configs (one table, :data:`apibank.data.features.CONFIGS`): ``level-1``, ``level-2``, ``level-3``
(split ``test``, each row with a ``reference`` JSON for the ``apibank`` metric and its ``audit_status``) and
``training``
(split ``train``; ``levels=(3,)`` restricts it to the levels a copy has). Rows come from
:func:`apibank.data.rows.iter_rows`; files from ``data_dir`` or verified downloads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

import datasets

from apibank.data.features import CONFIGS, FEATURES, arrow_row, mapping_of, resolve_files
from apibank.benchmark import CITATION, HOMEPAGE
from apibank.data.audits import load_audit
from apibank.data.dialogues import mapping_source
from apibank.data.rows import iter_rows

_LICENSE = "apache-2.0"


@dataclass
class ApiBankConfig(datasets.BuilderConfig):
    """One row of the config table, plus ``levels`` (training config only; None = 1, 2 and 3)."""

    split: str = "test"
    row_schema: str = "test-rows"
    levels: tuple[int, ...] | None = None


# datasets names a builder's cache folder after the module defining it; keep the name of the face.
DATASET_NAME = "apibank_dataset"


class ApiBank(datasets.GeneratorBasedBuilder):
    """API-Bank test levels 1-3 and training set, from the raw upstream files."""

    VERSION = datasets.Version("1.0.0")
    BUILDER_CONFIG_CLASS = ApiBankConfig
    BUILDER_CONFIGS = [
        ApiBankConfig(name=spec.name, split=spec.split, row_schema=spec.row_schema, description=spec.description)
        for spec in CONFIGS
    ]
    DEFAULT_CONFIG_NAME = "level-1"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("dataset_name", DATASET_NAME)
        super().__init__(*args, **kwargs)

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description=self.config.description,
            features=FEATURES[self.config.row_schema],
            homepage=HOMEPAGE,
            license=_LICENSE,
            citation=CITATION,
        )

    def _split_generators(self, dl_manager: datasets.DownloadManager) -> list[datasets.SplitGenerator]:
        files = resolve_files(
            self.config.name,
            data_dir=self.config.data_dir,
            download=dl_manager.download,
            levels=self.config.levels,
        )
        return [datasets.SplitGenerator(name=self.config.split, gen_kwargs={"files": mapping_of(files)})]

    def _generate_examples(self, files: dict[str, str]) -> Iterator[tuple[str, dict]]:
        # test rows carry the row audit's status; files given here are verified against the pinned manifest,
        # whose checksums the audit is checked against
        audit = load_audit(self.config.data_dir) if self.config.split == "test" else None
        for row in iter_rows(self.config.name, levels=self.config.levels, source=mapping_source(files)):
            yield row["id"], arrow_row({**row, "audit_status": audit.status(row["id"])} if audit else row)
