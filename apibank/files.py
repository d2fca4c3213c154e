"""Writing output files safely: atomically, as strict UTF-8 JSON, whatever the values hold.

* :func:`atomic_writer` / :func:`atomic_write_text` write to a temporary file in the target folder,
  flush it to disk and rename it over the target: a crash leaves the old file or the new one, never a
  truncated one.
* :func:`json_safe` turns any value the judge can produce from model output (``ast`` literals: tuple
  keys, sets, bytes, complex numbers, non-finite floats, nesting) into plain JSON values, so that
  ``json.dumps(..., allow_nan=False)`` always succeeds and readers that follow RFC 8259 accept it.
* :func:`json_line` is one JSON line that is valid UTF-8 even when the text holds lone surrogates
  (those are written as ``\\udXXX`` escapes, which read back to the same Python string);
  :class:`JsonLinesAppender` appends such lines to a log written as a run goes (predictions,
  trajectories), each line as its row or episode is done, so that an interruption loses only the work
  still in flight; :func:`read_json_lines` is the one reader of such files, and
  :func:`resume_json_lines` what a resumed run keeps (a torn last line cut off).
* A write the system refuses (a full disk) is an :class:`OutputWriteError` naming the file and what was
  kept, never a bare ``OSError``.

It also names the files of an output folder, which every room reads and writes by these names.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import tempfile
from pathlib import Path
from typing import IO, Any, Callable, Hashable, Iterable, Iterator, Mapping

from apibank.errors import InputFileError, OutputError

# The files of an output folder (``apibank evaluate``, ``apibank score``, ``apibank agent``).
PREDICTIONS_FILE = "predictions.jsonl"
DETAILS_FILE = "details.jsonl"
RESULTS_FILE = "results.json"
PROMPTS_FILE = "prompts.jsonl"  # apibank evaluate --prompts-only
REPORT_FILE = "report.md"
TRAJECTORIES_FILE = "trajectories.jsonl"
FINETUNE_FILE = "finetune.json"  # a fine-tuned model's manifest (apibank finetune)
LEADERBOARD_DIR = "leaderboard"

# Deeper structures are written as a placeholder; no judged value comes close (parsers cap at 50).
MAX_JSON_DEPTH = 100


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike[str], *, encoding: str = "utf-8") -> Iterator[IO[str]]:
    """A text handle whose content replaces ``path`` only when the block completes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = tempfile.NamedTemporaryFile(
        "w", encoding=encoding, dir=path.parent, prefix=f".{path.name}.", suffix=".tmp", delete=False
    )
    try:
        with handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        _publish(handle.name, path)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(handle.name)
        if _refused_here(error, handle.name):
            raise _write_refused(path, error, "the file is as it was before") from None  # type: ignore[arg-type]
        raise


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path beside ``path`` for writers that want a file name (plots, Parquet); it replaces
    ``path`` only when the block completes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=path.suffix or ".tmp")
    os.close(descriptor)
    try:
        yield Path(name)
        _publish(name, path)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(name)
        if _refused_here(error, name):
            raise _write_refused(path, error, "the file is as it was before") from None  # type: ignore[arg-type]
        raise


def _refused_here(error: BaseException, temporary: str) -> bool:
    """``error`` is the system refusing to write the temporary file (not an error of the caller's own)."""
    return (isinstance(error, OSError) and not isinstance(error, OutputWriteError)
            and error.filename in (None, temporary))


def new_file_mode() -> int:
    """The mode a new file gets under this process's umask (0644 under the usual 022)."""
    mask = os.umask(0o022)  # reading the umask means setting it; put back at once
    os.umask(mask)
    return 0o666 & ~mask


def _publish(temporary: str, path: Path) -> None:
    # Temporary files are created 0600; the result gets the target's mode, or a new file's.
    try:
        mode = path.stat().st_mode & 0o777
    except OSError:
        mode = new_file_mode()
    os.chmod(temporary, mode)
    os.replace(temporary, path)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    with atomic_writer(path) as handle:
        handle.write(text)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    with atomic_path(path) as temporary:
        temporary.write_bytes(data)


def atomic_copy(source: str | os.PathLike[str], path: str | os.PathLike[str]) -> None:
    """Copy ``source`` to ``path`` atomically (``path`` holds the old file or the whole copy)."""
    import shutil

    with atomic_path(path) as temporary:
        shutil.copyfile(source, temporary)


def write_json(path: str | os.PathLike[str], value: Any) -> None:
    """``value`` as strict, indented UTF-8 JSON (values from model output made JSON values), atomically."""
    atomic_write_text(path, dumps_strict(json_safe(value), indent=2, ensure_ascii=False) + "\n")


class OutputWriteError(OutputError, OSError):
    """A write into an output file that the operating system refused (a full disk, a quota, an I/O error):
    the message names the file and says what was kept."""


