"""Where the tool environment reads its files from: a ``DataSource``.

The tools need two kinds of upstream file: the initial databases (``init_database/*.json``) and, for
the two formerly online tools (Dictionary, Translate), the dialogue files holding their recorded
results. The environment only reads them; locating, downloading and verifying the pinned upstream
copy is the benchmark's business (``apibank.data``), which hands the environment a source.

A plain folder (:class:`LocalFolder`) is a source too, so the tools work on their own.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol, runtime_checkable

from .errors import UpstreamDataError

DATA_DIR_ENV = "APIBANK_DATA_DIR"


@runtime_checkable
class DataSource(Protocol):
    """Read access to the upstream ``api-bank/`` files, by their path relative to that folder."""

    @property
    def key(self) -> str:
        """Identifies the source (process-wide caches of parsed files are keyed by it)."""
        ...

    def read_text(self, path: str) -> str: ...

    def paths(self, folder: str, suffix: str = "") -> list[str]:
        """Every file below ``folder`` (recursively) whose name ends with ``suffix``, sorted."""
        ...


class LocalFolder:
    """A local copy of the upstream folder, read as it is (no checksum verification)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise UpstreamDataError(f"data folder {str(self.root)!r} is not a directory")

    @property
    def key(self) -> str:
        return str(self.root.resolve())

    def read_text(self, path: str) -> str:
        candidate = self.root / path
        if not candidate.is_file():
            raise UpstreamDataError(f"missing file {path}: expected at {candidate}")
        return candidate.read_text("utf-8")

    def paths(self, folder: str, suffix: str = "") -> list[str]:
        base = self.root / folder
        if not base.is_dir():
            return []
        return sorted(
            p.relative_to(self.root).as_posix() for p in base.rglob(f"*{suffix}") if p.is_file()
        )

    def __repr__(self) -> str:
        return f"LocalFolder({str(self.root)!r})"


def as_source(data: "DataSource | str | os.PathLike[str] | None") -> DataSource:
    """A source from a source, a folder path, or ``None`` (then ``$APIBANK_DATA_DIR``)."""
    if isinstance(data, (str, os.PathLike)):
        return LocalFolder(data)
    if data is None:
        folder = os.environ.get(DATA_DIR_ENV)
        if not folder:
            raise UpstreamDataError(
                "no API-Bank data source: pass a data folder, set $APIBANK_DATA_DIR, or pass "
                "apibank.data.upstream_source() to download the pinned upstream files"
            )
        return LocalFolder(folder)
    if isinstance(data, DataSource):
        return data
    raise TypeError(f"expected a DataSource or a folder path, got {type(data).__name__}")
