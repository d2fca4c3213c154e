"""API-Bank (Li et al., EMNLP 2023) as typed Arrow datasets.

Configs (one table, ``apibank.data.features.CONFIGS``):

* ``level-1``, ``level-2``, ``level-3``: split ``test``; typed rows (``apibank.data.features``), each with a
  ``reference`` JSON for the ``apibank`` metric;
* ``training``: split ``train``; the level-1/2/3 API and response training files. ``levels=(3,)``
  restricts it to the levels you have (the level-1/2 files are large and missing from some copies).

The rows are generated from the raw upstream dialogues of the pinned commit and checked byte for byte
against upstream ``test-data``. Files come from ``data_dir`` (a local copy of upstream ``api-bank/``)
or are downloaded by the download manager from the pinned commit and verified by checksum.

datasets 4+ no longer runs loading scripts, so use the class directly:

    from apibank_dataset import ApiBank
    builder = ApiBank(config_name="level-1", data_dir="/path/to/api-bank")
    builder.download_and_prepare()
    rows = builder.as_dataset(split="test")

or export a script-free repository with ``apibank export-dataset --data-dir DIR --output OUT`` and
``datasets.load_dataset(OUT, "level-1", split="test")``.
"""

from __future__ import annotations

from apibank.data.builder import ApiBank, ApiBankConfig

__all__ = ["ApiBank", "ApiBankConfig"]
