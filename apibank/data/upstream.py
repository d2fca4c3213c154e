"""Locate, download and verify the original API-Bank data files.

The package never ships the upstream data. Every file is resolved in this order:

1. an explicit ``data_dir`` argument,
2. the ``APIBANK_DATA_DIR`` environment variable,
3. a download from the pinned upstream commit into the Hugging Face cache, verified by SHA-256
   (or by git blob id for the files the manifest only knows by blob id).

Every file, whichever of the three places it comes from, is verified against the manifest before
it is used, once per process per unchanged file (:func:`read_verified`): a local copy with a changed,
truncated or oversized file is an :class:`UpstreamDataError` naming the file, never a wrong verdict or
a raw JSONDecodeError. Reads are capped at the pinned size. Downloads have a total deadline, are read
in chunks up to the pinned size, and every failure (refused connection, HTTP error, stall, truncated
or oversized transfer, checksum mismatch) is an ``UpstreamDataError``. A file that fails verification
is never kept in the cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable

from apibank_tools.errors import UpstreamDataError

from apibank.benchmark import CACHE_ENV, DATA_DIR_ENV
from apibank.benchmark import UPSTREAM_URL_ENV as BASE_URL_ENV

# For the few files the manifest pins by git blob id only (no size): no upstream file is larger.
MAX_UNSIZED_BYTES = 64 * 1024 * 1024
DOWNLOAD_CHUNK = 1 << 16


@dataclass(frozen=True)
class UpstreamFile:
    path: str
    sha256: str | None
    size: int | None
    git_blob: str


@dataclass(frozen=True)
class Manifest:
    repository: str
    subfolder: str
    commit: str
    url_pattern: str
    files: dict[str, UpstreamFile]

    def url(self, path: str, base_url: str | None = None) -> str:
        if base_url:
            return base_url.rstrip("/") + "/" + urllib.request.pathname2url(path).lstrip("/")
        quoted = urllib.request.pathname2url(path).lstrip("/")
        return self.url_pattern.format(
            repository=self.repository, commit=self.commit, subfolder=self.subfolder, path=quoted
        )

    def entry(self, path: str) -> UpstreamFile:
        try:
            return self.files[path]
        except KeyError:
            raise UpstreamDataError(f"{path!r} is not a file of the pinned API-Bank data") from None

    def under(self, folder: str, suffix: str = "") -> list[str]:
        prefix = folder.rstrip("/") + "/"
        return sorted(p for p in self.files if p.startswith(prefix) and p.endswith(suffix))


@lru_cache(maxsize=1)
def manifest() -> Manifest:
    raw = json.loads((Path(__file__).with_name("upstream_manifest.json")).read_text("utf-8"))
    files = {
        path: UpstreamFile(path, meta.get("sha256"), meta.get("size"), meta["git_blob"])
        for path, meta in raw["files"].items()
    }
    return Manifest(raw["repository"], raw["subfolder"], raw["commit"], raw["url_pattern"], files)


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def git_blob_of(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def verify(entry: UpstreamFile, data: bytes, origin: str) -> None:
    """Raise UpstreamDataError unless ``data`` is exactly the pinned file."""
    if entry.sha256 is not None:
        actual = sha256_of(data)
        if actual != entry.sha256:
            raise UpstreamDataError(
                f"checksum mismatch for {entry.path} from {origin}: "
                f"sha256 {actual}, expected {entry.sha256}"
            )
    else:
        actual = git_blob_of(data)
        if actual != entry.git_blob:
            raise UpstreamDataError(
                f"checksum mismatch for {entry.path} from {origin}: "
                f"git blob {actual}, expected {entry.git_blob}"
            )


def size_cap(entry: UpstreamFile) -> int:
    return entry.size if entry.size is not None else MAX_UNSIZED_BYTES


# (resolved path, size, mtime, inode) of files verified in this process
_verified: set[tuple[str, int, int, int]] = set()
_verified_lock = threading.Lock()


def _identity(path: Path) -> tuple[str, int, int, int]:
    status = path.stat()
    return (str(path.resolve()), status.st_size, status.st_mtime_ns, status.st_ino)


def read_verified(entry: UpstreamFile, path: Path) -> bytes:
    """The bytes of ``path`` if they are exactly the pinned ``entry`` (hashed once per process per unchanged file)."""
    limit = size_cap(entry)
    try:
        identity = _identity(path)
        if identity[1] > limit:
            raise UpstreamDataError(
                f"{entry.path} at {path} has {identity[1]} bytes, more than the pinned {limit}: not the pinned file"
            )
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except OSError as error:
        raise UpstreamDataError(f"cannot read {entry.path} at {path}: {error}") from error
    if len(data) > limit:
        raise UpstreamDataError(f"{entry.path} at {path} grew beyond the pinned {limit} bytes while read")
    with _verified_lock:
        known = identity in _verified
    if not known:
        verify(entry, data, str(path))
        with _verified_lock:
            _verified.add(identity)
    return data


def verified_text(entry: UpstreamFile, path: Path) -> str:
    try:
        return read_verified(entry, path).decode("utf-8")
    except UnicodeDecodeError as error:  # unreachable for pinned files: they are UTF-8
        raise UpstreamDataError(f"{entry.path} at {path} is not UTF-8: {error}") from None


def default_cache_dir() -> Path:
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    from huggingface_hub import constants

    return Path(constants.HF_HOME) / "apibank" / manifest().commit


def resolve_data_dir(data_dir: str | os.PathLike[str] | None = None) -> Path | None:
    """The local copy to read from, or None when files must come from the cache/download."""
    if data_dir is not None:
        path = Path(data_dir)
        if not path.is_dir():
            raise UpstreamDataError(f"data_dir {str(path)!r} is not a directory")
        return path
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        path = Path(env)
        if not path.is_dir():
            raise UpstreamDataError(f"{DATA_DIR_ENV}={env!r} is not a directory")
        return path
    return None


# What every failed download ends with: the way to work without the network.
OFFLINE_HINT = "to work offline, pass --data-dir DIR (data_dir= in Python): a local copy of the upstream api-bank folder"


def _download(url: str, name: str, timeout: float, *, limit: int, deadline: float | None = None) -> bytes:
    """At most ``limit`` bytes from ``url`` within ``deadline`` seconds in all (each read within ``timeout``);
    a failure names the file as ``name`` (its upstream path) and the host, short enough for one line."""
    total = deadline if deadline is not None else 5 * timeout
    ends = time.monotonic() + total
    shown = f"{name} from {urllib.parse.urlsplit(url).netloc}"

    def failed(reason: str) -> UpstreamDataError:
        return UpstreamDataError(f"could not download {shown}: {reason}; {OFFLINE_HINT}")

    try:
        with urllib.request.urlopen(url, timeout=min(timeout, total)) as response:
            declared = response.headers.get("Content-Length")
            if declared is not None and declared.strip().isdigit() and int(declared) > limit:
                raise failed(f"{declared} bytes announced, more than the pinned {limit}")
            chunks, size = [], 0
            while True:
                left = ends - time.monotonic()
                if left <= 0:
                    raise failed(f"not complete within {total:g} s")
                _set_read_timeout(response, min(timeout, left))
                chunk = response.read1(DOWNLOAD_CHUNK) if hasattr(response, "read1") else response.read(DOWNLOAD_CHUNK)
                if not chunk:
                    break
                size += len(chunk)
                if size > limit:
                    raise failed(f"more than the pinned {limit} bytes")
                chunks.append(chunk)
            return b"".join(chunks)
    except UpstreamDataError:
        raise
    except Exception as error:  # URLError, HTTPError, timeouts, IncompleteRead, bad headers, TLS errors
        if time.monotonic() >= ends - 0.05:  # the last read waited for what was left of the deadline
            raise failed(f"not complete within {total:g} s") from error
        raise failed(_why(error)) from error


def _why(error: Exception) -> str:
    """A failed request in the system's words (``Name or service not known``, ``HTTP 404 Not Found``)."""
    if isinstance(error, urllib.error.HTTPError):
        return f"HTTP {error.code} {error.reason}"
    reason = getattr(error, "reason", None) if isinstance(error, urllib.error.URLError) else None
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror
    if isinstance(reason, str) and reason:
        return reason
    return f"{type(error).__name__}: {error}"


