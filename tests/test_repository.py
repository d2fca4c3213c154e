"""What the repository holds: source and text, no build artefacts. A tracked binary file or a file over 1 MB
is refused unless it is one of the fixtures listed here and in docs/development.md (a 10.6 MB wheel was
committed once, referred to by nothing)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from support.paths import REPO

MAX_BYTES = 1_000_000
# binary content git inspects for: a NUL byte in the first 8,000 bytes
SNIFFED_BYTES = 8000
# the binary or large files the repository may hold, each with the reason (docs/development.md lists them too)
FIXTURES = {
    "docs/img/leaderboard.png": "the leaderboard viewer's screenshot shown in docs/reports.md and the README",
}

needs_git = pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(),
                               reason="needs git and a git checkout")


def _tracked(repo: Path) -> list[str]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=repo, capture_output=True, check=True, timeout=60).stdout
    return [name for name in listed.decode("utf-8").split("\0") if name]


def unlisted_files(repo: Path, fixtures: dict[str, str]) -> list[str]:
    """The tracked files of ``repo`` that are binary or over :data:`MAX_BYTES` and not in ``fixtures``."""
    found = []
    for name in _tracked(repo):
        path = repo / name
        if name in fixtures or path.is_symlink() or not path.is_file():
            continue
        with path.open("rb") as handle:
            binary = b"\0" in handle.read(SNIFFED_BYTES)
        size = path.stat().st_size
        if binary or size > MAX_BYTES:
            found.append(f"{name} ({'binary, ' if binary else ''}{size:,} bytes)")
    return found


@needs_git
def test_the_repository_holds_no_binary_or_large_file_but_the_listed_fixtures():
    found = unlisted_files(REPO, FIXTURES)
    assert found == [], (f"tracked binary or large files: {found}; remove them (git rm), or list a needed fixture "
                         "in FIXTURES here and in docs/development.md")
    assert all((REPO / name).is_file() for name in FIXTURES), "a listed fixture is gone: drop it from the list"


def test_the_fixtures_are_listed_in_the_developers_guide():
    guide = (REPO / "docs" / "development.md").read_text(encoding="utf-8")
    assert all(f"`{name}`" in guide for name in FIXTURES), [name for name in FIXTURES if f"`{name}`" not in guide]
    assert "over 1 MB" in guide


@needs_git
def test_the_check_refuses_a_wheel_and_a_large_text_file(tmp_path):
    def git(*argv: str) -> None:
        subprocess.run(["git", *argv], cwd=tmp_path, check=True, capture_output=True, timeout=60)

    git("init", "-q")
    (tmp_path / "module.py").write_text("print('ok')\n", encoding="utf-8")
    (tmp_path / "tool-1.0-py3-none-any.whl").write_bytes(b"PK\x03\x04\0\0" + bytes(range(256)))
    (tmp_path / "table.csv").write_text("a,b\n" * 300_000, encoding="utf-8")  # 1.2 MB of text
    (tmp_path / "shot.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    git("add", "-A")
    found = unlisted_files(tmp_path, {"shot.png": "a listed fixture"})
    assert found == ["table.csv (1,200,000 bytes)", "tool-1.0-py3-none-any.whl (binary, 262 bytes)"]
    assert unlisted_files(tmp_path, {}) == ["shot.png (binary, 16 bytes)", *found]
