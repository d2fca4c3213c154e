"""One run per output folder.

``apibank evaluate``, ``score``, ``import-harness``, ``agent`` and ``finetune`` hold an operating-system lock
on their output folder (:data:`LOCK_FILE`, through ``filelock``, which the Hub libraries already bring) for
the whole run. A second run into a folder in use ends at once, before any work, in one line naming the holder
(its process id, host, command and start time, read from :data:`RUN_FILE`). The lock is the kernel's:
it goes with the process that held it, so a run that was killed never blocks the next one.

The folder also records what kind of run it holds (:data:`RUN_KINDS`: a classic run, predictions and
their scores; an agentic run, trajectories; a fine-tuned model). A run of another kind is refused before
any work, so that one folder never mixes two kinds of run. Folders written before the record existed
are recognised by their files.

A run that fails before it writes anything leaves the folder as it found it: no lock file, no record of a
kind, and no folder at all when the run created it; so a later run of any kind may use it.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import shlex
import socket
import sys
from pathlib import Path
from typing import Any, Iterator, Sequence

from apibank.errors import OutputError
from apibank.files import (
    DETAILS_FILE,
    FINETUNE_FILE,
    PREDICTIONS_FILE,
    TRAJECTORIES_FILE,
    atomic_write_bytes,
    write_json,
)

LOCK_FILE = ".apibank.lock"
RUN_FILE = ".apibank-run.json"
OWN_FILES = (LOCK_FILE, RUN_FILE)

# subcommand -> the kind of run it writes into its output folder
RUN_KINDS = {"evaluate": "classic", "score": "classic", "import-harness": "classic", "agent": "agentic",
             "finetune": "finetune"}
_KIND_WORDS = {"classic": "a classic run (apibank evaluate, score or import-harness)",
               "agentic": "an agentic run (apibank agent)",
               "finetune": "a fine-tuned model (apibank finetune)"}
# files that tell an older folder's kind
_KIND_FILES = (("finetune", (FINETUNE_FILE,)), ("agentic", (TRAJECTORIES_FILE,)),
               ("classic", (PREDICTIONS_FILE, DETAILS_FILE)))
MAX_SHOWN_COMMAND = 120


class FolderInUse(OutputError):
    """Another process holds the output folder's lock."""


class OtherKindOfRun(OutputError):
    """The output folder holds another kind of run."""


def own_file(path: Path) -> bool:
    """``path`` is one of the lock's files (not part of a run's output)."""
    return path.name in OWN_FILES or (path.name.startswith(f"{RUN_FILE}.") and path.name.endswith(".tmp"))


def folder_kind(folder: Path) -> str | None:
    """The kind of run ``folder`` holds: as recorded, else as its files show; None for a new folder."""
    record = _read_record(folder)
    if isinstance(record.get("kind"), str) and record["kind"] in _KIND_WORDS:
        return record["kind"]
    for kind, names in _KIND_FILES:
        if any((folder / name).exists() for name in names):
            return kind
    return None


def _read_record(folder: Path) -> dict[str, Any]:
    try:
        record = json.loads((folder / RUN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def _holder(folder: Path) -> str:
    record = _read_record(folder)
    if not record.get("pid"):
        return "another process (it has not recorded itself yet)"
    command = str(record.get("command") or "?")
    if len(command) > MAX_SHOWN_COMMAND:
        command = command[: MAX_SHOWN_COMMAND - 3] + "..."
    return (f"pid {record.get('pid')} on {record.get('host') or '?'} since {record.get('since') or '?'} "
            f"(`{command}`)")


def command_line(argv: Sequence[str] | None = None) -> str:
    """The command as the user typed it (``apibank evaluate ...``)."""
    return shlex.join(["apibank", *(sys.argv[1:] if argv is None else argv)])


@contextlib.contextmanager
def hold(folder: str | os.PathLike[str], subcommand: str, command: str | None = None) -> Iterator[Path]:
    """Hold ``folder`` (created if need be) for a run of ``subcommand`` until the block ends.

    Raises :class:`FolderInUse` when another process holds it, :class:`OtherKindOfRun` when it holds
    another kind of run. A block that raises before it wrote anything into the folder leaves the folder as
    it was found (the lock file, the record and the folder itself only where they were there before)."""
    from filelock import FileLock, Timeout

    folder = Path(folder)
    kind = RUN_KINDS[subcommand]
    created = [path for path in (folder, *folder.parents) if not path.exists()]
    folder.mkdir(parents=True, exist_ok=True)
    had_lock = (folder / LOCK_FILE).exists()
    lock = FileLock(str(folder / LOCK_FILE), timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise FolderInUse(f"{folder} is in use by another run: {_holder(folder)}; wait for it to end, or give "
                          "another --output") from None
    record, before = None, None
    try:
        record = _read_bytes(folder / RUN_FILE)
        before = _contents(folder)
        present = folder_kind(folder)
        if present is not None and present != kind:
            raise OtherKindOfRun(f"{folder} holds {_KIND_WORDS[present]}; apibank {subcommand} writes "
                                 f"{_KIND_WORDS[kind].split(' (')[0]}: give another --output")
        write_json(folder / RUN_FILE, {
            "kind": kind, "pid": os.getpid(), "host": socket.gethostname(),
            "since": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "command": command or command_line(),
        })
        yield folder
    except BaseException:
        with contextlib.suppress(OSError):  # the run's own error is the one to report
            if before is not None and _contents(folder) == before:
                _restore(folder, record, had_lock, created)
        raise
    finally:
        lock.release()


def _read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _contents(folder: Path) -> dict[str, tuple[int, int]]:
    """What a run writes into ``folder``: each entry but the lock's files, by size and modification time."""
    contents = {}
    for path in folder.iterdir():
        if not own_file(path):
            stat = path.lstat()
            contents[path.name] = (stat.st_size, stat.st_mtime_ns)
    return contents


def _restore(folder: Path, record: bytes | None, had_lock: bool, created: list[Path]) -> None:
    """Undo what holding ``folder`` changed, for a run that failed before it wrote anything."""
    if record is None:
        (folder / RUN_FILE).unlink(missing_ok=True)
    else:
        atomic_write_bytes(folder / RUN_FILE, record)
    # removed while still held: a run starting now either finds the lock taken or makes a new lock file
    if not had_lock:
        (folder / LOCK_FILE).unlink(missing_ok=True)
    for path in created:  # deepest first; one that something else wrote into meanwhile stays, with its parents
        path.rmdir()