def _set_read_timeout(response: object, seconds: float) -> None:
    """Shorten the socket's per-read timeout to what is left of the total deadline (best effort)."""
    raw = getattr(getattr(response, "fp", None), "raw", None)
    sock = getattr(raw, "_sock", None)
    if sock is not None:
        try:
            sock.settimeout(max(seconds, 0.001))
        except OSError:
            pass


def fetch(
    path: str,
    data_dir: str | os.PathLike[str] | None = None,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    verify_local: bool = True,
    timeout: float = 60.0,
    deadline: float | None = None,
) -> Path:
    """Path to a verified local copy of upstream ``path`` (relative to ``api-bank/``).

    Local and cached copies are verified once per process (``verify_local=False`` skips that for a
    local copy); a download is read within ``timeout`` seconds per read and ``deadline`` seconds in
    all (default: five times ``timeout``).
    """
    entry = manifest().entry(path)
    local = resolve_data_dir(data_dir)
    if local is not None:
        candidate = local / path
        if not candidate.is_file():
            raise UpstreamDataError(
                f"missing file {path}: expected at {candidate} "
                f"(source: {manifest().url(path)})"
            )
        if verify_local:
            read_verified(entry, candidate)
        return candidate

    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = cache / path
    if target.is_file():
        try:
            read_verified(entry, target)
            return target
        except UpstreamDataError:  # a damaged cache entry is fetched again
            target.unlink(missing_ok=True)
    url = manifest().url(path, os.environ.get(BASE_URL_ENV))
    data = _download(url, path, timeout, limit=size_cap(entry), deadline=deadline)
    verify(entry, data, url)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as handle:
        handle.write(data)
    os.replace(handle.name, target)
    return target


def fetch_many(paths: Iterable[str], data_dir: str | os.PathLike[str] | None = None, **kwargs) -> dict[str, Path]:
    return {path: fetch(path, data_dir, **kwargs) for path in paths}


def read_json(path: str, data_dir: str | os.PathLike[str] | None = None):
    return json.loads(verified_text(manifest().entry(path), fetch(path, data_dir, verify_local=False)))


class UpstreamSource:
    """The tool environment's data source (``apibank_tools.data.DataSource``) for the pinned files.

    Files come from ``data_dir``, ``$APIBANK_DATA_DIR`` or the verified download cache, resolved as
    :func:`fetch` does; listings come from the manifest, so a missing file is an error naming it.
    """

    def __init__(self, data_dir: str | os.PathLike[str] | None = None) -> None:
        self.local = resolve_data_dir(data_dir)

    @property
    def key(self) -> str:
        return "local:" + str(self.local.resolve()) if self.local is not None else "pinned:" + manifest().commit

    def read_text(self, path: str) -> str:
        entry = manifest().entry(path)
        return verified_text(entry, fetch(path, self.local, verify_local=False))

    def paths(self, folder: str, suffix: str = "") -> list[str]:
        return manifest().under(folder, suffix)

    def __repr__(self) -> str:
        return f"UpstreamSource({str(self.local) if self.local is not None else 'download'!r})"


def upstream_source(data_dir: str | os.PathLike[str] | None = None) -> UpstreamSource:
    return UpstreamSource(data_dir)
