"""The audit of every test row, shipped with the package (``apibank/data/audit/``), and its checks.

``audit.jsonl`` holds one object per test row (``id`` as :func:`apibank.data.rows.iter_rows` gives it,
``status``, ``checks``, ``reason``, ``evidence``); ``AUDIT.json`` its version, the definition of each
status, the SHA-256 of the upstream files the audited rows come from, and the counts per level and
status. The rows marked :data:`VERIFIED` make the verified subset that runs report beside the full
benchmark, never in its place.

The file is read once per process and checked before it is used: every level holds as many rows as
the benchmark (:data:`apibank.benchmark.FULL_COUNTS`), no id twice, every status one of
:data:`apibank.benchmark.AUDIT_STATUSES`, the counts those of the rows, and every checksum that of the
file it names: the local copy's where one is given (``data_dir`` or ``$APIBANK_DATA_DIR``), else the pinned manifest's.
A run also checks that each of its rows has an entry (:func:`check_rows`). A failed check is an
:class:`AuditError`: one line naming what is wrong and what to do.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping

from apibank.benchmark import AUDIT_STATUSES, AUDIT_SUBSETS, AUDIT_VERIFIED, FULL_COUNTS, LEVELS
from apibank.data.configs import required_files
from apibank.data.upstream import manifest, resolve_data_dir, sha256_of
from apibank.errors import UserError

AUDIT_DIR = Path(__file__).with_name("audit")
AUDIT_ROWS_FILE = "audit.jsonl"
AUDIT_META_FILE = "AUDIT.json"
VERIFIED = AUDIT_VERIFIED
ROW_KEYS = ("id", "status", "checks", "reason", "evidence")
# What every refusal ends with: the audit comes with the package, so a bad one is a damaged install.
_REPAIR = "reinstall apibank, or restore apibank/data/audit/ from its repository"


class AuditError(UserError, ValueError):
    """The shipped audit does not match the data, or a row id it lacks; the message says what to do."""


@dataclass(frozen=True)
class Audit:
    version: str
    statuses: dict[str, str]  # status -> its definition
    data_sha256: dict[str, str]  # upstream path -> SHA-256
    counts: dict[str, dict[str, int]]  # level -> status -> rows
    rows: dict[str, dict[str, Any]]  # row id -> its audit record
    sha256: str  # of audit.jsonl: which decisions a result used

    def status(self, row_id: str) -> str:
        try:
            return self.rows[row_id]["status"]
        except (KeyError, TypeError):
            raise AuditError(f"{row_id!r} is not a test row of the audit (ids are as iter_rows gives them, "
                             "e.g. 'level-1/AddAgenda-AddMeeting-GetUserToken-level-2-2#0')") from None

    def summary(self) -> dict[str, Any]:
        """What a results.json records of the audit it used."""
        return {"version": self.version, "sha256": self.sha256, "file": f"apibank/data/audit/{AUDIT_ROWS_FILE}"}


def _level(row_id: str) -> str | None:
    head = row_id.split("/", 1)[0]
    return head if head in LEVELS else None


def _read(folder: Path) -> tuple[dict[str, Any], list[tuple[int, Any]], str]:
    where = folder / AUDIT_ROWS_FILE
    try:
        meta = json.loads((folder / AUDIT_META_FILE).read_text(encoding="utf-8"))
        data = where.read_bytes()
    except (OSError, ValueError) as error:
        raise AuditError(f"the row audit in {folder} cannot be read ({error}); {_REPAIR}") from None
    lines = []
    for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            lines.append((number, json.loads(line)))
        except ValueError:
            raise AuditError(f"{where} line {number} is not JSON; {_REPAIR}") from None
    return meta, lines, sha256_of(data)


def _checked(folder: Path) -> Audit:
    """The audit in ``folder``, with every check that needs no data files."""
    meta, lines, digest = _read(folder)
    where = folder / AUDIT_ROWS_FILE
    if not isinstance(meta, dict) or not all(key in meta for key in ("version", "statuses", "data_sha256", "counts")):
        raise AuditError(f"{folder / AUDIT_META_FILE} lacks version, statuses, data_sha256 or counts; {_REPAIR}")
    if sorted(meta["statuses"]) != sorted(AUDIT_STATUSES):
        raise AuditError(f"{folder / AUDIT_META_FILE} defines the statuses {sorted(meta['statuses'])}, this apibank "
                         f"knows {list(AUDIT_STATUSES)}; install the apibank the audit was made for")
    rows: dict[str, dict[str, Any]] = {}
    counts: dict[str, dict[str, int]] = {level: {} for level in LEVELS}
    for number, record in lines:
        if not isinstance(record, dict) or any(key not in record for key in ROW_KEYS):
            raise AuditError(f"{where} line {number} lacks one of {', '.join(ROW_KEYS)}; {_REPAIR}")
        row_id, status = record["id"], record["status"]
        level = _level(row_id) if isinstance(row_id, str) else None
        if level is None:
            raise AuditError(f"{where} line {number}: {row_id!r} is not a test row id (level-N/...); {_REPAIR}")
        if row_id in rows:
            raise AuditError(f"{where} line {number}: {row_id} is audited twice; {_REPAIR}")
        if status not in AUDIT_STATUSES:
            raise AuditError(f"{where} line {number}: status {status!r} is none of {', '.join(AUDIT_STATUSES)}; "
                             f"{_REPAIR}")
        rows[row_id] = record
        counts[level][status] = counts[level].get(status, 0) + 1
    for level in LEVELS:
        expected = sum(FULL_COUNTS[level].values())
        found = sum(counts[level].values())
        if found != expected:
            raise AuditError(f"{where} audits {found} rows of {level}, the benchmark has {expected}: "
                             f"{'rows are missing' if found < expected else 'it holds rows of other data'}; {_REPAIR}")
    if meta.get("rows") not in (None, len(rows)):
        raise AuditError(f"{folder / AUDIT_META_FILE} says {meta['rows']} rows, {where} holds {len(rows)}; {_REPAIR}")
    declared = {level: {status: n for status, n in (meta["counts"].get(level) or {}).items() if n}
                for level in LEVELS}
    if declared != counts:
        raise AuditError(f"{folder / AUDIT_META_FILE} counts {declared}, its rows {counts}; {_REPAIR}")
    return Audit(str(meta["version"]), dict(meta["statuses"]), dict(meta["data_sha256"]), counts, rows, digest)


def _check_data(audit: Audit, local: Path | None) -> None:
    """Every checksum of the audit is its file's: the local copy's for the files the test rows come from, else
    (and for the other upstream files an audit reads, the training set's) the pinned manifest's; a file the
    manifest pins by git blob only is compared with the local copy where there is one."""
    tested = {path for level in LEVELS for path in required_files(level)}
    if not audit.data_sha256:
        raise AuditError(f"the row audit names no upstream file it was made from; {_REPAIR}")
    for path, recorded in sorted(audit.data_sha256.items()):
        if path not in manifest().files:
            raise AuditError(f"the row audit was made from {path}, not a file of the pinned upstream data; {_REPAIR}")
        pinned = manifest().entry(path).sha256
        if local is not None and (path in tested or (pinned is None and (local / path).is_file())):
            try:
                actual = sha256_of((local / path).read_bytes())
            except OSError:
                raise AuditError(f"the row audit was made from {path}, which {local} lacks; give the data folder "
                                 "the audit was made from (--data-dir)") from None
            origin = str(local / path)
        elif pinned is None:  # a file the manifest pins by git blob only (level-1/2 training): checked when read
            continue
        else:
            actual, origin = pinned, "the pinned upstream commit"
        if actual != recorded:
            raise AuditError(f"the row audit does not match the data: {path} from {origin} has SHA-256 "
                             f"{str(actual)[:12]}..., the audit was made from {recorded[:12]}...; score the data "
                             "the audit was made from, or install the apibank whose audit matches it")


@lru_cache(maxsize=4)
def _audit(folder: str, local: str | None) -> Audit:
    audit = _checked(Path(folder))
    _check_data(audit, Path(local) if local is not None else None)
    return audit


def load_audit(data_dir: str | os.PathLike[str] | None = None, *,
               folder: str | os.PathLike[str] | None = None) -> Audit:
    """The shipped audit (or the one in ``folder``), checked against the data it will be used with: the
    local copy (``data_dir`` or ``$APIBANK_DATA_DIR``) where there is one, else the pinned files. Read
    and checked once per process per data folder; raises :class:`AuditError`."""
    local = resolve_data_dir(data_dir)
    return _audit(str(Path(folder) if folder is not None else AUDIT_DIR), str(local.resolve()) if local else None)


def audit_status(row_id: str) -> str:
    """The audit's status of a test row (``"verified"`` or why not: :data:`apibank.benchmark.AUDIT_STATUSES`);
    an id that is no test row is an :class:`AuditError`."""
    return load_audit().status(row_id)


def check_rows(audit: Audit, rows: Iterable[Mapping[str, Any]]) -> None:
    """Refuse rows the audit has no decision for (rows of other data than the audit's)."""
    missing = [row["id"] for row in rows if row["id"] not in audit.rows]
    if missing:
        raise AuditError(f"the row audit has no entry for {len(missing)} rows of this run, e.g. {missing[0]}: the "
                         f"rows are not the data the audit was made from; {_REPAIR}")


def subset_rows(audit: Audit, rows: Iterable[Mapping[str, Any]], subset: str) -> list[Any]:
    """The rows whose audit status is ``subset`` (one of :data:`apibank.benchmark.AUDIT_SUBSETS`), in order."""
    if subset not in AUDIT_SUBSETS:
        raise AuditError(f"unknown subset {subset!r}; expected one of {', '.join(AUDIT_SUBSETS)}")
    rows = list(rows)
    check_rows(audit, rows)
    return [row for row in rows if audit.rows[row["id"]]["status"] == subset]
