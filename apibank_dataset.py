"""API-Bank (Li et al., EMNLP 2023) as typed Arrow datasets.

Configs (one table, :data:`apibank.data.features.CONFIGS`):

* ``level-1``, ``level-2``, ``level-3``: split ``test``; rows as in ``CONTRACTS.md`` §1, each with a
  ``reference`` JSON for the ``apibank`` metric;
* ``training``: split ``train``; the level-1/2/3 API and response training files. ``levels=(3,)``
  restricts it to the levels you have (the level-1/2 files are large and missing from some copies).

The rows are generated from the raw upstream dialogues of the pinned commit and checked byte for byte
against upstream ``test-data``. Files come from ``data_dir`` (a local copy of upstream ``api-bank/``)
or are downloaded by the download manager from the pinned commit and verified by checksum.

datasets 4+ no longer runs loading scripts, so use the class directly::

    from apibank_dataset import ApiBank
    builder = ApiBank(config_name="level-1", data_dir="/path/to/api-bank")
    builder.download_and_prepare()
    rows = builder.as_dataset(split="test")

or export a script-free repository with ``apibank export-dataset --data-dir DIR --output OUT`` and
``datasets.load_dataset(OUT, "level-1", split="test")``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import datasets

from apibank.data.features import CONFIGS, FEATURES, arrow_row, mapping_of, resolve_files
from apibank.data.rows import iter_rows, mapping_source

_CITATION = """\
@inproceedings{li-etal-2023-api,
    title = "{API}-Bank: A Comprehensive Benchmark for Tool-Augmented {LLM}s",
    author = "Li, Minghao and Zhao, Yingxiu and Yu, Bowen and Song, Feifan and Li, Hangyu and Yu, Haiyang and Li, Zhoujun and Huang, Fei and Li, Yongbin",
    booktitle = "Proceedings of the 2023 Conference on Empirical Methods in Natural Language Processing",
    year = "2023",
    address = "Singapore",
    publisher = "Association for Computational Linguistics",
    url = "https://aclanthology.org/2023.emnlp-main.187",
    pages = "3102--3116",
}
"""
_HOMEPAGE = "https://github.com/AlibabaResearch/DAMO-ConvAI/tree/main/api-bank"
_LICENSE = "apache-2.0"


@dataclass
class ApiBankConfig(datasets.BuilderConfig):
    """One row of the config table, plus ``levels`` (training config only; None = 1, 2 and 3)."""

    split: str = "test"
    row_schema: str = "test-rows"
    levels: tuple[int, ...] | None = None


class ApiBank(datasets.GeneratorBasedBuilder):
    """API-Bank test levels 1-3 and training set, from the raw upstream files."""

    VERSION = datasets.Version("1.0.0")
    BUILDER_CONFIG_CLASS = ApiBankConfig
    BUILDER_CONFIGS = [
        ApiBankConfig(name=spec.name, split=spec.split, row_schema=spec.row_schema, description=spec.description)
        for spec in CONFIGS
    ]
    DEFAULT_CONFIG_NAME = "level-1"

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description=self.config.description,
            features=FEATURES[self.config.row_schema],
            homepage=_HOMEPAGE,
            license=_LICENSE,
            citation=_CITATION,
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
        for row in iter_rows(self.config.name, levels=self.config.levels, source=mapping_source(files)):
            yield row["id"], arrow_row(row)
