"""The one reader of the upstream dialogues: the rows, the agentic episodes and the gold replay read them here.

* levels 1 and 2: one JSON Lines file per dialogue under ``lv1-lv2-samples/<folder>/``, one turn a
  line (``role`` "User", "AI" or "API"; an API turn holds ``api_name``, ``param_dict`` and the
  recorded ``result``);
* level 3: ``test-data/level-3.json``, a list of dialogues, each a ``requirement``, the gold ``apis``
  (``api_name``, ``input``, recorded ``output``) and the final ``response``.

Files are read through a *source*: a callable mapping an upstream path (relative to ``api-bank/``)
to a local file. :func:`local_source` resolves through :func:`apibank.data.upstream.fetch` (local
copy or verified cache); the dataset builder passes the files its download manager fetched.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from apibank.data.upstream import UpstreamDataError, fetch, manifest

Source = Callable[[str], Path]

DIALOGUE_FOLDERS = {
    "level-1": "lv1-lv2-samples/level-1-given-desc",
    "level-2": "lv1-lv2-samples/level-2-toolsearcher",
}
LEVEL_3_DIALOGUES = "test-data/level-3.json"


@dataclass(frozen=True)
class Dialogue:
    """One level-1 or level-2 dialogue file: its upstream path and its turns as recorded."""

    path: str
    turns: list[dict[str, Any]]

    @property
    def file(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def stem(self) -> str:
        return self.file[: -len(".jsonl")]


def local_source(data_dir: str | os.PathLike[str] | None = None) -> Source:
    """Resolve upstream paths with :func:`apibank.data.upstream.fetch` (local copy or cache)."""
    return lambda path: fetch(path, data_dir)


def mapping_source(files: Mapping[str, str | os.PathLike[str]]) -> Source:
    """Resolve upstream paths from an explicit {upstream path: local file} mapping."""

    def resolve(path: str) -> Path:
        try:
            return Path(files[path])
        except KeyError:
            raise UpstreamDataError(f"file {path} was not provided") from None

    return resolve


def as_source(source: Source | str | os.PathLike[str] | None) -> Source:
    """A source as given, or the local source of a data folder (None: ``$APIBANK_DATA_DIR`` or the cache)."""
    return source if callable(source) else local_source(source)


def read_json(source: Source, path: str) -> Any:
    return json.loads(source(path).read_text("utf-8"))


def read_turns(source: Source, path: str) -> list[dict[str, Any]]:
    """The turns of one dialogue file; blank lines are skipped (JSON Lines: one record per ``\\n``)."""
    text = source(path).read_text("utf-8")
    return [json.loads(line) for line in text.split("\n") if line.strip()]


def dialogue_paths(level: str) -> list[str]:
    """The upstream paths of a level's dialogue files, in the manifest's (sorted) order."""
    try:
        folder = DIALOGUE_FOLDERS[level]
    except KeyError:
        raise ValueError(f"level {level!r} has no dialogue files; expected one of {', '.join(DIALOGUE_FOLDERS)}") from None
    return manifest().under(folder, ".jsonl")


def iter_dialogues(level: str, source: Source | str | os.PathLike[str] | None = None) -> Iterator[Dialogue]:
    """Every dialogue of level 1 or 2 (an empty upstream file gives a dialogue without turns)."""
    source = as_source(source)
    for path in dialogue_paths(level):
        yield Dialogue(path, read_turns(source, path))


def level3_dialogues(source: Source | str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """The level-3 dialogues in upstream order (a dialogue's index is its sample id)."""
    return read_json(as_source(source), LEVEL_3_DIALOGUES)
