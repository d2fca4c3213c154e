"""apibank: the API-Bank tool-use benchmark (Li et al., EMNLP 2023) for the Hugging Face ecosystem.

The public API is small and stable across internal moves:

* ``iter_rows`` -- the evaluation and training rows of a config (``level-1``, ``level-2``,
  ``level-3``, ``training``), generated from the raw upstream dialogues;
* ``score`` -- API-call accuracy by executing predicted calls against the tool environment
  (``apibank_tools``), under the paper and the corrected protocol, plus ROUGE-L for responses;
* ``read_calls`` -- the tool calls in one raw model output, read in the model family's native syntax
  (chosen from its chat template or the text's own markers), reasoning removed;
* ``audit_status`` -- the shipped audit's status of a test row (``verified`` or why not): the verified
  subset runs report beside the full benchmark.

Subpackages: ``data`` (upstream files and rows), ``judge`` (parsing, judging, scoring, ROUGE-L,
replay), ``generate`` (prompt formats, backends, predictions), ``report`` (score tables, Markdown
report), ``hub`` (dataset repository, leaderboard files, pushes), ``cli`` (the console script);
``pipeline`` ties generation, scoring and output files together for ``apibank evaluate``, ``score``
and ``agent``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from apibank.data.audits import audit_status
    from apibank.data.rows import iter_rows
    from apibank.generate.toolcalls import read_calls
    from apibank.judge.scoring import score

# Imported on first use so that ``import apibank`` stays cheap (no numpy, no tokenizers).
_LAZY = {"iter_rows": "apibank.data.rows", "score": "apibank.judge.scoring", "read_calls": "apibank.generate.toolcalls",
         "audit_status": "apibank.data.audits"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'apibank' has no attribute {name!r}")


__all__ = ["audit_status", "iter_rows", "read_calls", "score", "__version__"]
