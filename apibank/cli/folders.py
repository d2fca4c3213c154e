"""Checks on the folders a subcommand reads and writes, made before any work starts: the data folder
looks like the upstream API-Bank folder, the output folder can be written, and scoring does not replace
the files of an earlier run without ``--overwrite``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from apibank.cli.checks import check_output
from apibank.errors import DataFolderError, OutputError, UsageError


def check_data_dir(data_dir: str | os.PathLike[str] | None, levels: Iterable[str], *, databases: bool = True) -> None:
    """A local data folder (``--data-dir``, else ``$APIBANK_DATA_DIR``) exists and holds the files of
    ``levels`` (and the tool databases); without one the files are downloaded and verified later."""
    from apibank.data.rows import required_files
    from apibank.data.upstream import DATA_DIR_ENV, manifest

    given = str(data_dir) if data_dir is not None else os.environ.get(DATA_DIR_ENV) or None
    if given is None:
        return
    name = "--data-dir" if data_dir is not None else f"${DATA_DIR_ENV}"
    folder = Path(given)
    if not folder.is_dir():
        raise DataFolderError(f"{name} {given}: no such folder; give the upstream API-Bank folder, or leave it "
                              "out to download the data")
    needed = [path for level in levels for path in required_files(level)]
    if databases:
        needed += manifest().under("init_database")
    needed = list(dict.fromkeys(needed))
    missing = [path for path in needed if not (folder / path).is_file()]
    if not missing:
        return
    if len(missing) == len(needed):
        what = f"not the API-Bank data folder (none of the {len(needed)} files needed is there)"
    else:
        what = f"lacks {len(missing)} of the {len(needed)} API-Bank files needed"
    raise DataFolderError(
        f"{name} {given}: {what}; give the upstream api-bank folder, or omit {name} to download it"
    ).with_details([f"{path} (source: {manifest().url(path)})" for path in missing])


def check_writable(output: str | os.PathLike[str] | None, flag: str = "--output") -> Path:
    """The output folder, once it is known that it can be created and written."""
    if output is None:
        raise UsageError(f"{flag} DIR is required: the folder to write into")
    path = Path(output)
    check_output(path)
    return path


def run_files() -> tuple[str, ...]:
    """The files a scoring writes into its output folder (besides the predictions)."""
    from apibank.pipeline import DETAILS_FILE, LEADERBOARD_DIR, REPORT_FILE, RESULTS_FILE
    from apibank.report.markdown import PLOTS

    return (RESULTS_FILE, DETAILS_FILE, REPORT_FILE, *PLOTS.values(), LEADERBOARD_DIR)


def refuse_replacing(output: Path, overwrite: bool) -> None:
    """Scoring into a folder that holds an earlier run's results needs ``--overwrite``."""
    present = [name for name in run_files() if (output / name).exists()]
    if present and not overwrite:
        shown = ", ".join(present[:3]) + (", ..." if len(present) > 3 else "")
        raise OutputError(f"{output} already holds the results of a run ({shown}), which scoring would replace; "
                          "give another --output, or --overwrite to replace them")
