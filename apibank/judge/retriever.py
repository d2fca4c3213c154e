"""The ToolSearcher model as judges use it: one per process, its keyword selections cached.

Judging runs in forked worker processes (:mod:`apibank.judge.worker`); the parent loads the model and
embeds the catalogues first, and a worker's new selections travel back to the parent's cache.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Sequence

from apibank_tools.retrieval import BACKEND_ENV, default_retriever


class CachedRetriever:
    """A retriever whose selections are cached per (keywords, catalogue); the model loads on first use.

    In a judging worker process, :meth:`record_new` starts noting the selections it adds, and
    :meth:`new_entries` / :meth:`merge` carry them back to the parent's cache.
    """

    def __init__(self, retriever: Any = None) -> None:
        self._retriever = retriever
        self._best: dict[tuple[str, tuple[str, ...]], int | None] = {}
        self._catalogues: dict[tuple[str, ...], tuple[str, ...]] = {}
        self._new: list[tuple[str, tuple[str, ...]]] | None = None
        self._lock = threading.Lock()

    def record_new(self) -> None:
        self._new = []

    def new_entries(self) -> list[tuple[str, tuple[str, ...], int | None]]:
        return [(keywords, documents, self._best[(keywords, documents)]) for keywords, documents in self._new or ()]

    def merge(self, entries: Sequence[tuple[str, tuple[str, ...], int | None]] | None) -> None:
        for keywords, documents, chosen in entries or ():
            documents = self._catalogues.setdefault(documents, documents)
            self._best[(keywords, documents)] = chosen

    def prepare(self, documents: Sequence[str]) -> None:
        """Load the model and embed ``documents`` now (before any sample's clock starts)."""
        inner = self.inner
        if hasattr(inner, "document_embeddings"):
            inner.document_embeddings(list(documents))

    @property
    def inner(self) -> Any:
        if self._retriever is None:
            with self._lock:
                if self._retriever is None:
                    self._retriever = default_retriever()
        return self._retriever

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    def best(self, keywords: str, documents: Sequence[str]) -> int | None:
        catalogue = tuple(documents)
        catalogue = self._catalogues.setdefault(catalogue, catalogue)  # one object per catalogue
        key = (keywords, catalogue)
        try:
            return self._best[key]
        except KeyError:
            pass
        chosen = self.inner.best(keywords, documents)
        self._best[key] = chosen
        if self._new is not None:
            self._new.append(key)
        return chosen

    def scores(self, keywords: str, documents: Sequence[str]) -> list[float]:
        return self.inner.scores(keywords, documents)


_SHARED_RETRIEVERS: dict[str, CachedRetriever] = {}
_SHARED_LOCK = threading.Lock()


def shared_retriever() -> CachedRetriever:
    """The process-wide cached retriever of the default backend (``$APIBANK_RETRIEVER``, else ONNX).

    Keyword selections are cached per process, so repeated scoring runs embed each keyword once.
    """
    spec = os.environ.get(BACKEND_ENV) or "onnx"
    with _SHARED_LOCK:
        if spec not in _SHARED_RETRIEVERS:
            _SHARED_RETRIEVERS[spec] = CachedRetriever()
        return _SHARED_RETRIEVERS[spec]
