"""Packaging and data-access foundations."""

from __future__ import annotations

import functools
import http.server
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from apibank.data import upstream

REPO = Path(__file__).resolve().parents[2]


def test_network_is_cut_except_loopback():
    with pytest.raises(Exception, match="only loopback"):
        socket.create_connection(("198.51.100.7", 80), timeout=1)


def test_nothing_imports_a_top_level_tools_package():
    offenders = []
    for path in REPO.rglob("*.py"):
        if any(part in {".git", "build", ".venv"} for part in path.parts):
            continue
        for line in path.read_text("utf-8").splitlines():
            stripped = line.strip()
            if stripped.startswith(("import tools", "from tools ", "from tools.")):
                offenders.append(f"{path.relative_to(REPO)}: {stripped}")
    assert offenders == []


def test_installed_under_distinct_name():
    import apibank_tools

    assert Path(apibank_tools.__file__).parent == REPO / "tools"
    result = subprocess.run(
        [sys.executable, "-c", "import importlib.util as u; print(u.find_spec('tools'))"],
        capture_output=True, text=True, cwd="/", check=True,
    )
    assert result.stdout.strip() == "None"


def test_manifest_matches_shared_copy(data_dir):
    entries = upstream.manifest().files
    present = [p for p, e in entries.items() if e.sha256]
    assert len(present) == 305
    for path in present:
        upstream.verify(entries[path], (data_dir / path).read_bytes(), path)
    blob_only = [p for p, e in entries.items() if e.sha256 is None]
    assert sorted(blob_only) == sorted(
        f"training-data/lv{lv}-{kind}train.json" for lv in (1, 2) for kind in ("api-", "response-", "")
    )


def test_git_blob_ids_match_the_upstream_tree(data_dir):
    """The level-1/2 training files are pinned only by git blob id; the same hash checks every file here."""
    entries = upstream.manifest().files
    for path, entry in entries.items():
        if entry.sha256:
            assert upstream.git_blob_of((data_dir / path).read_bytes()) == entry.git_blob, path
    blob_only = next(e for e in entries.values() if e.sha256 is None)
    source = (data_dir / "training-data/lv3-api-train.json").read_bytes()
    lookalike = upstream.UpstreamFile(blob_only.path, None, None, upstream.git_blob_of(source))
    upstream.verify(lookalike, source, "a test")
    with pytest.raises(upstream.UpstreamDataError, match=r"git blob .*, expected"):
        upstream.verify(lookalike, source + b" ", "a test")


def test_local_data_dir_missing_file_names_file_and_place(tmp_path):
    with pytest.raises(upstream.UpstreamDataError, match=r"init_database/Account.json.*expected at"):
        upstream.fetch("init_database/Account.json", tmp_path)


def test_data_dir_from_environment(monkeypatch, data_dir):
    monkeypatch.setenv(upstream.DATA_DIR_ENV, str(data_dir))
    assert upstream.fetch("init_database/Bank.json") == data_dir / "init_database/Bank.json"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def http_root(tmp_path, data_dir):
    """A real HTTP server on 127.0.0.1 serving a copy of the upstream folder (which tests may damage)."""
    root = tmp_path / "served"
    root.mkdir()
    for path in ("init_database/Account.json", "init_database/Bank.json", "lv3-samples/Hotel Booking.txt"):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes((data_dir / path).read_bytes())
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_download_verifies_and_caches(http_root, tmp_path, monkeypatch, data_dir):
    root, url = http_root
    monkeypatch.delenv(upstream.DATA_DIR_ENV, raising=False)
    monkeypatch.setenv(upstream.BASE_URL_ENV, url)
    cache = tmp_path / "cache"
    for path in ("init_database/Account.json", "lv3-samples/Hotel Booking.txt"):
        got = upstream.fetch(path, cache_dir=cache)
        assert got == cache / path
        assert got.read_bytes() == (data_dir / path).read_bytes()
    # served from the cache afterwards, even with the server content gone
    (root / "init_database/Account.json").unlink()
    assert upstream.fetch("init_database/Account.json", cache_dir=cache).is_file()


def test_corrupted_download_is_rejected_and_not_cached(http_root, tmp_path, monkeypatch):
    root, url = http_root
    monkeypatch.delenv(upstream.DATA_DIR_ENV, raising=False)
    monkeypatch.setenv(upstream.BASE_URL_ENV, url)
    (root / "init_database/Bank.json").write_bytes(b'{"tampered": true}')
    cache = tmp_path / "cache"
    with pytest.raises(upstream.UpstreamDataError, match="checksum mismatch for init_database/Bank.json"):
        upstream.fetch("init_database/Bank.json", cache_dir=cache)
    assert not (cache / "init_database/Bank.json").exists()
    assert list(cache.rglob("*")) == [] or all(p.is_dir() for p in cache.rglob("*"))


def test_unreachable_download_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv(upstream.DATA_DIR_ENV, raising=False)
    monkeypatch.setenv(upstream.BASE_URL_ENV, "http://127.0.0.1:9")
    with pytest.raises(upstream.UpstreamDataError, match="could not download"):
        upstream.fetch("init_database/Bank.json", cache_dir=tmp_path)