def _write_refused(path: Path, error: OSError, kept: str) -> OutputWriteError:
    reason = error.strerror or str(error)
    hint = ("free some space" if error.errno in (errno.ENOSPC, errno.EDQUOT)
            else "check the disk and the folder's permissions")
    return OutputWriteError(f"{path}: cannot write ({reason}); {kept}; {hint}, then run the same command again "
                            "to resume")


class JsonLinesAppender:
    """Appends one :func:`json_line` per record: the one writer of the logs a run writes as it goes
    (predictions, trajectories). Each :meth:`write` hands its lines to the operating system at once (an
    interrupted or killed process loses none of them) and, unless ``sync=False``, to the disk (a crash
    of the machine neither); :meth:`sync` and :meth:`close` put what was written on disk. A write the
    system refuses (a full disk) is cut back to the last whole line and raised as
    :class:`OutputWriteError` naming the file: every line written before stays, and a resume goes on
    from there."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            self._end = os.fstat(self._fd).st_size
        except OSError as error:
            raise _write_refused(self.path, error, "nothing was written") from None

    def write(self, records: Iterable[Any], *, sync: bool = True) -> None:
        # one line per record whatever the text holds (a lone surrogate would fail to encode)
        data = "".join(json_line(record) + "\n" for record in records).encode("utf-8")
        if self._fd is None:
            raise ValueError(f"{self.path}: written to after it was closed")
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view):]
        except OSError as error:
            with contextlib.suppress(OSError):  # a part of a line would read as a torn line
                os.ftruncate(self._fd, self._end)
            raise _write_refused(self.path, error, "every whole line written before is kept") from None
        self._end += len(data)
        if sync:
            self.sync()

    def sync(self) -> None:
        if self._fd is None:
            return
        try:
            os.fsync(self._fd)
        except OSError as error:
            if error.errno == errno.EINVAL:  # a file that cannot be synced (a pipe, a device): nothing to wait for
                return
            raise _write_refused(self.path, error, "the lines written may not all be on disk") from None

    def close(self) -> None:
        if self._fd is None:
            return
        try:
            self.sync()
        finally:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "JsonLinesAppender":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_json_lines(path: str | os.PathLike[str], records: Iterable[Any]) -> None:
    """One :func:`json_line` per record, the file replaced atomically (it holds the old lines or the new)."""
    with atomic_writer(path) as handle:
        for record in records:
            handle.write(json_line(record) + "\n")


class JsonLinesError(InputFileError):
    """A JSON-lines file that cannot be read as one object per line (the message names the file and line)."""


def read_json_lines(
    path: str | os.PathLike[str],
    *,
    what_to_do: str = "",
    allow_torn_tail: bool = False,
    key: Callable[[dict[str, Any]], Hashable] | None = None,
    check: Callable[[dict[str, Any]], str | None] | None = None,
    duplicate_way_out: str = "",
    error: type[JsonLinesError] = JsonLinesError,
) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines file: the one reader of predictions, trajectories and details.

    Blank lines are skipped; a byte order mark before the first line is not part of it. Anything else
    that is not a JSON object is an ``error`` naming the file and the line, with the reason, followed by
    ``what_to_do``: a line that is not JSON, a line ``check`` finds a problem in (it returns the problem,
    or None), a record whose ``key`` an earlier line had (with ``duplicate_way_out``), text that is not
    UTF-8. A torn last line (no newline after it: a write cut short) is an error too, unless
    ``allow_torn_tail`` (a run resuming, see :func:`resume_json_lines`), where it is left out."""
    path = Path(path)
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as bad:
        number = data[: bad.start].count(b"\n") + 1
        raise error(f"{path}:{number}: not UTF-8 text (byte {data[bad.start]:#04x} at offset {bad.start}); "
                    "the file must be written as UTF-8") from None
    records: list[dict[str, Any]] = []
    first_line: dict[Hashable, int] = {}
    # "\n" only: str.splitlines() would also cut at U+2028, U+0085 and the like, which JSON strings hold raw
    lines = text.split("\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        advice = what_to_do
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as bad:
            if number == len(lines):  # the last line, with no newline after it: its write was cut short
                if allow_torn_tail:
                    break
                problem = "a torn last line (an interrupted write)"
            else:
                reason = (f"{bad.msg} at column {bad.colno}" if isinstance(bad, json.JSONDecodeError)
                          else "nested too deeply")
                problem = f"not a JSON line ({reason})"
        else:
            if not isinstance(record, dict):
                problem = f"a JSON {type(record).__name__}, not a JSON object"
            else:
                problem = check(record) if check is not None else None
                if problem is None and key is not None:
                    identity = key(record)
                    if identity in first_line:
                        problem = f"duplicate {_shown_key(identity)} (first at line {first_line[identity]})"
                        advice = duplicate_way_out or what_to_do
                    else:
                        first_line[identity] = number
                if problem is None:
                    records.append(record)
                    continue
        raise error(f"{path}:{number}: {problem}" + (f"; {advice}" if advice else ""))
    return records


def _shown_key(identity: Hashable) -> str:
    if isinstance(identity, tuple):
        return "(" + ", ".join(map(repr, identity)) + ")"
    return f"id {identity!r}"


def resume_json_lines(path: str | os.PathLike[str], **reading: Any) -> list[dict[str, Any]]:
    """The records a resumed run keeps from ``path`` (none when it does not exist), read as
    :func:`read_json_lines` does with ``allow_torn_tail``; a torn last line is cut off the file, and a
    last line without its newline gets one, so that the run appends whole lines after whole lines."""
    path = Path(path)
    if not path.exists():
        return []
    records = read_json_lines(path, allow_torn_tail=True, **reading)
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        try:
            if json_object_line(data[cut:]):
                with path.open("ab") as handle:
                    handle.write(b"\n")
            else:
                os.truncate(path, cut)
        except OSError as error:
            raise _write_refused(path, error, "nothing was changed") from None
    return records


def json_object_line(data: bytes) -> bool:
    """``data`` is one JSON object (a complete line)."""
    try:
        return isinstance(json.loads(data.decode("utf-8-sig")), dict)
    except (ValueError, RecursionError):
        return False


def episode_key(record: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    """What identifies a trajectory: the episode, the setting and the trial."""
    return record.get("episode"), record.get("setting"), record.get("trial")


def _trajectory_problem(record: dict[str, Any]) -> str | None:
    for field, kinds in (("episode", str), ("level", str), ("setting", str), ("trial", int), ("verdict", dict)):
        value = record.get(field)
        if not isinstance(value, kinds) or isinstance(value, bool):
            shown = "missing" if field not in record else f"a {type(value).__name__}"
            return f"`{field}` is {shown}, not a {kinds.__name__}"
    return None


def read_trajectories(path: str | os.PathLike[str], *, resume: bool = False,
                      what_to_do: str = "") -> list[dict[str, Any]]:
    """The records of a trajectories file (:data:`TRAJECTORIES_FILE`; none when it does not exist yet),
    one per episode, setting and trial. ``resume``: a torn last line is cut off the file first
    (:func:`resume_json_lines`)."""
    reading = dict(key=episode_key, check=_trajectory_problem, what_to_do=what_to_do,
                   duplicate_way_out=what_to_do or "keep one line per episode and trial")
    if resume:
        return resume_json_lines(path, **reading)
    if not Path(path).exists():
        return []
    return read_json_lines(path, **reading)


def _scalar(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # 'inf', '-inf', 'nan': strict JSON has no such numbers
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (bytes, bytearray, complex)):
        return repr(value)
    return str(value)


def _key(key: Any) -> str:
    return key if isinstance(key, str) else repr(key)


def json_safe(value: Any) -> Any:
    """``value`` with every part made a JSON value (see the module docstring); never recurses in Python."""
    if not isinstance(value, (dict, list, tuple, set, frozenset)):
        return _scalar(value)
    root: list[Any] = [None]
    # (container to fill, slot, value, depth)
    pending: list[tuple[Any, Any, Any, int]] = [(root, 0, value, 0)]
    while pending:
        target, slot, item, depth = pending.pop()
        if isinstance(item, (dict, list, tuple, set, frozenset)) and depth >= MAX_JSON_DEPTH:
            target[slot] = f"<{type(item).__name__} of {len(item)} items, nested deeper than {MAX_JSON_DEPTH}>"
        elif isinstance(item, dict):
            out: dict[str, Any] = {}
            target[slot] = out
            for key, child in item.items():
                name = _key(key)
                out[name] = None
                pending.append((out, name, child, depth + 1))
        elif isinstance(item, (list, tuple, set, frozenset)):
            children = sorted(item, key=repr) if isinstance(item, (set, frozenset)) else list(item)
            out_list: list[Any] = [None] * len(children)
            target[slot] = out_list
            pending.extend((out_list, i, child, depth + 1) for i, child in enumerate(children))
        else:
            target[slot] = _scalar(item)
    return root[0]


def dumps_strict(value: Any, **options: Any) -> str:
    """``json.dumps`` that always yields strict JSON (no NaN/Infinity, string keys only)."""
    try:
        return json.dumps(value, allow_nan=False, **options)
    except (TypeError, ValueError, RecursionError):
        return json.dumps(json_safe(value), allow_nan=False, **options)


def json_line(value: Any) -> str:
    """One strict JSON line (no newline) that encodes to UTF-8 whatever strings ``value`` holds."""
    text = dumps_strict(value, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: the ASCII form escapes it
        text = dumps_strict(value, ensure_ascii=True)
    return text
