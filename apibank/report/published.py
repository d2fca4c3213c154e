"""Published API-Bank figures, shown on leaderboards as rows "reported, not run here" (never ranked).

Source: Li et al., "API-Bank: A Benchmark for Tool-Augmented LLMs", arXiv:2304.08244v1 (April 2023),
Table 3 (baselines: API-call accuracy and ROUGE-L of the response after the API call, levels 1 and 2),
as transcribed in the shared specification (``spec/protocol.md``, section 8). Each accuracy agrees with
the level's call count: 218/399 = 54.64%, 55/135 = 40.74%, 2/399 = 0.50%, 2/135 = 1.48%. They were
measured by the original evaluators, so they belong beside the ``paper`` protocol only.

Not included: the EMNLP 2023 version's Table 3 (arXiv v2: Alpaca, ChatGLM, GPT-3, GPT-3.5, GPT-4 and
Lynx over the Call, Retrieve+Call and Plan+Retrieve+Call settings of the enlarged 314-dialogue set).
Its figures could not be checked against any source available where this module was written, and
its settings are not this package's levels one for one, so no number of it is written here.
"""

from __future__ import annotations

from typing import Any

SOURCE = "Li et al., API-Bank, arXiv:2304.08244v1 (2023), Table 3"
STATUS = "reported, not run here"


def _row(model: str, level: str, correct: int, total: int, rouge_l: float) -> dict[str, Any]:
    return {
        "model": model, "protocol": "paper", "level": level, "status": STATUS, "source": SOURCE,
        "cells": {"api": {"value": correct / total, "correct": correct, "total": total},
                  "response": {"value": rouge_l}},
    }


PUBLISHED: tuple[dict[str, Any], ...] = (
    _row("GPT-3.5-turbo", "level-1", 218, 399, 0.4622),
    _row("GPT-3.5-turbo", "level-2", 55, 135, 0.3445),
    _row("text-davinci-003", "level-1", 2, 399, 0.1035),
    _row("text-davinci-003", "level-2", 2, 135, 0.0910),
)
