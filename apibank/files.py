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
  still in flight.

It also names the files of an output folder, which every room reads and writes by these names.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from pathlib import Path
from typing import IO, Any, Iterable, Iterator

# The files of an output folder (``apibank evaluate``, ``apibank score``, ``apibank agent``).
PREDICTIONS_FILE = "predictions.jsonl"
DETAILS_FILE = "details.jsonl"
RESULTS_FILE = "results.json"
PROMPTS_FILE = "prompts.jsonl"  # apibank evaluate --prompts-only
REPORT_FILE = "report.md"
TRAJECTORIES_FILE = "trajectories.jsonl"
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
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(handle.name)
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
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise


def _publish(temporary: str, path: Path) -> None:
    # Temporary files are created 0600; the result gets the target's mode, or the usual 0644.
    try:
        mode = path.stat().st_mode & 0o777
    except OSError:
        mode = 0o644
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


class JsonLinesAppender:
    """Appends one :func:`json_line` per record. Each :meth:`write` hands its lines to the operating system
    at once (an interrupted or killed process loses none of them) and, unless ``sync=False``, to the disk
    (a crash of the machine neither); :meth:`sync` and :meth:`close` put what was written on disk."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = self.path.open("a", encoding="utf-8")

    def write(self, records: Iterable[Any], *, sync: bool = True) -> None:
        for record in records:
            # one line per record whatever the text holds (a lone surrogate would fail to encode)
            self._handle.write(json_line(record) + "\n")
        self._handle.flush()
        if sync:
            self.sync()

    def sync(self) -> None:
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        if not self._handle.closed:
            self._handle.flush()
            self.sync()
        self._handle.close()

    def __enter__(self) -> "JsonLinesAppender":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_json_lines(path: str | os.PathLike[str], records: Iterable[Any]) -> None:
    """One :func:`json_line` per record, the file replaced atomically (it holds the old lines or the new)."""
    with atomic_writer(path) as handle:
        for record in records:
            handle.write(json_line(record) + "\n")


def read_json_lines(path: str | os.PathLike[str], *, what_to_do: str = "") -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines file, blank lines skipped; a line that is not a JSON object is a
    ValueError naming the file and line (and ``what_to_do``, when given)."""
    path = Path(path)
    records = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as error:
                problem = f"not a JSON line ({error})"
            else:
                if isinstance(record, dict):
                    records.append(record)
                    continue
                problem = "not a JSON object"
            raise ValueError(f"{path}:{number}: {problem}" + (f"; {what_to_do}" if what_to_do else ""))
    return records


def read_trajectories(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The records of a trajectories file (:data:`TRAJECTORIES_FILE`; none when it does not exist yet)."""
    if not Path(path).exists():
        return []
    return read_json_lines(path, what_to_do="remove it to resume")


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
