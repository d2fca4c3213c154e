"""A row audit in a test folder: a copy of the shipped one with chosen rows' statuses changed, or damaged."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Callable, Mapping

from apibank.data import audits


def copy_audit(folder: Path, statuses: Mapping[str, str] | None = None, *, others: str | None = None,
               edit_meta: Callable[[dict], None] | None = None,
               edit_rows: Callable[[list[dict]], list[dict]] | None = None) -> Path:
    """The shipped audit copied into ``folder`` with ``statuses`` (row id -> status) applied (and ``others`` given
    to every other row, so that a test does not depend on the shipped decisions) and the counts made to agree,
    then ``edit_rows`` and ``edit_meta`` applied as they are (to damage it)."""
    folder.mkdir(parents=True, exist_ok=True)
    source = audits.AUDIT_DIR
    rows = [json.loads(line) for line in (source / audits.AUDIT_ROWS_FILE).read_text("utf-8").splitlines() if line]
    for row in rows:
        status = (statuses or {}).get(row["id"], others)
        if status is not None:
            row["status"] = status
            row["reason"], row["evidence"] = "changed by a test", "a test"
    meta = json.loads((source / audits.AUDIT_META_FILE).read_text("utf-8"))
    counts: dict[str, dict[str, int]] = {}
    for row in rows:
        cell = counts.setdefault(row["id"].split("/", 1)[0], {})
        cell[row["status"]] = cell.get(row["status"], 0) + 1
    meta["counts"] = counts
    if edit_rows is not None:
        rows = edit_rows(rows)
    if edit_meta is not None:
        edit_meta(meta)
    (folder / audits.AUDIT_ROWS_FILE).write_text("".join(json.dumps(row) + "\n" for row in rows), "utf-8")
    (folder / audits.AUDIT_META_FILE).write_text(json.dumps(meta), "utf-8")
    return folder


def use_audit(monkeypatch, folder: Path) -> None:
    """Make ``folder`` the audit every room reads in this test (read once per folder: the shipped one's
    checked copy is untouched)."""
    monkeypatch.setattr(audits, "AUDIT_DIR", folder)


def copy_data(data_dir: Path, folder: Path, change: Mapping[str, bytes] | None = None) -> Path:
    """A data folder of symbolic links to ``data_dir``'s files, except the paths in ``change``, written anew
    (whether ``data_dir`` has them or not)."""
    change = change or {}
    for path in data_dir.rglob("*"):
        if path.is_file():
            target = folder / path.relative_to(data_dir)
            target.parent.mkdir(parents=True, exist_ok=True)
            relative = str(path.relative_to(data_dir))
            if relative in change:
                target.write_bytes(change[relative])
            else:
                target.symlink_to(path)
    for relative, data in change.items():  # files the copy lacks, too
        target = folder / relative
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    return folder
